"""A small OpenAI-compatible completions server around a transformers model (default: SmolLM2-135M).

    python -m gpuparity.serving_server [--model smollm2|PATH|synthetic:<arch>] [--port 8000]

Speaks what the serving benchmark (and vLLM, SGLang, llama.cpp's server) speak:
POST /v1/completions and /v1/chat/completions with "stream": true -> server-sent events
("data: {json}" lines, one chunk per generated token, then "data: [DONE]"), GET /v1/models,
GET /health. Greedy decoding, one generation at a time (a lock): a reference server for tests
and for checking a client, not a fast one. Prints "serving MODEL at URL" once it is ready.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_TOKENS_CAP = 4096


class Engine:
    """Greedy token-by-token generation on the KV cache, serialised by a lock."""

    def __init__(self, name: str, device: str, dtype: str):
        from gpuparity.models import load_causal_lm

        self.name = name
        self.device = device
        self.loaded = load_causal_lm(name, device, dtype)
        self.model, self.tok = self.loaded.model, self.loaded.tokenizer
        self.lock = threading.Lock()
        self.completed = 0  # finished generations, reported by /health (lets scripts watch progress)

    def encode(self, prompt) -> list[int]:
        if isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
            return prompt
        if self.tok is None:
            raise ValueError("this model has no tokenizer: send the prompt as a list of token ids")
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
                nxt = int(out.logits[0, -1].argmax())
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
    engine: Engine  # set on the class by serve()
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

    def _error(self, code: int, msg: str) -> None:
        self._json(code, {"error": {"message": msg, "type": "invalid_request_error", "code": code}})

    def do_GET(self):
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [{"id": self.engine.name, "object": "model"}]})
        elif self.path.rstrip("/") == "/health":
            self._json(200, {"status": "ok", "completed": self.engine.completed})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self):
        chat = self.path.rstrip("/").endswith("/chat/completions")
        if not (chat or self.path.rstrip("/").endswith("/completions")):
            return self._error(404, f"no route {self.path}")
        try:
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            ids = self.engine.chat_ids(req["messages"]) if chat else self.engine.encode(req["prompt"])
            max_tokens = int(req.get("max_tokens") or req.get("max_completion_tokens") or 16)
        except (KeyError, TypeError, ValueError) as exc:
            return self._error(400, f"bad request: {exc}")
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


def usage(prompt: int, completion: int) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def serve(model: str, host: str, port: int, device: str, dtype: str) -> None:
    engine = Engine(model, device, dtype)
    Handler.engine = engine
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    print(f"serving {model} at http://{host}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m gpuparity.serving_server", description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2", help="smollm2 | PATH (.gguf or HF folder) | synthetic:<arch>")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--dtype", default=None, help="fp32 | bf16 | fp16 (default: fp32 on CPU, bf16 on GPU)")
    args = p.parse_args(argv)
    from gpuparity.errors import UserError

    device = args.device
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        serve(args.model, args.host, args.port, device, args.dtype or ("fp32" if device == "cpu" else "bf16"))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
