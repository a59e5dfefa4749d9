"""`vllm bench serve --save-result` files (one point each), with `--save-detailed`'s per-request
lists where present: start_times and latencies (seconds, perf_counter), ttfts, itls (each
request's gaps between chunks), input_lens, output_lens (0 for a failed request), errors ("" for
a success), generated_texts. Top-level settings: backend / endpoint_type (openai: completions,
openai-chat: chat), model_id, tokenizer_id, num_prompts, request_rate ("inf" or req/s),
burstiness, max_concurrency, ramp_up_*, and any --metadata KEY=VALUE pairs.

The file does not record its dataset's lengths or ignore_eos: `--metadata input_len=N
output_len=N ignore_eos=true` states them (also read: random_input_len, random_output_len);
else a length every request shares is taken, and ignore_eos is taken as on where every request
produced exactly that many tokens. A rate of inf capped at max_concurrency c is a closed loop of c
clients: gpuparity's concurrency=c. The date is the client's local time, read as UTC.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from gpuparity.results.peers import common, fields
from gpuparity.results.peers.fields import Count, Figure, Positive, Seconds

TOOL = "vllm bench serve"
MAX_REQUESTS = 1_000_000
# vLLM's own top-level fields (its --save-result schema); any other is --metadata
VLLM_FIELDS = {"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "num_processes",
               "request_rate", "burstiness", "max_concurrency", "ramp_up_strategy", "ramp_up_start_rps",
               "ramp_up_end_rps", "duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
               "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
               "max_output_tokens_per_s", "max_concurrent_requests", "input_lens", "output_lens", "ttfts", "itls",
               "latencies", "start_times", "queue_times", "errors", "generated_texts", "best_of", "ignore_eos",
               "read_timeout", "retries"}
GPU_KEYS = ("gpu", "gpu_type", "gpu_name", "gpu_model", "hardware", "device", "accelerator")
STATED = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")


class Result(BaseModel):
    model_config = ConfigDict(extra="allow")

    date: Optional[StrictStr] = Field(None, max_length=40)
    backend: Optional[StrictStr] = Field(None, max_length=100)
    endpoint_type: Optional[StrictStr] = Field(None, max_length=100)
    model_id: Optional[StrictStr] = Field(None, max_length=1000)
    tokenizer_id: Optional[StrictStr] = Field(None, max_length=1000)
    num_prompts: Optional[StrictInt] = Field(None, ge=1, le=MAX_REQUESTS)
    request_rate: Optional[Positive | StrictStr] = None
    burstiness: Optional[Positive] = None
    max_concurrency: Optional[StrictInt] = Field(None, ge=1, le=MAX_REQUESTS)
    ramp_up_strategy: Optional[StrictStr] = Field(None, max_length=20)
    ramp_up_start_rps: Optional[Positive] = None
    ramp_up_end_rps: Optional[Positive] = None
    duration: Seconds = Field(gt=0)
    completed: Count
    failed: Optional[Count] = None
    total_input_tokens: Optional[Count] = None
    total_output_tokens: Optional[Count] = None
    request_throughput: Optional[Figure] = None
    output_throughput: Optional[Figure] = None
    total_token_throughput: Optional[Figure] = None
    input_lens: Optional[list[Count]] = Field(None, max_length=MAX_REQUESTS)
    output_lens: Optional[list[Count]] = Field(None, max_length=MAX_REQUESTS)
    ttfts: Optional[list[Seconds]] = Field(None, max_length=MAX_REQUESTS)
    itls: Optional[list[list[Seconds]]] = Field(None, max_length=MAX_REQUESTS)
    latencies: Optional[list[Seconds]] = Field(None, max_length=MAX_REQUESTS)
    start_times: Optional[list[Seconds]] = Field(None, max_length=MAX_REQUESTS)
    errors: Optional[list[Optional[StrictStr]]] = Field(None, max_length=MAX_REQUESTS)
    generated_texts: Optional[list[Optional[StrictStr]]] = Field(None, max_length=MAX_REQUESTS)


def looks_like(obj) -> bool:
    return isinstance(obj, dict) and "duration" in obj and "completed" in obj and (
        "backend" in obj or "endpoint_type" in obj) and "model_id" in obj


def _meta(res: Result, *names: str) -> tuple[str, object]:
    """(the name, the value) of the first of `names` the file's --metadata states."""
    extra = res.model_extra or {}
    for n in names:
        if n in extra and extra[n] not in (None, ""):
            return n, extra[n]
    return names[0], None


