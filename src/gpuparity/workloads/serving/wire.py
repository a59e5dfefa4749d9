"""What an OpenAI-compatible server sends the serving benchmark, validated before it is used.

Everything read from a server goes through here: the response body is decompressed with a cap
on its size (`BodyDecoder`: a gzip bomb stops at the cap), server-sent-event `data:` payloads are
cut out of it with a cap on the line length (`EventStream`), and each payload is parsed
(validate.parse_json: no NaN/Infinity, bounded nesting) and checked against pydantic models
(validate.parse): types, ranges, sizes. Any problem is a `ProtocolError` with one line of text,
which the client counts as that request's error: a malformed chunk never fails a whole point.
Text taken from a server (error bodies, model names) is made storable by `one_line` (no NUL or
other control characters, no lone surrogates, bounded length).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from gpuparity.errors import UserError
from gpuparity.validate import parse, parse_json, terminal_safe

MAX_TOKEN_FIELD = 10**9          # no single request has more tokens than this
MAX_LINE = 1 << 20               # one SSE line (a chunk) over 1 MiB is not a token stream
MAX_CHOICES = 64


class ProtocolError(ValueError):
    """A server response the benchmark cannot use; the message is one storable line."""


def one_line(text: Any, limit: int = 300) -> str:
    """Server text fit to store and print: lone surrogates replaced, control characters
    (NUL, ESC, newlines) written as escapes, at most `limit` characters."""
    s = str(text).encode("utf-8", "replace").decode("utf-8")
    s = terminal_safe(s)
    return s if len(s) <= limit else s[:limit] + "..."


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Usage(_Loose):
    prompt_tokens: StrictInt | None = Field(None, ge=0, le=MAX_TOKEN_FIELD)
    completion_tokens: StrictInt | None = Field(None, ge=0, le=MAX_TOKEN_FIELD)


class Delta(_Loose):
    content: StrictStr | None = None
    reasoning_content: StrictStr | None = None   # reasoning models stream their thinking here


class Choice(_Loose):
    text: StrictStr | None = None                # /v1/completions
    delta: Delta | None = None                   # /v1/chat/completions
    finish_reason: StrictStr | None = Field(None, max_length=64)


class Chunk(_Loose):
    choices: list[Choice] | None = Field(None, max_length=MAX_CHOICES)
    usage: Usage | None = None
    error: Any = None


class ModelCard(_Loose):
    id: StrictStr = Field(min_length=1, max_length=1000)
    owned_by: StrictStr | None = Field(None, max_length=1000)
    root: StrictStr | None = Field(None, max_length=1000)          # vLLM: the model path it loaded
    max_model_len: StrictInt | None = Field(None, ge=1, le=10**9)   # vLLM: the context it serves


class ModelList(_Loose):
    data: list[ModelCard] = Field(min_length=1, max_length=10_000)


@dataclass
class Event:
    """One streamed chunk, reduced to what the benchmark measures."""

    text: str = ""                 # generated text in this chunk (all choices)
    choices: int = 0               # choices in the chunk (a chunk with choices but no text may carry a
    #                                token that decodes to nothing: an end-of-sequence, half a character)
    finished: bool = False         # a choice carried finish_reason
    usage: Usage | None = None
    error: str | None = None       # the server reported an error in the stream


def _validated(model, data: str, what: str):
    try:
        return parse(model, parse_json(data, what), what)
    except UserError as exc:
        raise ProtocolError(one_line(exc)) from None


def parse_chunk(data: str) -> Event:
    """A `data:` payload (not '[DONE]') -> Event, or ProtocolError."""
    if not data.lstrip().startswith("{"):
        raise ProtocolError(f"chunk is not a JSON object: {one_line(data, 80)}")
    chunk = _validated(Chunk, data, "chunk")
    if chunk.error is not None:
        err = chunk.error
        message = err.get("message", err) if isinstance(err, dict) else err
        return Event(error=f"server error in stream: {one_line(message, 200)}")
    ev = Event(usage=chunk.usage, choices=len(chunk.choices or []))
    pieces = []
    for choice in chunk.choices or []:
        if choice.text:
            pieces.append(choice.text)
        elif choice.delta is not None:
            pieces.append(choice.delta.content or choice.delta.reasoning_content or "")
        ev.finished = ev.finished or choice.finish_reason is not None
    ev.text = "".join(pieces)
    return ev


def parse_models(body: bytes) -> ModelList:
    """The body of GET /v1/models -> ModelList, or ProtocolError."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError("/models: not UTF-8") from None
    return _validated(ModelList, text, "/models")


class EventStream:
    """Cuts SSE `data:` payloads out of a byte stream, one per `data:` line (what OpenAI-style
    servers send); comments, `event:` lines and blank lines are skipped."""

    def __init__(self, max_line: int = MAX_LINE):
        self.max_line = max_line
        self.buf = b""

    def feed(self, data: bytes) -> list[str]:
        self.buf += data
        if b"\n" not in self.buf:
            if len(self.buf) > self.max_line:
                raise ProtocolError(f"a line of the stream is over {self.max_line} bytes")
            return []
        *lines, self.buf = self.buf.split(b"\n")
        if len(self.buf) > self.max_line:
            raise ProtocolError(f"a line of the stream is over {self.max_line} bytes")
        out = []
        for raw in lines:
            if len(raw) > self.max_line:
                raise ProtocolError(f"a line of the stream is over {self.max_line} bytes")
            if not raw.startswith(b"data:"):
                continue
            try:
                out.append(raw[5:].strip().decode("utf-8"))
            except UnicodeDecodeError:
                raise ProtocolError("stream is not UTF-8") from None
        return out


class BodyDecoder:
    """Content-Encoding undone with a cap on the decoded bytes (the client asks for identity;
    gzip and deflate are still undone, in bounded steps, so a bomb stops at the cap)."""

    def __init__(self, encoding: str | None, cap: int):
        enc = (encoding or "identity").strip().lower()
        if enc in ("identity", ""):
            self.z = None
        elif enc in ("gzip", "x-gzip"):
            self.z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self.z = zlib.decompressobj()
        else:
            raise ProtocolError(f"response Content-Encoding {one_line(enc, 40)!r} is not supported")
        self.cap = cap
        self.total = 0

    def feed(self, data: bytes) -> bytes:
        if self.z is None:
            out = data
        else:
            parts, room = [], self.cap - self.total + 1
            try:
                part = self.z.decompress(data, room)
                while True:
                    parts.append(part)
                    room -= len(part)
                    if room <= 0 or not self.z.unconsumed_tail:
                        break
                    part = self.z.decompress(self.z.unconsumed_tail, room)
            except zlib.error:
                raise ProtocolError("response body is not valid compressed data") from None
            out = b"".join(parts)
        self.total += len(out)
        if self.total > self.cap:
            raise ProtocolError(f"response is over the {self.cap}-byte cap")
        return out


async def read_body(resp, cap: int) -> bytes:
    """A streamed httpx response's whole body, its Content-Encoding undone, or ProtocolError past
    `cap` decoded bytes."""
    decoder, out = BodyDecoder(resp.headers.get("content-encoding"), cap), []
    async for raw in resp.aiter_raw():
        out.append(decoder.feed(raw))
    return b"".join(out)
