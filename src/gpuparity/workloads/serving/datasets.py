"""Prompts for a serving point: random tokens, a ShareGPT-format file, or a prefix-sharing set.

- random: each prompt is `input_len` random token ids of the served model's tokenizer (special
  tokens left out), decoded to text and re-encoded until the text is exactly that many tokens
  long; lengths are drawn uniformly from input_len * [1 - range_ratio, 1 + range_ratio] (as
  vLLM's random dataset). Without a tokenizer: random common English words (about one token
  each), named `random_words` in the result key since it is a different workload.
- sharegpt: a JSON list of {"conversations": [{"from": "human", "value": ...}, {"from": "gpt",
  "value": ...}, ...]}; the first human turn is the prompt, the reply's token count is
  max_tokens (unless output_len is set). As vLLM: pairs with a prompt or reply under 4 tokens,
  a prompt over 1024 or prompt + reply over 2048 tokens are left out.
- prefix: `num_prefixes` shared prefixes of `prefix_len` tokens, each prompt one of them plus
  random tokens up to `input_len` (prefix caching shows up as a lower TTFT).

Token counts are those the server would see (`count_prompt`): the completion prompt encoded
with special tokens, or the chat template applied, so client and server figures can be set
side by side.
"""

from __future__ import annotations

import hashlib
import os
import random
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from gpuparity.errors import UserError

WORDS = ("the of and to in is you that it he was for on are as with his they at be this have from or one "
         "had by word but not what all were we when your can said there use an each which she do how their "
         "if will up other about out many then them these so some her would make like him into time has "
         "look two more write go see number no way could people my than first water been call who oil its "
         "now find long down day did get come made may part").split()
SHAREGPT_MAX_BYTES = 4 * 2**30    # the common ShareGPT file is ~670 MB


@dataclass
class Prompt:
    body: str | list          # completion text, or chat messages
    max_tokens: int
    tokens: int | None        # as the server counts them (None: no tokenizer)


class Tokenizer:
    """The served model's tokenizer, counting tokens as the server does."""

    def __init__(self, tok, name: str):
        self.tok, self.name = tok, name
        special = set(tok.all_special_ids or [])
        self.ids = [i for i in range(tok.vocab_size) if i not in special]

    def encode(self, text: str, special: bool = True) -> list[int]:
        return list(self.tok(text, add_special_tokens=special).input_ids)

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(ids, skip_special_tokens=True)

    def count_prompt(self, body) -> int:
        if isinstance(body, list):
            out = self.tok.apply_chat_template(body, add_generation_prompt=True, tokenize=True)
            return len(out if isinstance(out, list) else out["input_ids"])
        return len(self.encode(body))

    def count_output(self, text: str) -> int:
        return len(self.encode(text, special=False))


def load_tokenizer(choice: str | None, served_model: str | None) -> Tokenizer | None:
    """--set tokenizer=PATH|NAME|none, or (auto) the served model's own where one is on this
    machine: a local folder named by /v1/models, `smollm2` (gpuparity's converted copy), or a model
    in the Hugging Face cache. None when there is none."""
    if choice == "none":
        return None
    try:
        from transformers import AutoTokenizer
    except ImportError:
        if choice:
            raise UserError("--set tokenizer= needs transformers: pip install 'gpuparity[llm]'") from None
        return None
    if choice:
        try:
            return Tokenizer(AutoTokenizer.from_pretrained(os.path.expanduser(choice)), choice)
        except (OSError, ValueError) as exc:
            raise UserError(f"--set tokenizer={choice}: cannot load it ({str(exc).splitlines()[0][:200]})") from None
    for where in _auto_candidates(served_model):
        try:
            return Tokenizer(AutoTokenizer.from_pretrained(where, local_files_only=True), served_model)
        except (OSError, ValueError, TypeError):
            continue
    return None


def _auto_candidates(served_model: str | None) -> list[str]:
    if not served_model:
        return []
    from gpuparity.models import gguf
    from gpuparity.models.load import DEFAULT_MODEL

    if served_model == DEFAULT_MODEL:
        try:
            path = gguf.smollm2_gguf()
        except UserError:
            return []
        return [gguf.cached_dir(path)] if gguf.is_prepared(path) else []
    path = os.path.expanduser(served_model)
    if os.path.isdir(path):
        return [path]
    return [served_model] if served_model.count("/") == 1 else []


def dataset_name(requested: str, tokenizer: Tokenizer | None) -> str:
    """Prompts made of words instead of the model's tokens are another workload: another name."""
    return requested if tokenizer is not None else f"{requested}_words"