def _load(res: Result, path: str) -> dict:
    from gpuparity.errors import UserError

    rate = res.request_rate
    inf = rate is None or (isinstance(rate, str) and rate.strip().lower() in ("inf", "infinity"))
    if not inf and (isinstance(rate, str) or not 0 < rate < float("inf")):
        raise UserError(f"{path}: request_rate {str(rate)[:40]!r} is not a positive number or inf")
    if res.ramp_up_strategy:
        load = {"ramp_up": res.ramp_up_strategy, "ramp_start_rps": float(res.ramp_up_start_rps or 0),
                "ramp_end_rps": float(res.ramp_up_end_rps or 0)}
    elif inf and res.max_concurrency:
        return {"concurrency": res.max_concurrency}          # all at once, c in flight: a closed loop of c
    elif inf:
        load = {"request_rate": "inf"}
    else:
        load = {"request_rate": float(rate)}
        if res.burstiness not in (None, 1, 1.0):
            load["burstiness"] = float(res.burstiness)
    if res.max_concurrency:
        load["max_concurrency"] = res.max_concurrency
    return load


def _length(res: Result, path: str, *names: str) -> int | None:
    name, value = _meta(res, *names)
    return fields.length(value, path, f"{name} (--metadata)")


def convert(obj: dict, path: str, data: bytes, declared: common.Declared = common.NOTHING_DECLARED) -> dict:
    """The file as a run document (not yet validated: the caller's validate_run does it)."""
    from gpuparity.validate import parse

    res = parse(Result, obj, path)
    lists = (res.start_times, res.latencies, res.ttfts, res.itls, res.input_lens, res.output_lens)
    n = len(res.start_times or [])
    detailed = all(x is not None for x in lists) and n > 0 and all(len(x) == n for x in lists)
    errors = res.errors if res.errors is not None and len(res.errors) == n else [None] * n
    texts = res.generated_texts if res.generated_texts is not None and len(res.generated_texts) == n else [None] * n
    ok = [not e and (res.latencies[i] > 0 if detailed else True) for i, e in enumerate(errors)] if detailed else []
    in_len = _length(res, path, "input_len", "random_input_len")
    out_len = _length(res, path, "output_len", "random_output_len")
    # the lengths every request shares (a file without start times but with its lengths: those)
    lens = [(a, b) for a, b, e in zip(res.input_lens or [], res.output_lens or [], res.errors or [None] * len(
        res.input_lens or []), strict=False) if not e and b] if not detailed else \
        [(res.input_lens[i], res.output_lens[i]) for i in range(n) if ok[i]]
    in_len = in_len or common.same([a for a, _ in lens])
    out_len = out_len or common.same([b for _, b in lens])
    eos = fields.flag(_meta(res, "ignore_eos")[1], path, "ignore_eos")
    if eos is not None:
        ignore_eos = eos
    else:                               # every request ran to the one length: to its cap
        ignore_eos = bool(lens and out_len and all(b == out_len for _, b in lens))
    endpoint = "chat" if "chat" in (res.backend or res.endpoint_type or "") else "completions"
    requests = n if detailed else (res.num_prompts or res.completed + (res.failed or 0))
    params = common.point_params(endpoint, ignore_eos, in_len, out_len, _load(res, path), requests)
    extra = res.model_extra or {}
    stated = {k: getattr(res, k) for k in ("duration", "completed", "failed", "total_input_tokens",
                                           "total_output_tokens", "request_throughput", "output_throughput",
                                           "total_token_throughput") if getattr(res, k) is not None}
    stated.update(fields.figures({k: v for k, v in extra.items() if STATED.match(k)}, path))
    metadata = _metadata(extra)
    settings = {"tokenizer_id": res.tokenizer_id, "burstiness": res.burstiness, "date": res.date,
                **({"metadata": metadata} if metadata else {})}
    info = common.imported_info(TOOL, None, path, res.model_id, None, detailed, stated, settings)
    # the percentiles the file states (p99, p90 ...): the same ones are figured from its requests
    qs = sorted({float(m.group(1)[1:]) for k in stated if (m := STATED.match(k)) and m.group(1).startswith("p")})
    if detailed:
        t0 = min(res.start_times)
        rows = [common.row(i, ok[i], errors[i], res.start_times[i] - t0, res.start_times[i] - t0 + res.latencies[i],
                           res.ttfts[i], list(res.itls[i]), res.input_lens[i], res.output_lens[i], out_len,
                           texts[i], len(res.itls[i]) + 1) for i in range(n)]
        result = common.point_result(params, rows, f"{TOOL}: {res.tokenizer_id or res.model_id or 'its tokenizer'}",
                                     info, path, tuple(qs) or common.DEFAULT_PERCENTILES, declared.gpus)
    else:
        result = common.stated_result(params, res.output_throughput, stated, info, declared.gpus, _rebuilt(res, qs),
                                      metadata)
    return common.run_document(TOOL, None, path, data, _date(res.date), [result], None, _product(metadata), declared)


