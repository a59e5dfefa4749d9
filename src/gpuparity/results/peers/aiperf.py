"""aiperf's profile export: `profile_export.jsonl` (a record per request: metadata.request_start_ns
and request_end_ns in epoch nanoseconds, benchmark_phase, was_cancelled; metrics.time_to_first_token,
inter_chunk_latency (the gaps, ms), input_sequence_length, output_sequence_length,
http_req_chunks_received, each {value, unit}; error) beside `profile_export_aiperf.json` (the
aggregate: aiperf_version, start_time, input_config, and each metric's unit/avg/pNN/std). Either
file may be named; the other is found beside it (PREFIX.jsonl and PREFIX_aiperf.json). Without
the records, the aggregate is imported as its summary only (unverified).

input_config (aiperf 0.13; earlier layouts are read too): endpoint.type (completions | chat),
endpoint.urls, endpoint.extra.ignore_eos (--extra-inputs ignore_eos:true), models.items[].name,
datasets[].prompts.isl / osl (mean, stddev: a length is the key's only at stddev 0), phases[]
(the profiling phase's concurrency or request_rate), tokenizer.name. Output counts are aiperf's
tokenizer's (or the server's with --use-server-token-count). Warm-up records are left out.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

from gpuparity.results.peers import common, fields
from gpuparity.results.peers.fields import Count, EpochNs, Millis

TOOL = "aiperf"
MAX_RECORDS = 1_000_000
PERCENTILES = (1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0)     # aiperf's own
UNIT_MS = {None: 1.0, "ms": 1.0, "ns": 1e-6, "us": 1e-3, "s": 1e3}     # a time's unit, in ms


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Value(_Loose):
    unit: Optional[StrictStr] = Field(None, max_length=100)


class Time(_Value):
    value: Optional[Millis] = None


class Times(_Value):
    value: Optional[list[Millis]] = Field(None, max_length=MAX_RECORDS)


class Tokens(_Value):
    value: Optional[Count] = None


class Metrics(_Loose):
    """The record's metrics gpuparity reads (any other is ignored)."""

    time_to_first_token: Optional[Time] = None
    inter_chunk_latency: Optional[Times] = None
    request_latency: Optional[Time] = None
    input_sequence_length: Optional[Tokens] = None
    output_sequence_length: Optional[Tokens] = None
    http_req_chunks_received: Optional[Tokens] = None


class Meta(_Loose):
    request_start_ns: EpochNs
    request_end_ns: Optional[EpochNs] = None
    benchmark_phase: Optional[StrictStr] = Field(None, max_length=100)
    was_cancelled: Optional[StrictBool] = None


class Record(_Loose):
    metadata: Meta
    metrics: Optional[Metrics] = None
    error: Optional[dict[str, Any]] = None


def looks_like_summary(obj) -> bool:
    return isinstance(obj, dict) and "input_config" in obj and ("aiperf_version" in obj or "benchmark_duration" in obj
                                                                or "request_throughput" in obj)


def looks_like_records(first_line) -> bool:
    return isinstance(first_line, dict) and isinstance(first_line.get("metadata"), dict) and \
        "request_start_ns" in first_line["metadata"]


def siblings(path: str) -> tuple[str, str]:
    """(records, aggregate) paths of the export `path` is one of."""
    d, name = os.path.split(path)
    if name.endswith("_aiperf.json"):
        prefix = name[: -len("_aiperf.json")]
    else:
        prefix = name[: -len(".jsonl")] if name.endswith(".jsonl") else os.path.splitext(name)[0]
    return os.path.join(d, prefix + ".jsonl"), os.path.join(d, prefix + "_aiperf.json")


def read_records(data: bytes, path: str) -> list[Record]:
    from gpuparity.errors import UserError
    from gpuparity.validate import decode_text, parse, parse_json

    out = []
    for n, line in enumerate(decode_text(data, path).splitlines(), 1):
        if not line.strip():
            continue
        if len(out) >= MAX_RECORDS:
            raise UserError(f"{path}: more than {MAX_RECORDS} records")
        obj = parse_json(line, f"{path} line {n}")
        fields.no_infinity(obj, f"{path} line {n}")
        out.append(parse(Record, obj, f"{path} line {n}"))
    if not out:
        raise UserError(f"{path}: no aiperf records")
    return out


def _get(obj, *keys):
    for k in keys:
        if isinstance(obj, list):
            obj = obj[0] if obj else None
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj


def _positive(v) -> float | None:
    """A positive finite number (a rate, a concurrency) of the config, else None."""
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1e12
    return float(v) if ok else None


def _length(spec) -> int | None:
    """A fixed length (stddev 0) from {mean, stddev}, else None."""
    if not isinstance(spec, dict) or spec.get("stddev") not in (None, 0, 0.0):
        return None
    mean = spec.get("mean")
    return int(mean) if isinstance(mean, (int, float)) and not isinstance(mean, bool) and 0 < mean < 1e9 else None


