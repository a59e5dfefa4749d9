"""The bounds a document is held to whatever the mode (results/recompute.py): dates no later than
now + CLOCK_SKEW; power at most MAX_W_PER_DEVICE per device; the work a built-in workload's params
give, and positive samples. Nothing can fix these: they are refused.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from gpuparity.errors import UserError
from gpuparity.results.recompute_checker import _Checker, _close, _num, _show

MAX_W_PER_DEVICE = 3000.0       # the largest accelerator modules draw ~1.4 kW; a few kW is not a GPU
CLOCK_SKEW = timedelta(days=1)


def check_dates(doc: dict, origin: str) -> None:
    """No date later than now plus the clock skew a machine may have (it would be 'latest' forever)."""
    limit = datetime.now(timezone.utc) + CLOCK_SKEW
    for field in ("started_at", "finished_at"):
        raw = doc.get(field)
        if not isinstance(raw, str):
            continue
        try:
            when = datetime.fromisoformat(raw)
        except ValueError:
            raise UserError(f"{origin}: {field} {raw[:40]!r} is not an ISO date and time") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        if when > limit:
            raise UserError(f"{origin}: {field} {raw[:40]} is in the future (more than a day past this "
                            "machine's clock)")


def _devices(doc: dict) -> int:
    fp = doc.get("fingerprint") or {}
    n = fp.get("device_count")
    world = ((fp.get("distributed") or {}).get("world_size"))
    counts = [c for c in (n, world) if isinstance(c, int) and not isinstance(c, bool) and c > 0]
    return max(counts, default=1)


def check_power(r: dict, devices: int, where: str, origin: str) -> None:
    """Mean power within what `devices` accelerators can draw, in the result and each trial."""
    limit = MAX_W_PER_DEVICE * max(devices, len(((r.get("telemetry") or {}).get("devices") or [])), 1)
    teles = [r.get("telemetry")] + [t.get("telemetry") for t in r.get("trials") or [] if isinstance(t, dict)]
    teles += list((r.get("telemetry") or {}).get("per_trial") or [])
    for tele in teles:
        if not isinstance(tele, dict):
            continue
        w = tele.get("mean_power_w")
        if isinstance(w, (int, float)) and not isinstance(w, bool) and w > limit:
            raise UserError(f"{origin}: {where}: telemetry.mean_power_w {w:.6g} W is more than {devices} "
                            f"device(s) can draw ({limit:g} W)")


def _work(r: dict, chk: _Checker, where: str) -> None:
    """The work a figure is timed against, and the samples it is timed from, as nothing can fix
    them (refused whatever the mode): a built-in workload's work (and each trial's) is what its
    params give (results/work.py); every time sample (and rate sample, and llm prefill sample) is
    positive, as a negative or zero one is no measurement (the median would just drop it); rate
    samples beside time samples are the rates those times give. A user's workload states work
    nothing here can check (`run` flags its results work_unchecked, results/work.py)."""
    from gpuparity.results.schema import primary_metric
    from gpuparity.results.work import work_problem

    problem = work_problem(r)
    if problem:
        chk.refuse(where, problem)
    metric, info = r.get("metric") or {}, r.get("info") or {}
    for field, values in (("samples", r.get("samples")), ("metric.samples", metric.get("samples")),
                          ("info.prefill_samples", info.get("prefill_samples"))):
        if values is None:
            continue
        bad = [v for v in values if _num(v) is None or v <= 0] if isinstance(values, list) else [values]
        if bad:
            chk.refuse(where, f"{field} holds {_show(bad[0])}: a time or rate measured is a positive number")
    pm = primary_metric(r.get("work") or {})
    if metric.get("samples") and r.get("samples") and pm:
        kind, _, scale = pm
        times, rates = r["samples"], metric["samples"]
        if len(rates) != len(times) or not all(_close(q, r["work"][kind] / t / scale) for q, t in zip(rates, times, strict=False)):
            chk.refuse(where, "metric.samples are not the rates its time samples and work give")