def _metadata(extra: dict) -> dict:
    """The --metadata KEY=VALUE pairs the file carries beside vLLM's own fields (gpu=, tp=, ...):
    kept as the peer's text, bounded and fit to print."""
    out = {}
    for k, v in extra.items():
        if STATED.match(k) or k in VLLM_FIELDS or not isinstance(v, (str, int, float)) or isinstance(v, bool):
            continue
        if len(out) >= 50:
            break
        out[common.one_line(k, 100)] = common.one_line(v, 200) if isinstance(v, str) else v
    return out


def _product(metadata: dict) -> str | None:
    """The server's GPU where the file's metadata names it (gpu=H100, gpu_type=MI300X, ...)."""
    for key in GPU_KEYS:
        v = metadata.get(key)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return None


def _rebuilt(res: Result, qs: list[float]) -> dict | None:
    """vLLM's latency summaries redone from a detailed file that has ttfts and itls but no
    latencies or start times (earlier versions): E2EL rebuilt as TTFT + the gaps (to the last
    token), TPOT = the gaps / (output tokens - 1); no rates (no timeline). None without them."""
    from gpuparity.results.serving_summary import dist_ms

    n = len(res.ttfts or [])
    if not n or any(x is None or len(x) != n for x in (res.itls, res.output_lens)):
        return None
    good = [i for i in range(n) if (not res.errors or len(res.errors) != n or not res.errors[i])
            and res.output_lens[i] > 0]
    series = {"ttft": [res.ttfts[i] for i in good],
              "tpot": [sum(res.itls[i]) / (res.output_lens[i] - 1) for i in good if res.output_lens[i] > 1],
              "itl": [g for i in good for g in res.itls[i]],
              "e2el": [res.ttfts[i] + sum(res.itls[i]) for i in good]}
    out: dict = {"completed": len(good)}
    for name, values in series.items():
        if values:
            out.update({f"{k}_{name}_ms": v for k, v in dist_ms(values, qs or (99.0,)).items()})
    return out


def _date(text: str | None) -> str:
    for fmt in ("%Y%m%d-%H%M%S", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(text or "", fmt).replace(tzinfo=timezone.utc).isoformat()
        except ValueError:
            continue
    return datetime(1970, 1, 1, tzinfo=timezone.utc).isoformat()