def settings(config: dict) -> dict:
    """What the key needs from input_config, in aiperf 0.13's layout or the earlier one."""
    ep = config.get("endpoint") if isinstance(config.get("endpoint"), dict) else {}
    phases = [p for p in config.get("phases") or [] if isinstance(p, dict)]
    phase = next((p for p in phases if p.get("kind") == "profiling" or p.get("name") == "profiling"), {})
    loadgen = config.get("loadgen") if isinstance(config.get("loadgen"), dict) else {}
    rate = _positive(phase.get("request_rate") or phase.get("rate") or loadgen.get("request_rate"))
    conc = _positive(phase.get("concurrency") or loadgen.get("concurrency"))
    if rate:
        load: dict = {"request_rate": rate}
        if conc:
            load["max_concurrency"] = int(conc)
    else:
        load = {"concurrency": int(conc or 1)}
    extra = ep.get("extra") if isinstance(ep.get("extra"), dict) else _get(config, "input", "extra") or {}
    urls = [u for u in (ep.get("urls") if isinstance(ep.get("urls"), list) else [ep.get("url")]) if isinstance(u, str)]
    return {
        "endpoint": "chat" if "chat" in str(ep.get("type") or ep.get("endpoint_type") or "") else "completions",
        "ignore_eos": bool(extra.get("ignore_eos")) if isinstance(extra, dict) else False,
        "input_len": _length(_get(config, "datasets", "prompts", "isl")) or _length(
            _get(config, "input", "prompt", "input_tokens")),
        "output_len": _length(_get(config, "datasets", "prompts", "osl")) or _length(
            _get(config, "input", "prompt", "output_tokens")),
        "load": load, "url": str(urls[0]) if urls else None,
        "model": _text(_get(config, "models", "items", "name") or _get(ep, "model_names")),
        "tokenizer": _text(_get(config, "tokenizer", "name")),
    }


def _text(v) -> str | None:
    if isinstance(v, list):
        v = v[0] if v else None
    return v[:1000] if isinstance(v, str) else None


def _value(rec: Record, name: str, origin: str):
    """A record's metric; a time in ms whatever unit the record gives it in."""
    m = getattr(rec.metrics, name, None) if rec.metrics is not None else None
    if m is None or m.value is None or isinstance(m, Tokens):
        return m.value if m is not None else None
    if m.unit not in UNIT_MS:
        fields.refuse(origin, f"metrics.{name}.unit", f"{m.unit[:20]!r} is not a unit of time aiperf writes")
    scale = UNIT_MS[m.unit]
    return [v * scale for v in m.value] if isinstance(m.value, list) else m.value * scale


def convert(summary: dict | None, records: list[Record] | None, path: str, data: bytes,
            declared: common.Declared = common.NOTHING_DECLARED) -> dict:
    """The export as a run document (validated by the caller)."""
    from gpuparity.errors import UserError

    if summary is None and records is None:
        raise UserError(f"{path}: neither aiperf's records nor its aggregate")
    config = (summary or {}).get("input_config") if isinstance((summary or {}).get("input_config"), dict) else {}
    st = settings(config)
    version = str((summary or {}).get("aiperf_version") or "")[:40] or None
    measured = [r for r in records or [] if r.metadata.benchmark_phase in (None, "profiling")]
    stated = fields.figures({f"{name}.{stat}": v for name in (
        "time_to_first_token", "inter_token_latency", "inter_chunk_latency", "request_latency",
        "output_token_throughput", "request_throughput", "benchmark_duration", "total_osl", "total_isl",
        "request_count") for stat in ("avg", "p50", "p90", "p99", "std")
        if (v := _get(summary or {}, name, stat)) is not None}, f"{path}: the aggregate")
    window = _window((summary or {}).get("start_time"), (summary or {}).get("end_time"))
    if window:
        stated["window_s"] = window         # aiperf's rates are over its profiling window
    whole = bool(measured) and all(r.metadata.request_end_ns is not None for r in measured)
    n = len(measured) if whole else int(stated.get("request_count.avg") or 0) or 1
    params = common.point_params(st["endpoint"], st["ignore_eos"], st["input_len"], st["output_len"], st["load"], n)
    info = common.imported_info(TOOL, version, path, st["model"], st["url"], whole, stated,
                                {"tokenizer": st["tokenizer"], "had_aggregate": summary is not None})
    if whole:
        t0 = min(r.metadata.request_start_ns for r in measured)
        rows = []
        for i, r in enumerate(measured):
            ttft, gaps = _value(r, "time_to_first_token", path), _value(r, "inter_chunk_latency", path)
            ok = r.error is None and not r.metadata.was_cancelled and isinstance(ttft, (int, float))
            error = None if ok else str((r.error or {}).get("message") or (r.error or {}).get("type") or "cancelled")
            chunks = _value(r, "http_req_chunks_received", path)
            latency = _value(r, "request_latency", path) if ok else None      # to the last content response
            rows.append(common.row(i, ok, error, (r.metadata.request_start_ns - t0) / 1e9,
                                   (r.metadata.request_end_ns - t0) / 1e9, ttft / 1e3 if ok else None,
                                   [g / 1e3 for g in gaps] if ok and isinstance(gaps, list) else [],
                                   _value(r, "input_sequence_length", path), _value(r, "output_sequence_length", path),
                                   st["output_len"], None, chunks,
                                   (r.metadata.request_start_ns - t0) / 1e9 + latency / 1e3 if latency is not None
                                   else None))
        result = common.point_result(params, rows, f"{TOOL}: {st['tokenizer'] or st['model'] or 'its tokenizer'}",
                                     info, path, PERCENTILES, declared.gpus)
        started = common.iso(t0 / 1e9, path)
    else:
        result = common.stated_result(params, stated.get("output_token_throughput.avg"), stated, info, declared.gpus)
        started = _iso((summary or {}).get("start_time"))
    host = fields.url_parts(st["url"], path, "input_config.endpoint.urls")[1]
    return common.run_document(TOOL, version, path, data, started, [result], host, declared=declared)


def _window(start, end) -> float | None:
    """Seconds from the aggregate's start_time to its end_time (aiperf's observation window)."""
    try:
        span = (datetime.fromisoformat(str(end)) - datetime.fromisoformat(str(start))).total_seconds()
    except (ValueError, TypeError):
        return None
    return span if 0 < span <= fields.MAX_SECONDS else None


def _iso(text) -> str:
    try:
        when = datetime.fromisoformat(str(text))
    except ValueError:
        return common.iso(0)        # no date stated: the epoch (sorts oldest)
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).isoformat(timespec="seconds")
