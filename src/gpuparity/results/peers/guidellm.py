"""guidellm's JSON report (`guidellm run ... --output kind=json,path=FILE`; schema of guidellm
0.8: metadata.guidellm_version, config.spec, benchmarks[]): one point per benchmark.

Per benchmark: config.strategy (type_ synchronous: concurrency 1; concurrent: `streams`
clients; throughput: all at once; poisson / constant: a rate), config.backend (target, model,
request_format), requests.successful / errored / incomplete (each with request_start_time and
request_end_time in epoch seconds, time_to_first_token_ms, prompt_tokens, output_tokens, output,
info.timings.request_iterations, info.error), metrics (distributions per status), duration.
The lengths are the synthetic data's prompt_tokens / output_tokens (config.spec.data), else a
length every request shares; ignore_eos is what guidellm sent (its requests' bodies), else on
where the output length is fixed (guidellm's rule). guidellm keeps every request unless
sampling was asked for: a benchmark whose requests are fewer than its totals is imported as its
summary only (unverified). It has no per-gap latencies: an imported point has no ITL figure.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from gpuparity.results.peers import common, fields
from gpuparity.results.peers.fields import Count, EpochSeconds, Length, Millis, Number, Positive, Seconds, Url

TOOL = "guidellm"
MAX_REQUESTS = 1_000_000


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Timings(_Loose):
    request_iterations: Optional[Count] = None
    first_token_iteration: Optional[EpochSeconds] = None
    last_token_iteration: Optional[EpochSeconds] = None


class ReqInfo(_Loose):
    timings: Optional[Timings] = None
    error: Optional[StrictStr] = Field(None, max_length=100_000)


class Request(_Loose):
    request_start_time: Optional[EpochSeconds] = None
    request_end_time: Optional[EpochSeconds] = None
    time_to_first_token_ms: Optional[Millis] = None
    prompt_tokens: Optional[Count] = None
    output_tokens: Optional[Count] = None
    output: Optional[StrictStr] = None
    request_args: Optional[StrictStr] = Field(None, max_length=10_000_000)
    info: Optional[ReqInfo] = None


class Requests(_Loose):
    successful: list[Request] = Field(default_factory=list, max_length=MAX_REQUESTS)
    errored: list[Request] = Field(default_factory=list, max_length=MAX_REQUESTS)
    incomplete: list[Request] = Field(default_factory=list, max_length=MAX_REQUESTS)


class Strategy(_Loose):
    type_: StrictStr = Field(max_length=40)
    streams: Optional[StrictInt] = Field(None, ge=1, le=MAX_REQUESTS)
    rate: Optional[Positive] = None
    max_concurrency: Optional[StrictInt] = Field(None, ge=1, le=MAX_REQUESTS)


class Backend(_Loose):
    target: Optional[Url] = None
    model: Optional[StrictStr] = Field(None, max_length=1000)
    request_format: Optional[StrictStr] = Field(None, max_length=100)


class BenchConfig(_Loose):
    strategy: Strategy
    backend: Optional[Backend] = None


class Benchmark(_Loose):
    config: BenchConfig
    requests: Requests
    metrics: dict[str, Any] = Field(default_factory=dict)
    start_time: Optional[EpochSeconds] = None
    end_time: Optional[EpochSeconds] = None
    duration: Optional[Seconds] = None


class Data(_Loose):
    prompt_tokens: Optional[Length] = None
    prompt_tokens_stdev: Optional[Number] = Field(None, ge=0, le=fields.MAX_FIGURE, allow_inf_nan=False)
    output_tokens: Optional[Length] = None
    output_tokens_stdev: Optional[Number] = Field(None, ge=0, le=fields.MAX_FIGURE, allow_inf_nan=False)


class Tokenizer(_Loose):
    model: Optional[StrictStr] = Field(None, max_length=1000)


class Spec(_Loose):
    data: list[Data | Any] = Field(default_factory=list, max_length=1000)
    tokenizer: Optional[Tokenizer] = None


class Config(_Loose):
    spec: Optional[Spec] = None


class Meta(_Loose):
    guidellm_version: Optional[StrictStr] = Field(None, max_length=40)


class Report(_Loose):
    metadata: Meta = Field(default_factory=Meta)
    config: Config = Field(default_factory=Config)
    benchmarks: list[Benchmark] = Field(min_length=1, max_length=10_000)


def looks_like(obj) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("benchmarks"), list):
        return False
    meta = obj.get("metadata")
    return (isinstance(meta, dict) and "guidellm_version" in meta) or any(
        isinstance(b, dict) and b.get("type_") == "generative_benchmark" for b in obj["benchmarks"][:1])


def _load(st: Strategy) -> dict:
    kind = st.type_
    if kind == "synchronous":
        return {"concurrency": 1}
    if kind == "concurrent" and st.streams:
        return {"concurrency": st.streams}
    if kind == "poisson" and st.rate:
        return {"request_rate": float(st.rate)}       # Poisson arrivals: gpuparity's rate mode (burstiness 1)
    if kind == "throughput":
        return {"request_rate": "inf", **({"max_concurrency": st.max_concurrency} if st.max_concurrency else {})}
    return {"request_rate": float(st.rate) if st.rate else "inf", "arrivals": kind}    # no gpuparity twin


def _count(v, default: int) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_REQUESTS else default


def _stat(metrics: dict, name: str, stat: str):
    try:
        v = metrics[name]["successful"][stat]
    except (KeyError, TypeError):
        return None
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _sent_ignore_eos(req: Request, path: str) -> bool | None:
    """ignore_eos as guidellm sent it (request_args: the request's JSON body)."""
    from gpuparity.errors import UserError
    from gpuparity.validate import parse_json

    if not req.request_args:
        return None
    try:
        body = (parse_json(req.request_args, path) or {}).get("body") or {}
    except (UserError, AttributeError):
        return None
    v = body.get("ignore_eos") if isinstance(body, dict) else None
    return v if isinstance(v, bool) else None


def convert(obj: dict, path: str, data: bytes, declared: common.Declared = common.NOTHING_DECLARED) -> dict:
    """The report as a run document, one point per benchmark (validated by the caller)."""
    from gpuparity.validate import parse

    rep = parse(Report, obj, path)
    version = rep.metadata.guidellm_version
    spec = rep.config.spec or Spec()
    synth = next((d for d in spec.data if isinstance(d, Data)), Data())
    tokenizer = spec.tokenizer.model if spec.tokenizer else None
    results, first = [], None
    for b in rep.benchmarks:
        reqs = b.requests
        backend = b.config.backend or Backend()
        good = reqs.successful
        in_len = synth.prompt_tokens if not synth.prompt_tokens_stdev else None
        out_len = synth.output_tokens if not synth.output_tokens_stdev else None
        in_len = in_len or common.same([r.prompt_tokens for r in good])
        out_len = out_len or common.same([r.output_tokens for r in good])
        sent = next((v for v in (_sent_ignore_eos(r, path) for r in good[:1]) if v is not None), None)
        ignore_eos = sent if sent is not None else bool(out_len)
        endpoint = "chat" if "chat" in (backend.request_format or "") else "completions"
        totals = b.metrics.get("request_totals") if isinstance(b.metrics.get("request_totals"), dict) else {}
        everything = ([(r, "ok") for r in good] + [(r, "errored") for r in reqs.errored]
                      + [(r, "incomplete when the benchmark ended") for r in reqs.incomplete])
        whole = totals.get("successful") in (None, len(good)) and all(
            r.request_start_time is not None and r.request_end_time is not None for r, _ in everything) and good
        params = common.point_params(endpoint, ignore_eos, in_len, out_len, _load(b.config.strategy),
                                     len(everything) if whole else _count(totals.get("total"), len(everything)))
        stated = {f"{name}.{stat}": _stat(b.metrics, name, stat) for name in (
            "time_to_first_token_ms", "inter_token_latency_ms", "time_per_output_token_ms", "request_latency",
            "output_tokens_per_second", "tokens_per_second", "requests_per_second") for stat in ("mean", "median")}
        stated.update({"output_token_count.total_sum": _stat(b.metrics, "output_token_count", "total_sum"),
                       "duration": b.duration})
        stated = fields.figures({k: v for k, v in stated.items() if v is not None}, f"{path}: metrics")
        if totals:
            stated["request_totals"] = fields.figures(totals, f"{path}: metrics.request_totals")
        info = common.imported_info(TOOL, version, path, backend.model, backend.target, bool(whole), stated,
                                    {"strategy": b.config.strategy.type_, "tokenizer": tokenizer})
        first = first if first is not None else b.start_time
        if whole:
            t0 = min(r.request_start_time for r, _ in everything)
            rows = []
            for i, (r, status) in enumerate(everything):
                timing = (r.info.timings if r.info else None) or Timings()
                ttft = r.time_to_first_token_ms / 1e3 if r.time_to_first_token_ms is not None else None
                rows.append(common.row(i, status == "ok" and ttft is not None, (r.info.error if r.info else None)
                                       or status, r.request_start_time - t0, r.request_end_time - t0, ttft, [],
                                       r.prompt_tokens, r.output_tokens, out_len, r.output, timing.request_iterations,
                                       timing.last_token_iteration - t0 if timing.last_token_iteration else None))
            results.append(common.point_result(params, rows, f"{TOOL}: {tokenizer or backend.model or 'its tokenizer'}",
                                               info, path, common.DEFAULT_PERCENTILES, declared.gpus))
        else:
            results.append(common.stated_result(params, _stat(b.metrics, "output_tokens_per_second", "mean"),
                                                stated, info, declared.gpus))
    started = common.iso(first if isinstance(first, (int, float)) else 0, path)
    backend = rep.benchmarks[0].config.backend
    host = fields.url_parts(backend.target if backend else None, path, "config.backend.target")[1]
    return common.run_document(TOOL, version, path, data, started, results, host, declared=declared)
