"""Accuracy beside speed: a small eval the project makes itself, asked of the server in the same run
as its speed (once per server), so a faster server that answers wrongly (a broken kernel, a wrong
template) cannot win unnoticed.

Problems have known answers and come from a seed (EVAL, EVAL_VERSION, seed and count fix them, on
every machine): few-shot prompts for single-digit addition, copying words, upper-casing a word,
naming the first word of a list, reversing a list of words, counting words. Greedy decoding
(temperature 0), a few tokens each; the answer is the first line of the text, stripped, and must
equal the known one. A small model scores low on some tasks (SmolLM2-135M: ~0 on reversing and
counting): the score is not a bar but a figure to hold two servers of one model to each other
(comparison/server_checks.py: Fisher's exact test). Requests go to the sweep's endpoint, without
streaming; responses are validated (pydantic, extra fields ignored); the first problem is asked
alone, and if it fails the eval stops there with the reason (a server that cannot answer one
question is not asked 16).

info.accuracy: {"eval", "version", "seed", "problems", "answered", "correct", "score", "errors",
"by_task": {task: [correct, asked]}, "answers": [[problem id, correct, first line]], "error"}.
"""

from __future__ import annotations

import asyncio
import functools
import random
from dataclasses import dataclass

EVAL = "gpuparity-basic"
EVAL_VERSION = 1
DEFAULT_PROBLEMS = 16
MAX_PROBLEMS = 2000
PARALLEL = 4
WORDS = ("cat", "dog", "sun", "tree", "book", "fish", "bird", "milk", "rain", "star", "cup", "hat", "car", "pen",
         "box", "red", "blue", "door", "road", "lamp")
TASKS = ("add", "copy", "upper", "first", "reverse", "count")


@dataclass(frozen=True)
class Problem:
    id: str
    task: str
    prompt: str
    answer: str
    max_tokens: int


def _words(rng: random.Random, n: int) -> list[str]:
    return rng.sample(WORDS, n)


def make(task: str, rng: random.Random) -> tuple[str, str, int]:
    """(prompt, answer, max_tokens) of one problem of a task: three or four worked examples, then the question."""
    if task == "add":
        pairs = [(rng.randint(1, 9), rng.randint(1, 9)) for _ in range(5)]
        return "".join(f"{a} + {b} = {a + b}\n" for a, b in pairs[:4]) + f"{pairs[4][0]} + {pairs[4][1]} =", \
            str(sum(pairs[4])), 4
    if task == "copy":
        lists = [" ".join(_words(rng, 3)) for _ in range(4)]
        return "".join(f"Input: {w}\nOutput: {w}\n" for w in lists[:3]) + f"Input: {lists[3]}\nOutput:", lists[3], 10
    if task == "upper":
        words = [rng.choice(WORDS) for _ in range(4)]
        return "".join(f"{w} -> {w.upper()}\n" for w in words[:3]) + f"{words[3]} ->", words[3].upper(), 5
    if task == "first":
        lists = [_words(rng, 3) for _ in range(4)]
        return "".join(f"List: {' '.join(w)}\nFirst: {w[0]}\n" for w in lists[:3]) + \
            f"List: {' '.join(lists[3])}\nFirst:", lists[3][0], 4
    if task == "reverse":
        lists = [_words(rng, 3) for _ in range(4)]
        return "".join(f"Words: {' '.join(w)}\nReversed: {' '.join(w[::-1])}\n" for w in lists[:3]) + \
            f"Words: {' '.join(lists[3])}\nReversed:", " ".join(lists[3][::-1]), 10
    if task == "count":
        lists = [_words(rng, rng.randint(1, 5)) for _ in range(5)]
        return "".join(f"Words: {' '.join(w)}\nCount: {len(w)}\n" for w in lists[:4]) + \
            f"Words: {' '.join(lists[4])}\nCount:", str(len(lists[4])), 4
    raise ValueError(f"unknown task {task}")


def problems(n: int, seed: int = 0) -> list[Problem]:
    """n problems, the tasks in turn, each drawn from its own seeded generator (the same on every machine)."""
    out = []
    for i in range(n):
        task = TASKS[i % len(TASKS)]
        prompt, answer, most = make(task, random.Random(f"{EVAL}:{EVAL_VERSION}:{seed}:{i}"))
        out.append(Problem(f"{task}-{i}", task, prompt, answer, most))
    return out


def first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0].strip()


@functools.lru_cache(maxsize=1)
def _completion_model():
    """The pydantic model of a non-streamed (chat) completion (pydantic imported on first use)."""
    from pydantic import BaseModel, ConfigDict, Field, StrictStr

    class Loose(BaseModel):
        model_config = ConfigDict(extra="ignore")

    class Message(Loose):
        content: StrictStr | None = Field(None, max_length=100_000)

    class Choice(Loose):
        text: StrictStr | None = Field(None, max_length=100_000)
        message: Message | None = None

    class Completion(Loose):
        choices: list[Choice] = Field(min_length=1, max_length=64)

    return Completion


def answer_text(body: bytes) -> str:
    """The generated text of a non-streamed completion or chat completion, or ProtocolError."""
    from gpuparity.errors import UserError
    from gpuparity.validate import parse, parse_json
    from gpuparity.workloads.serving.wire import ProtocolError, one_line

    try:
        done = parse(_completion_model(), parse_json(body, "completion"), "completion")
    except UserError as exc:
        raise ProtocolError(one_line(exc, 200)) from None
    choice = done.choices[0]
    return choice.text if choice.text is not None else (choice.message.content if choice.message else "") or ""


async def ask_one(client, url: str, model: str, chat: bool, p: Problem) -> str:
    from gpuparity.workloads.serving.wire import ProtocolError, read_body

    body = {"model": model, "max_tokens": p.max_tokens, "temperature": 0, "stream": False}
    body.update({"messages": [{"role": "user", "content": p.prompt}]} if chat else {"prompt": p.prompt})
    async with client.stream("POST", url, json=body, headers={"Accept-Encoding": "identity"}) as resp:
        data = await read_body(resp, 1 << 20)
        if resp.status_code != 200:     # the client's words for an error body (its message, made storable)
            from gpuparity.workloads.serving.client import http_error

            raise ProtocolError(http_error(resp.status_code, data.decode("utf-8", "replace"), False))
    return answer_text(data)


async def run_eval(base_url: str, model: str, chat: bool, n: int, seed: int, timeout_s: float,
                   headers: dict) -> dict:
    """Every problem asked of the server (the first alone), scored; never raises for what the server does."""
    import httpx

    from gpuparity.workloads.serving.wire import ProtocolError, one_line

    probs = problems(n, seed)
    url = f"{base_url.rstrip('/')}/{'chat/completions' if chat else 'completions'}"
    out = {"eval": EVAL, "version": EVAL_VERSION, "seed": seed, "problems": n, "endpoint": "chat" if chat else
           "completions", "answered": 0, "correct": 0, "errors": 0, "error": None, "by_task": {}, "answers": []}
    answers: dict[int, tuple[bool, str]] = {}
    errors: list[str] = []
    sem = asyncio.Semaphore(PARALLEL)

    async def one(i: int, client) -> None:
        async with sem:
            try:
                text = first_line(await asyncio.wait_for(ask_one(client, url, model, chat, probs[i]), timeout_s))
                answers[i] = (text == probs[i].answer, one_line(text, 80))
            except asyncio.TimeoutError:
                errors.append(f"{probs[i].id}: no answer within {timeout_s:g} s")
            except (ProtocolError, httpx.HTTPError, OSError) as exc:
                errors.append(f"{probs[i].id}: {one_line(exc, 160)}")

    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), headers=headers) as client:
        await one(0, client)
        if errors:
            out.update(errors=1, error=f"the eval stopped at its first problem: {errors[0]}")
            return out
        await asyncio.gather(*(one(i, client) for i in range(1, n)))
    for i, p in enumerate(probs):
        ok = answers.get(i, (None, None))[0]
        tally = out["by_task"].setdefault(p.task, [0, 0])
        if ok is not None:
            tally[0] += int(ok)
            tally[1] += 1
            out["answers"].append([p.id, ok, answers[i][1]])
    out["answered"] = len(answers)
    out["correct"] = sum(1 for ok, _ in answers.values() if ok)
    out["errors"] = len(errors)
    out["score"] = out["correct"] / out["answered"] if out["answered"] else None
    if errors:
        out["error"] = f"{len(errors)} problem(s) unanswered; first: {errors[0]}"
    return out


def accuracy_text(acc: dict | None) -> str:
    """'9/16 correct (56%; add 2/3, copy 3/3, ...)' or why there is no score."""
    if not acc:
        return "no accuracy eval (--set accuracy=N asks N problems; a run from before it existed has none)"
    if not acc.get("answered"):
        return f"accuracy not measured: {acc.get('error') or 'no answer'}"
    tasks = ", ".join(f"{t} {c}/{n}" for t, (c, n) in acc.get("by_task", {}).items())
    more = f"; {acc['errors']} unanswered" if acc.get("errors") else ""
    return (f"{acc['correct']}/{acc['answered']} correct ({100 * acc['score']:.0f}%; {tasks}{more}) on "
            f"{acc['eval']} v{acc['version']} seed {acc['seed']}, greedy")