def _random_tokens(rng: random.Random, tok: Tokenizer, n: int) -> str:
    """Text that encodes to exactly n tokens (without special tokens), from random token ids."""
    ids = [rng.choice(tok.ids) for _ in range(n)]
    for _ in range(8):
        text = tok.decode(ids)
        again = tok.encode(text, special=False)
        if len(again) == n:
            return text
        # re-encoding merged or split tokens: top up or trim, then try again
        ids = (again + [rng.choice(tok.ids) for _ in range(n - len(again))])[:n]
    return tok.decode(ids)


def random_text(rng: random.Random, tok: Tokenizer | None, n: int) -> str:
    if n <= 0:
        return ""
    if tok is None:
        return " ".join(rng.choice(WORDS) for _ in range(n))
    return _random_tokens(rng, tok, n)


def _length(rng: random.Random, base: int, ratio: float) -> int:
    return max(1, rng.randint(int(base * (1 - ratio)), int(base * (1 + ratio))))


def random_prompts(rng: random.Random, tok: Tokenizer | None, n: int, input_len: int, output_len: int,
                   ratio: float) -> list[tuple[str, int]]:
    return [(random_text(rng, tok, _length(rng, input_len, ratio)), _length(rng, output_len, ratio))
            for _ in range(n)]


def prefix_prompts(rng: random.Random, tok: Tokenizer | None, n: int, input_len: int, output_len: int,
                   prefix_len: int, num_prefixes: int) -> list[tuple[str, int]]:
    if prefix_len >= input_len:
        raise UserError(f"--set prefix_len={prefix_len} must be below input_len={input_len}")
    prefixes = [random_text(rng, tok, prefix_len) for _ in range(num_prefixes)]
    sep = "" if tok is not None else " "
    out = [(prefixes[i % num_prefixes] + sep + random_text(rng, tok, input_len - prefix_len), output_len)
           for i in range(n)]
    rng.shuffle(out)
    return out


class _Turn(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    speaker: StrictStr = Field(alias="from", max_length=64)
    value: StrictStr


class _Conversation(BaseModel):
    model_config = ConfigDict(extra="ignore")
    conversations: list[_Turn] = Field(default_factory=list)


class _ShareGPT(BaseModel):
    items: list[_Conversation]


def file_digest(path: str) -> str:
    """sha256 of the file (12 hex digits): the data set's identity in the result key, not its path."""
    from gpuparity.validate import open_regular

    h = hashlib.sha256()
    try:
        with open_regular(path, "ShareGPT file") as fh:        # a FIFO or device: refused, never read
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    return h.hexdigest()[:12]


def load_sharegpt(path: str) -> list[tuple[str, str]]:
    """(prompt, reply) pairs: the first human turn and the turn after it."""
    from gpuparity.validate import load_json, parse

    data = parse(_ShareGPT, {"items": load_json(path, SHAREGPT_MAX_BYTES, "ShareGPT file")}, path)
    pairs = []
    for conv in data.items:
        turns = conv.conversations
        if len(turns) >= 2 and turns[0].speaker in ("human", "user"):
            pairs.append((turns[0].value, turns[1].value))
    if not pairs:
        raise UserError(f"{path}: no conversation starts with a human turn followed by a reply")
    return pairs


def sharegpt_prompts(rng: random.Random, tok: Tokenizer | None, pairs: list[tuple[str, str]], n: int,
                     output_len: int | None) -> list[tuple[str, int]]:
    order = list(range(len(pairs)))
    rng.shuffle(order)
    out = []
    for i in order:
        prompt, reply = pairs[i]
        if tok is not None:
            p_len, r_len = len(tok.encode(prompt)), len(tok.encode(reply, special=False))
            if p_len < 4 or (output_len is None and r_len < 4):
                continue
            if p_len > 1024 or (output_len is None and p_len + r_len > 2048):
                continue
        else:
            r_len = len(reply.split())
        out.append((prompt, output_len or max(1, r_len)))
        if len(out) == n:
            return out
    raise UserError(f"the ShareGPT file has only {len(out)} usable conversations; num_prompts={n} asks for more")


def as_prompts(pairs: list[tuple[str, int]], chat: bool, tok: Tokenizer | None) -> list[Prompt]:
    out = []
    for text, max_tokens in pairs:
        body = [{"role": "user", "content": text}] if chat else text
        out.append(Prompt(body, max_tokens, tok.count_prompt(body) if tok is not None else None))
    return out
