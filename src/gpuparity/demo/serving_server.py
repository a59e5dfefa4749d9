"""A small OpenAI-compatible completions server around a transformers model (default: SmolLM2-135M),
with fault injection for testing clients.

    python -m gpuparity.demo.serving_server [--model smollm2|PATH|synthetic:<arch>|none] [--port 8000]
        [--dtype fp32|bf16|fp16] [--faults] [--wrong-answers]

Speaks what the serving benchmark (and vLLM, SGLang, llama.cpp's server) speak:
POST /v1/completions and /v1/chat/completions with "stream": true -> server-sent events
("data: {json}" lines, one chunk per generated token, then "data: [DONE]"), GET /v1/models,
GET /health. Greedy decoding, one generation at a time (a lock): a reference server for tests
and for checking a client, not a fast one. Prints "serving MODEL at URL" once it is ready. A
synthetic model has no vocabulary: a text prompt's bytes are its tokens (nothing to download;
bench/device_check.sh serves one on the GPU).

It says who it is the way vLLM does: GET /version ({"version": ...}), GET /metrics (Prometheus
text with info gauges: gpuparity_demo:model_config_info carries the model, its dtype, the
quantisation and the parallel sizes; gpuparity_demo:cache_config_info the KV-cache dtype), and
root / max_model_len in /v1/models. --wrong-answers decodes the runner-up token at every step
(a broken kernel's symptom: the same speed, wrong text), which nothing in its identity shows.

With --faults, every route is also served under /fault/<mode>/ (so a client pointed at
http://HOST:PORT/fault/<mode>/v1 meets that misbehaviour): see FAULTS; LIES are well-formed
streams whose usage figures lie; HONEST are well-formed, truthful streams a client must accept
(degenerate: one token per chunk of text that re-encodes to fewer tokens, as a small model's
repeated syllables do). Fault responses need no
model (--model none starts at once) and each ends by itself after FAULT_LIMIT_S.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_TOKENS_CAP = 4096
FAULT_LIMIT_S = 60.0      # a fault response ends by itself after this long


class Engine:
    """Greedy token-by-token generation on the KV cache, serialised by a lock."""

    def __init__(self, name: str, device: str, dtype: str, wrong: bool = False):
        from gpuparity.models import load_causal_lm

        self.name = name
        self.device = device
        self.dtype = dtype
        self.wrong = wrong      # --wrong-answers: the runner-up token at every step
        self.loaded = load_causal_lm(name, device, dtype)
        self.model, self.tok = self.loaded.model, self.loaded.tokenizer
        self.lock = threading.Lock()
        self.completed = 0  # finished generations, reported by /health (lets scripts watch progress)

    def pick(self, logits) -> int:
        """Greedy: the most likely token (the runner-up with --wrong-answers)."""
        return int(logits.topk(2).indices[1]) if self.wrong else int(logits.argmax())

    def encode(self, prompt) -> list[int]:
        if isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
            return prompt
        if self.tok is None:       # a synthetic model has no vocabulary: the text's bytes are its tokens
            vocab = int(getattr(self.model.config, "vocab_size", 256) or 256)
            return [b % vocab for b in str(prompt).encode()] or [0]
        return self.tok(str(prompt)).input_ids

    def chat_ids(self, messages: list[dict]) -> list[int]:
        if self.tok is not None and getattr(self.tok, "chat_template", None):
            return self.encode(self.tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))
        return self.encode("\n".join(str(m.get("content", "")) for m in messages))

    def generate(self, ids: list[int], max_tokens: int, ignore_eos: bool):
        """Yields (token id, new text) per generated token."""
        import torch

        from gpuparity.workloads.llm import cache_keyword

        eos = getattr(self.model.config, "eos_token_id", None)
        eos = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        key = cache_keyword(self.model)
        with self.lock, torch.inference_mode():
            x = torch.tensor([ids], device=self.device)
            out = self.model(input_ids=x, use_cache=True)
            generated: list[int] = []
            text = ""
            for i in range(max_tokens):
                nxt = self.pick(out.logits[0, -1])
                generated.append(nxt)
                new_text = self.tok.decode(generated, skip_special_tokens=True) if self.tok else f" {nxt}"
                delta, text = (new_text[len(text):], new_text) if self.tok else (new_text, text + new_text)
                yield nxt, delta
                if i == max_tokens - 1 or (nxt in eos and not ignore_eos):
                    break
                out = self.model(input_ids=torch.tensor([[nxt]], device=self.device), use_cache=True,
                                 **{key: getattr(out, key)})
            self.completed += 1


class Handler(BaseHTTPRequestHandler):
    engine: Engine | None  # set on the class by serve(); None with --model none
    faults = False         # --faults: serve /fault/<mode>/...
    protocol_version = "HTTP/1.0"  # the response ends when the connection closes: simplest streaming

    def log_message(self, fmt, *args):  # quiet: one line per request is noise in a benchmark
        pass

    def _json(self, code: int, obj: dict) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _text(self, code: int, text: str) -> None:
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, code: int, msg: str) -> None:
        self._json(code, {"error": {"message": msg, "type": "invalid_request_error", "code": code}})

    def _fault_path(self) -> str | None:
        """The fault mode of a /fault/<mode>/... path (and strip it from self.path), else None."""
        if not (self.faults and self.path.startswith("/fault/")):
            return None
        mode, _, rest = self.path[len("/fault/"):].partition("/")
        self.path = "/" + rest
        return mode

    def do_GET(self):
        mode = self._fault_path()
        if mode == "slow_models" and self.path.rstrip("/").endswith("/models"):
            return Fault(self, {}).trickle_bytes(b'{"object": "list", "data": [{"id": "fault"}]}' * 10**6)
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            name = self.engine.name if self.engine else "fault"
            card = {"id": name, "object": "model", "owned_by": "gpuparity"}
            if self.engine is not None:
                card.update(root=self.engine.loaded.info.get("path") or name,
                            max_model_len=getattr(self.engine.model.config, "max_position_embeddings", None))
            self._json(200, {"object": "list", "data": [card]})
        elif self.path.rstrip("/") == "/version":
            from gpuparity.version import __version__

            self._json(200, {"version": __version__})
        elif self.path.rstrip("/") == "/metrics":
            self._text(200, metrics_text(self.engine))
        elif self.path.rstrip("/") == "/health":
            self._json(200, {"status": "ok", "completed": self.engine.completed if self.engine else 0,
                             "pid": os.getpid()})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self):
        mode = self._fault_path()
        chat = self.path.rstrip("/").endswith("/chat/completions")
        if not (chat or self.path.rstrip("/").endswith("/completions")):
            return self._error(404, f"no route {self.path}")
        try:
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if mode is not None:
                return Fault(self, req).run(mode)
            if self.engine is None:
                return self._error(503, "no model loaded (started with --model none)")
            ids = self.engine.chat_ids(req["messages"]) if chat else self.engine.encode(req["prompt"])
            max_tokens = int(req.get("max_tokens") or req.get("max_completion_tokens") or 16)
        except (KeyError, TypeError, ValueError) as exc:
            return self._error(400, f"bad request: {exc}")
        except (BrokenPipeError, ConnectionResetError):
            return None  # a fault's client gave up, as it should
        if not ids or not 1 <= max_tokens <= MAX_TOKENS_CAP:
            return self._error(400, f"need a non-empty prompt and 1 <= max_tokens <= {MAX_TOKENS_CAP}")
        tokens = self.engine.generate(ids, max_tokens, bool(req.get("ignore_eos")))
        rid = f"cmpl-{uuid.uuid4().hex[:12]}"
        if req.get("stream"):
            return self._stream(rid, chat, tokens, len(ids), max_tokens, req)
        try:
            pieces = [delta for _, delta in tokens]
        except Exception as exc:  # noqa: BLE001 - a failed generation is the client's 500, not a dead server
            return self._json(500, {"error": {"message": f"{type(exc).__name__}: {exc}", "code": 500}})
        text = "".join(pieces)
        choice = ({"index": 0, "message": {"role": "assistant", "content": text}} if chat
                  else {"index": 0, "text": text})
        choice["finish_reason"] = "length" if len(pieces) == max_tokens else "stop"
        self._json(200, {"id": rid, "object": "chat.completion" if chat else "text_completion",
                         "created": int(time.time()), "model": self.engine.name, "choices": [choice],
                         "usage": usage(len(ids), len(pieces))})

    def _stream(self, rid: str, chat: bool, tokens, n_prompt: int, max_tokens: int, req: dict) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        kind = "chat.completion.chunk" if chat else "text_completion"

        def send(obj) -> None:
            self.wfile.write(f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n".encode())
            self.wfile.flush()

        n = 0
        try:
            for _, delta in tokens:
                n += 1
                choice = {"index": 0, "delta": {"content": delta}} if chat else {"index": 0, "text": delta}
                choice["finish_reason"] = None
                send({"id": rid, "object": kind, "model": self.engine.name, "choices": [choice]})
            last = {"index": 0, "finish_reason": "length" if n == max_tokens else "stop"}
            last.update({"delta": {}} if chat else {"text": ""})
            send({"id": rid, "object": kind, "model": self.engine.name, "choices": [last]})
            if (req.get("stream_options") or {}).get("include_usage"):
                send({"id": rid, "object": kind, "model": self.engine.name, "choices": [],
                      "usage": usage(n_prompt, n)})
            send("[DONE]")
        except (BrokenPipeError, ConnectionResetError):
            tokens.close()  # the client went away: stop generating, free the lock
        except Exception as exc:  # noqa: BLE001 - report a failed generation in the stream, keep serving
            tokens.close()
            try:
                send({"error": {"message": f"{type(exc).__name__}: {exc}", "code": 500}})
            except OSError:
                pass


def _chunk(text: str = "tok ", finish: str | None = None, **extra) -> bytes:
    obj = {"id": "cmpl-fault", "object": "text_completion", "model": "fault",
           "choices": [{"index": 0, "text": text, "finish_reason": finish}], **extra}
    return f"data: {json.dumps(obj)}\n\n".encode()


# Malformed chunks: each mode sends two good chunks, then this line (a shape a client must survive).
MALFORMED = {
    "bad_choices": b'data: {"choices": 5}\n\n',
    "bad_choice": b'data: {"choices": ["x"]}\n\n',
    "bad_delta": b'data: {"choices": [{"delta": [1, 2]}]}\n\n',
    "bad_text": b'data: {"choices": [{"text": 7}]}\n\n',
    "bad_usage": b'data: {"choices": [], "usage": "lots"}\n\n',
    "bad_finish": b'data: {"choices": [{"text": "a", "finish_reason": {"x": 1}}]}\n\n',
    "not_json": b"data: {oops\n\n",
    "json_array": b"data: [1, 2]\n\n",
    "json_null": b"data: null\n\n",
    "nan": b'data: {"choices": [{"text": "a"}], "usage": {"completion_tokens": NaN}}\n\n',
    "deep": b"data: " + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"\n\n",
    "bad_utf8": b"data: \xff\xfe\n\n",
    "error_event": b'data: {"error": {"message": "boom\\u0000\\u001b[2J\\ud800"}}\n\n',
    "usage_absurd": _chunk("", "length", usage={"prompt_tokens": 3, "completion_tokens": 10**13}),
    "usage_negative": _chunk("", "length", usage={"prompt_tokens": 3, "completion_tokens": -590}),
    "usage_too_many": _chunk("", "length", usage={"prompt_tokens": 3, "completion_tokens": 9999}),
    "usage_bool": _chunk("", "length", usage={"prompt_tokens": True, "completion_tokens": 2}),
}
# Well-formed streams whose usage lies: (pieces streamed, usage sent) for a request of max_tokens n.
LIES = {
    "lie_completion": lambda n: (1, {"completion_tokens": n}),                    # one piece, n claimed
    "lie_prompt": lambda n: (n, {"prompt_tokens": 10**8, "completion_tokens": n}),  # a huge prompt
    "lie_zero": lambda n: (n, {"prompt_tokens": 0, "completion_tokens": 0}),        # nothing counted
}
# Truthful streams that re-tokenizing gets wrong: one token per chunk, each piece a single SmolLM2 /
# GPT-2-style token, whose text re-encodes to 4 tokens per 5 (" wa" + "ter" is one token " water").
DEGENERATE = (" the", " wa", "ter", " of", " and")
TOKEN_GAP_S = 0.002         # between the degenerate stream's chunks (a decoding server's pace)
HONEST = ("degenerate",)
PARTIAL = ("lie_some",)     # every second request lies as lie_completion does, the others are honest
FAULTS = ("trickle", "slow_headers", "slow_models", "stall", "endless", "long_line", "gzip_bomb",
          "gzip_bomb_error", "nul_error", "refuse_ignore_eos", "no_finish", *MALFORMED, *LIES, *HONEST, *PARTIAL)


class Fault:
    """One misbehaving response (see FAULTS); every loop ends after FAULT_LIMIT_S."""

    served = 0                  # lie_some's requests so far (one server process, a lock for its threads)
    lock = threading.Lock()

    def __init__(self, handler: BaseHTTPRequestHandler, req: dict):
        self.h, self.req = handler, req
        self.end = time.monotonic() + FAULT_LIMIT_S

    def write(self, data: bytes) -> None:
        self.h.wfile.write(data)
        self.h.wfile.flush()

    def headers(self, code: int = 200, **extra) -> None:
        self.h.send_response(code)
        self.h.send_header("Content-Type", "text/event-stream" if code == 200 else "application/json")
        for k, v in extra.items():
            self.h.send_header(k.replace("_", "-"), v)
        self.h.end_headers()

    def trickle_bytes(self, data: bytes, gap: float = 0.05, head: bool = True) -> None:
        if head:
            self.headers(200)
        for i in range(len(data)):
            if time.monotonic() > self.end:
                return
            self.write(data[i:i + 1])
            time.sleep(gap)

    def run(self, mode: str) -> None:
        if mode not in FAULTS:
            return self.h._error(404, f"unknown fault '{mode}'; known: {', '.join(FAULTS)}")
        if mode == "trickle":
            return self.trickle_bytes(_chunk() * 10**5)
        if mode == "slow_headers":
            return self.trickle_bytes(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n" + b"X: y\r\n" * 10**5,
                                      gap=0.2, head=False)
        if mode == "refuse_ignore_eos" and "ignore_eos" in self.req:
            return self.h._json(422, {"detail": "Unexpected fields in the request: {'ignore_eos'}"})
        if mode == "nul_error":
            return self.h._json(500, {"error": {"message": "broke\u0000 here \u001b[31mred\u001b[0m \ud800"}})
        if mode == "gzip_bomb_error":
            return self.gzip_bomb(500)
        if mode == "gzip_bomb":
            return self.gzip_bomb(200)
        self.headers(200)
        if mode == "stall":
            self.write(_chunk() * 2)
            while time.monotonic() < self.end:
                time.sleep(0.1)
        elif mode == "endless":
            block = _chunk() * 256
            while time.monotonic() < self.end:
                self.write(block)
        elif mode == "long_line":
            self.write(b"data: ")
            block = b"x" * 65536
            while time.monotonic() < self.end:
                self.write(block)
        elif mode == "no_finish":
            self.write(_chunk() * 2)
        elif mode in LIES:
            pieces, claimed = LIES[mode](int(self.req.get("max_tokens") or 4))
            self.write(_chunk() * (pieces - 1) + _chunk("tok ", "length") + _chunk("", None, usage=claimed)
                       + b"data: [DONE]\n\n")
        elif mode == "lie_some":
            with Fault.lock:
                Fault.served += 1
                lie = Fault.served % 2 == 0
            n = int(self.req.get("max_tokens") or 4)
            pieces = 1 if lie else n
            self.write(_chunk() * (pieces - 1) + _chunk("tok ", "length")
                       + _chunk("", None, usage={"completion_tokens": n}) + b"data: [DONE]\n\n")
        elif mode == "degenerate":
            n = int(self.req.get("max_tokens") or 4)
            for i in range(n):
                time.sleep(TOKEN_GAP_S)
                self.write(_chunk(DEGENERATE[i % len(DEGENERATE)], "length" if i == n - 1 else None))
            self.write(_chunk("", None, usage={"completion_tokens": n}) + b"data: [DONE]\n\n")
        elif mode in MALFORMED:
            self.write(_chunk() * 2 + MALFORMED[mode] + _chunk("", "length") + b"data: [DONE]\n\n")
        else:  # refuse_ignore_eos without ignore_eos: a well-behaved short stream
            n = int(self.req.get("max_tokens") or 4)
            self.write(_chunk() * (n - 1) + _chunk("tok ", "length", usage={"prompt_tokens": 3, "completion_tokens": n})
                       + b"data: [DONE]\n\n")

    def gzip_bomb(self, code: int) -> None:
        """A small compressed body that expands without end (1 MiB of zeros at a time)."""
        self.h.send_response(code)
        self.h.send_header("Content-Type", "text/event-stream" if code == 200 else "application/json")
        self.h.send_header("Content-Encoding", "gzip")
        self.h.end_headers()
        z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        zeros = b"0" * (1 << 20)
        while time.monotonic() < self.end:
            out = z.compress(zeros)
            if out:
                self.write(out)
            self.write(z.flush(zlib.Z_SYNC_FLUSH))


TORCH_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp8": "float8_e4m3fn"}


def metrics_text(engine: Engine | None) -> str:
    """The Prometheus page: info gauges with the configuration in labels (as vLLM's
    vllm:cache_config_info), and the finished generations."""
    def label(value) -> str:
        return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    def gauge(name: str, about: str, labels: dict) -> list[str]:
        body = ",".join(f'{k}="{label(v)}"' for k, v in labels.items())
        return [f"# HELP {name} {about}", f"# TYPE {name} gauge", f"{name}{{{body}}} 1.0"]

    lines = []
    if engine is not None:
        dtype = TORCH_NAMES.get(engine.dtype, engine.dtype)
        lines += gauge("gpuparity_demo:model_config_info", "The model and how it is served.",
                       {"model_name": engine.name, "model": engine.loaded.info.get("path") or engine.name,
                        "dtype": dtype, "quantization": "none", "device": engine.device,
                        "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "data_parallel_size": 1})
        lines += gauge("gpuparity_demo:cache_config_info", "The KV cache.", {"cache_dtype": dtype})
    lines += ["# HELP gpuparity_demo:generations_total Generations finished.",
              "# TYPE gpuparity_demo:generations_total counter",
              f"gpuparity_demo:generations_total {engine.completed if engine else 0}"]
    return "\n".join(lines) + "\n"


def usage(prompt: int, completion: int) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def serve(model: str, host: str, port: int, device: str, dtype: str, faults: bool = False,
          wrong: bool = False) -> None:
    Handler.engine = None if model == "none" else Engine(model, device, dtype, wrong)
    Handler.faults = faults
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    import signal

    def stop(signum, frame):       # SIGTERM (gpuparity's --serve-cmd stop, kill): close cleanly, exit 0
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(f"serving {model} at http://{host}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m gpuparity.demo.serving_server", description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2",
                   help="smollm2 | PATH (.gguf or HF folder) | synthetic:<arch> | none (fault routes only)")
    p.add_argument("--faults", action="store_true", help="also serve /fault/<mode>/... (misbehaviour for tests)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--dtype", default=None, choices=("fp32", "bf16", "fp16"),
                   help="fp32 | bf16 | fp16 (default: fp32 on CPU, bf16 on GPU)")
    p.add_argument("--wrong-answers", action="store_true",
                   help="decode the runner-up token at every step: wrong text at the same speed (for tests)")
    args = p.parse_args(argv)
    from gpuparity.errors import UserError

    device = args.device
    if device is None and args.model == "none":
        device = "cpu"
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        serve(args.model, args.host, args.port, device, args.dtype or ("fp32" if device == "cpu" else "bf16"),
              args.faults, args.wrong_answers)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
