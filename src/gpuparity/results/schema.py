"""The run document: the JSON that the store holds and machines exchange.

A run = fingerprint of the platform + a list of results. A result keeps its raw samples
(seconds per invocation), the work one invocation does, and figures derived from both.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from datetime import datetime, timezone
from typing import Any

from gpuparity import BENCHMARK_VERSION, SCHEMA_VERSION, __version__
from gpuparity.errors import UserError

STATUSES = ("ok", "skipped", "failed")
CATEGORIES = ("kernel", "model", "serving", "comm")
# Throughput units derived from work per second; value = amount / seconds / scale.
UNITS = {
    "flop": ("TFLOP/s", 1e12),
    "bytes": ("GB/s", 1e9),
    "tokens": ("tokens/s", 1.0),
    "items": ("items/s", 1.0),
}


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8]


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def result_key(workload: str, params: dict, dtype: str | None) -> str:
    """Stable key that matches the same measurement across runs and machines."""
    return hashlib.sha1(canonical([workload, params, dtype]).encode()).hexdigest()[:16]


def new_run(fingerprint: dict, argv: list[str] | None = None) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "benchmark_version": BENCHMARK_VERSION,
        "gpuparity_version": __version__,
        "run_id": new_run_id(),
        "started_at": now_iso(),
        "finished_at": None,
        "status": "running",
        "host": fingerprint.get("host", "unknown"),
        "argv": argv or [],
        "fingerprint": fingerprint,
        "spec_id": (fingerprint.get("spec") or {}).get("id"),
        "results": [],
    }


def new_result(workload: str, category: str, params: dict, dtype: str | None) -> dict:
    return {
        "workload": workload,
        "category": category,
        "params": params,
        "dtype": dtype,
        "key": result_key(workload, params, dtype),
        "status": "ok",
        "reason": None,
        "samples": [],
        "summary": None,
        "work": {},
        "metric": None,
        "derived": {},
        "telemetry": None,
        "flags": [],
        "info": {},
    }


def mark(result: dict, status: str, reason: str) -> dict:
    assert status in STATUSES
    result["status"] = status
    result["reason"] = reason
    return result


def primary_metric(work: dict) -> tuple[str, str, float] | None:
    """(work kind, unit, scale) of the figure a result is compared on."""
    for kind in ("tokens", "flop", "bytes", "items"):
        if work.get(kind):
            unit, scale = UNITS[kind]
            return kind, unit, scale
    return None


def metric_samples(result: dict) -> list[float]:
    """Throughput per raw sample, the unit of `metric`: what comparisons bootstrap over."""
    metric = result.get("metric") or {}
    if metric.get("samples"):
        return [float(v) for v in metric["samples"]]
    pm = primary_metric(result.get("work") or {})
    if pm is None:
        return []
    kind, _, scale = pm
    amount = result["work"][kind]
    return [amount / s / scale for s in result.get("samples") or [] if s and s > 0]


def run_stack(fp: dict) -> str:
    """A short name for the software stack: 'rocm 6.2.4', 'cuda 12.4', 'cpu'."""
    if fp.get("hip_version") or fp.get("rocm_version"):
        return f"rocm {fp.get('rocm_version') or fp.get('hip_version')}"
    if fp.get("cuda_version") and fp.get("backend") == "cuda":
        return f"cuda {fp['cuda_version']}"
    return "cpu"


MAX_DOC_BYTES = 256 * 1024 * 1024  # GPUPARITY_MAX_IMPORT_BYTES overrides (tests use a small one)


def validate_run(doc: Any, origin: str = "document") -> dict:
    """Raise UserError (one line) unless doc is a run document this version can store."""
    if not isinstance(doc, dict):
        raise UserError(f"{origin}: not a gpuparity run document (top level is not an object)")
    version = doc.get("schema_version")
    if version is None:
        raise UserError(f"{origin}: not a gpuparity run document (no schema_version)")
    if version != SCHEMA_VERSION:
        raise UserError(f"{origin}: schema_version {version!r} is not supported (expected {SCHEMA_VERSION})")
    for field, kind in (("run_id", str), ("fingerprint", dict), ("results", list), ("started_at", str)):
        if not isinstance(doc.get(field), kind):
            raise UserError(f"{origin}: field '{field}' is missing or not a {kind.__name__}")
    first: dict[str, int] = {}
    for i, res in enumerate(doc["results"]):
        if not isinstance(res, dict):
            raise UserError(f"{origin}: result {i} is not an object")
        for field in ("workload", "key", "status"):
            if not isinstance(res.get(field), str):
                raise UserError(f"{origin}: result {i} has no '{field}'")
        if first.setdefault(res["key"], i) != i:     # the store holds one result per key and run
            raise UserError(f"{origin}: result {i} repeats the key of result {first[res['key']]} ({res['workload']})")
        if res["status"] not in STATUSES:
            raise UserError(f"{origin}: result {i} has unknown status {res['status']!r}")
        samples = res.get("samples", [])
        if not isinstance(samples, list) or not all(
            isinstance(s, (int, float)) and math.isfinite(s) for s in samples
        ):
            raise UserError(f"{origin}: result {i} ({res['workload']}) has invalid samples")
    return doc


def load_run_file(path: str) -> dict:
    """Read and validate an exported run; every problem is a one-line UserError."""
    import os

    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    limit = int(os.environ.get("GPUPARITY_MAX_IMPORT_BYTES", MAX_DOC_BYTES))
    if size > limit:
        raise UserError(f"{path}: {size} bytes is over the {limit}-byte limit for a run file")
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg}); truncated?") from None
    return validate_run(doc, path)
