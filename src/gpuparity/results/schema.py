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

from gpuparity.version import BENCHMARK_VERSION, SCHEMA_VERSION, __version__

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
        "label": None,
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
    """A short name for the software stack: 'rocm 6.2.4', 'cuda 12.4', 'cpu'; a run imported from a
    peer's file has the stack declared at import (`import --platform`) or 'unknown', never 'cpu'."""
    if isinstance(fp.get("stack"), str) and fp["stack"]:
        return fp["stack"]
    if fp.get("hip_version") or fp.get("rocm_version"):
        return f"rocm {fp.get('rocm_version') or fp.get('hip_version')}"
    if fp.get("cuda_version") and fp.get("backend") == "cuda":
        return f"cuda {fp['cuda_version']}"
    if str(fp.get("product") or "").startswith("unknown (imported"):     # imported before stacks were declared
        return "unknown"
    return "cpu"


MAX_DOC_BYTES = 256 * 1024 * 1024  # GPUPARITY_MAX_IMPORT_BYTES overrides (tests use a small one)


def finite_json(obj: Any) -> Any:
    """The object with every NaN or infinity replaced by None: a run document is strict JSON
    (other tools, and this one on import, refuse NaN literals)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj
