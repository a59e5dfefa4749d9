"""The streaming HTTP client of the serving benchmark: one sweep point's requests, shaped as asked
(closed loop of N clients, or arrivals at a rate: Poisson / gamma with burstiness, optional
ramp-up, a cap on requests in flight), with warm-up requests first, none of them counted.

Every request has an overall deadline (connect, headers, body: `timeout_s`), a cap on response
bytes and on streamed pieces; the point has a deadline too (`point_timeout_s`): requests still
running then are timeouts, requests not sent yet are errors, so every request is accounted for
and nothing can hang. What a request measures (perf_counter, integer microseconds from the
point's start): its send time, the arrival of the first piece of text (TTFT), the gaps between
pieces (ITL), the end of its stream (E2EL = end - start), and when its headers went out, after any
TCP connect (sent_us: where guidellm's clock starts; httpcore's trace events).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from dataclasses import dataclass, field
from typing import Callable

from gpuparity.results.serving_summary import PROMPT_TOLERANCE, beyond
from gpuparity.workloads.serving.datasets import Prompt
from gpuparity.workloads.serving.wire import (
    BodyDecoder,
    EventStream,
    ProtocolError,
    Usage,
    one_line,
    parse_chunk,
    parse_models,
    read_body,
)

ERROR_BODY_CAP = 64 * 1024
PIECE_SLACK = 16                 # pieces beyond max_tokens before a stream counts as runaway
IDENTITY_HEADERS = ("server", "x-powered-by", "via", "openai-version", "openai-model")


def us(seconds: float) -> int:
    return int(round(seconds * 1e6))


@dataclass
class Record:
    """One request. Times in integer microseconds since the point's start."""

    index: int
    max_tokens: int
    start_us: int | None = None
    sent_us: int | None = None                  # its headers went out (after any connect): guidellm's start
    end_us: int | None = None
    ttft_us: int | None = None
    itl_us: list[int] = field(default_factory=list)
    ok: bool = False
    error: str | None = None
    timeout: bool = False
    invalid: bool = False                       # its usage figures contradict what streamed
    pieces: int = 0                             # chunks with text
    empty_chunks: int = 0                       # chunks with choices but no text
    delta_tokens: int | None = None             # the server's cumulative count on its last chunk of text
    parts: list[str] = field(default_factory=list)   # generated text (counted, not stored)
    usage: Usage | None = None
    status: int | None = None                   # HTTP status

    def fail(self, message: str, timeout: bool = False, invalid: bool = False) -> None:
        self.ok, self.error, self.timeout, self.invalid = False, one_line(message), timeout, invalid

    @property
    def text(self) -> str:
        return "".join(self.parts)


@dataclass
class PointPlan:
    url: str                                    # the endpoint: .../v1/completions or .../v1/chat/completions
    model: str
    prompts: list[Prompt]
    warmup: list[Prompt]
    concurrency: int = 0                        # closed loop of this many clients (0: arrival mode)
    arrivals: list[float] | None = None         # send offsets (s) in arrival mode; None: all at once
    max_concurrency: int = 0                    # cap on requests in flight in arrival mode (0: none)
    ignore_eos: bool = False
    timeout_s: float = 300.0
    point_timeout_s: float = 3600.0
    max_bytes: int = 1 << 24
    headers: dict = field(default_factory=dict)
    temperature: float = 0.0

    @property
    def parallel(self) -> int:
        return self.concurrency or self.max_concurrency or len(self.prompts) or 1


@dataclass
class PointOutcome:
    records: list[Record]
    warmup: list[Record]
    headers: dict                               # identity headers of the first response
    deadline_hit: bool = False


def arrival_times(n: int, rate: float, burstiness: float, rng: random.Random,
                  ramp: tuple[str, float, float] | None = None) -> list[float] | None:
    """Send offsets of n requests: gaps drawn from a gamma distribution of shape `burstiness`
    and mean 1 / rate (burstiness 1: Poisson), the rate moving from start to end over the
    requests under a ramp (linear or exponential), as vLLM's client. None: all at once."""
    if ramp is None and math.isinf(rate):
        return None
    t, out = 0.0, []
    for i in range(n):
        out.append(t)
        if ramp is not None:
            kind, lo, hi = ramp
            f = i / max(n - 1, 1)
            rate = lo + (hi - lo) * f if kind == "linear" else lo * (hi / lo) ** f
        t += rng.gammavariate(burstiness, 1.0 / (rate * burstiness))
    return out


def request_body(plan: PointPlan, prompt: Prompt) -> dict:
    body = {"model": plan.model, "max_tokens": prompt.max_tokens, "stream": True, "temperature": plan.temperature,
            "stream_options": {"include_usage": True}}
    body.update({"messages": prompt.body} if isinstance(prompt.body, list) else {"prompt": prompt.body})
    if plan.ignore_eos:
        body["ignore_eos"] = True
    return body


async def one_request(client, plan: PointPlan, prompt: Prompt, rec: Record, t0: float,
                      headers_out: dict) -> None:
    """Send one streaming request and fill rec (never raises for what the server does)."""
    import httpx

    rec.start_us = us(time.perf_counter() - t0)
    last = None

    async def trace(event: str, info) -> None:     # httpcore's events: when the headers start out
        if rec.sent_us is None and event.endswith("send_request_headers.started"):
            rec.sent_us = us(time.perf_counter() - t0)

    done = seen_done = False
    try:
        async with client.stream("POST", plan.url, json=request_body(plan, prompt),
                                 headers={"Accept-Encoding": "identity", **plan.headers},
                                 extensions={"trace": trace}) as resp:
            rec.status = resp.status_code
            if not headers_out:
                headers_out.update({k: one_line(resp.headers[k], 200) for k in IDENTITY_HEADERS if k in resp.headers})
            if resp.status_code != 200:
                try:
                    text = (await read_body(resp, ERROR_BODY_CAP)).decode("utf-8", "replace")
                except ProtocolError as exc:
                    text = str(exc)
                rec.fail(http_error(resp.status_code, text, plan.ignore_eos))
                return
            decoder = BodyDecoder(resp.headers.get("content-encoding"), plan.max_bytes)
            stream = EventStream()
            async for raw in resp.aiter_raw():
                now = time.perf_counter()
                for data in stream.feed(decoder.feed(raw)):
                    if data == "[DONE]":
                        done = seen_done = True
                        break
                    ev = parse_chunk(data)
                    if ev.error:
                        rec.fail(ev.error)
                        return
                    if ev.usage is not None:
                        rec.usage = ev.usage
                        if ev.text and ev.usage.completion_tokens is not None:   # a count per chunk
                            rec.delta_tokens = ev.usage.completion_tokens
                    if ev.choices and not ev.text:
                        rec.empty_chunks += 1
                    if ev.text:
                        if last is None:
                            rec.ttft_us = us(now - t0) - rec.start_us
                        else:
                            rec.itl_us.append(us(now - last))
                        last = now
                        rec.pieces += 1
                        rec.parts.append(ev.text)
                        if rec.pieces > prompt.max_tokens + PIECE_SLACK:
                            raise ProtocolError(f"stream ran past max_tokens={prompt.max_tokens} "
                                                f"({rec.pieces} pieces)")
                    done = done or ev.finished
                if seen_done:
                    break
    except ProtocolError as exc:
        rec.fail(f"bad response: {exc}")
        return
    except httpx.TimeoutException:
        rec.fail(f"timed out (no data for {plan.timeout_s:g} s)", timeout=True)
        return
    except (httpx.HTTPError, OSError) as exc:
        rec.fail(f"{type(exc).__name__}: {exc}")
        return
    rec.end_us = us(time.perf_counter() - t0)
    if not done:
        rec.fail("stream ended before its last chunk")
    elif rec.ttft_us is None:
        rec.fail("no text streamed")
    else:
        check_usage(rec, prompt)


def http_error(status: int, body: str, ignore_eos: bool) -> str:
    """One line for an HTTP error: the message of a JSON error body where there is one."""
    import json

    try:
        obj = json.loads(body)
        err = obj.get("error") if isinstance(obj, dict) else None
        msg = (err.get("message") if isinstance(err, dict) else err) or obj.get("detail") or obj.get("message")
        body = str(msg) if msg else body
    except (ValueError, AttributeError, RecursionError):
        pass
    if ignore_eos and 400 <= status < 500 and "ignore_eos" in body:
        return (f"server refused ignore_eos (HTTP {status}: {one_line(body, 160)}); "
                "run without --set ignore_eos=true")
    return f"HTTP {status}: {one_line(body, 200)}"


# The prompt tolerance and `beyond` are results/serving_summary's, as are the output count's rules
# (token_problem: the workload holds each finished request to them): recompute uses the same ones.
PROMPT_BYTES_SLACK = 1024          # without a tokenizer: a prompt has at most its UTF-8 bytes + a template


def prompt_bytes(prompt: Prompt) -> int:
    body = prompt.body if isinstance(prompt.body, str) else " ".join(str(m.get("content", "")) for m in prompt.body)
    return len(body.encode("utf-8", "replace"))


def check_usage(rec: Record, prompt: Prompt) -> None:
    """Accept a finished stream unless its prompt count contradicts what was sent: within the
    client's count (PROMPT_TOLERANCE) or, without one, the prompt's bytes (else the request is
    invalid). A server's 0 prompt tokens is no count: dropped. The output count is held to what
    streamed afterwards (serving_summary.token_problem, with the tokenizer's bounds)."""
    rec.ok = True
    u = rec.usage
    if u is None:
        return
    inp = u.prompt_tokens
    if inp == 0:                     # a non-empty prompt has tokens: a server that says 0 did not count them
        u.prompt_tokens = None
    elif inp is not None and prompt.tokens is not None and beyond(inp, prompt.tokens, PROMPT_TOLERANCE):
        rec.fail(f"usage says {inp} prompt tokens for a prompt of {prompt.tokens} tokens", invalid=True)
    elif inp is not None and prompt.tokens is None and inp > prompt_bytes(prompt) + PROMPT_BYTES_SLACK:
        rec.fail(f"usage says {inp} prompt tokens for a prompt of {prompt_bytes(prompt)} bytes", invalid=True)


async def _bounded(coro, rec: Record, timeout_s: float) -> None:
    try:
        await asyncio.wait_for(coro, timeout_s)
    except asyncio.TimeoutError:
        rec.fail(f"over the {timeout_s:g} s request deadline", timeout=True)


async def _run_requests(client, plan: PointPlan, prompts: list[Prompt], records: list[Record], t0: float,
                        headers: dict, concurrency: int, arrivals: list[float] | None,
                        on_done: Callable[[Record], None] | None) -> None:
    """Closed loop of `concurrency` clients, or (0) sends at the arrival offsets, all at once
    without them, under the plan's cap on requests in flight."""

    async def send(i: int) -> None:
        await _bounded(one_request(client, plan, prompts[i], records[i], t0, headers), records[i], plan.timeout_s)
        if records[i].end_us is None:
            records[i].end_us = us(time.perf_counter() - t0)
        if on_done is not None:
            on_done(records[i])

    if concurrency:
        queue = iter(range(len(prompts)))

        async def worker() -> None:
            for i in queue:
                await send(i)

        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(prompts)))))
        return
    sem = asyncio.Semaphore(plan.max_concurrency or len(prompts) or 1)

    async def limited(i: int) -> None:
        async with sem:
            await send(i)

    tasks = []
    try:
        for i in range(len(prompts)):
            if arrivals is not None:
                await asyncio.sleep(max(0.0, t0 + arrivals[i] - time.perf_counter()))
            tasks.append(asyncio.create_task(limited(i)))
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()


async def run_point(plan: PointPlan, on_done: Callable[[Record], None] | None = None) -> PointOutcome:
    """Warm-up requests (a closed loop, not counted), then the point's requests, all within the
    point's deadline."""
    import httpx

    limits = httpx.Limits(max_connections=plan.parallel, max_keepalive_connections=plan.parallel)
    timeout = httpx.Timeout(plan.timeout_s, connect=min(plan.timeout_s, 10.0))
    deadline = time.perf_counter() + plan.point_timeout_s
    headers: dict = {}
    warm = [Record(i, p.max_tokens) for i, p in enumerate(plan.warmup)]
    records = [Record(i, p.max_tokens) for i, p in enumerate(plan.prompts)]
    waves = ((plan.warmup, warm, plan.parallel, None, None),
             (plan.prompts, records, plan.concurrency, plan.arrivals, on_done))
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        for prompts, recs, concurrency, arrivals, done in waves:
            t0 = time.perf_counter()
            try:
                await asyncio.wait_for(
                    _run_requests(client, plan, prompts, recs, t0, headers, concurrency, arrivals, done),
                    max(deadline - t0, 0.001))
            except asyncio.TimeoutError:
                now = us(time.perf_counter() - t0)
                for left in (warm, records):
                    close_unfinished(left, plan.point_timeout_s, now)
                return PointOutcome(records, warm, headers, True)
    return PointOutcome(records, warm, headers, False)


def close_unfinished(records: list[Record], point_timeout_s: float, now_us: int) -> None:
    """At the point's deadline: running requests are timeouts, unsent ones errors."""
    for rec in records:
        if rec.ok or rec.error:
            continue
        if rec.start_us is None:
            rec.fail(f"not sent: the point's {point_timeout_s:g} s deadline came first")
        else:
            rec.fail(f"still running at the point's {point_timeout_s:g} s deadline", timeout=True)
            rec.end_us = now_us


async def fetch_models(base_url: str, timeout_s: float, headers: dict) -> tuple[list, dict]:
    """(model cards, identity headers) from GET {base_url}/models, within timeout_s overall."""
    import httpx

    async def get() -> tuple[list, dict]:
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s)) as client:
            async with client.stream("GET", base_url.rstrip("/") + "/models",
                                     headers={"Accept-Encoding": "identity", **headers}) as resp:
                if resp.status_code != 200:
                    raise ProtocolError(f"HTTP {resp.status_code}")
                ident = {k: one_line(resp.headers[k], 200) for k in IDENTITY_HEADERS if k in resp.headers}
                body = await read_body(resp, 1 << 22)
        return parse_models(body).data, ident

    try:
        return await asyncio.wait_for(get(), timeout_s)
    except asyncio.TimeoutError:
        raise ProtocolError(f"no answer within {timeout_s:g} s") from None
    except (httpx.HTTPError, OSError) as exc:
        raise ProtocolError(f"{type(exc).__name__}: {one_line(exc, 200)}") from None
