"""The load each result was timed beside, per side, and what it does to the comparison.

A run document's machine.contention (platform/machine.py) grades how busy the CPUs were while each
result was timed: quiet below WIDEN_SHARE, busy up to BUSY_SHARE, contended above (flagged, no
faster/slower verdict). For a busy result this module gives compare
- `share`, per key of a side: the largest share over its runs, shown beside the figure in every
  view (rows' a_load / b_load, the side summary, the headline);
- `bias`, per key: a variance added to its estimate. A load s of the CPUs can slow a figure that
  needs them by up to s, log(1 / (1 - s)) on the log scale; the mean of that bound over the key's
  runs, squared, is added (with infinite df): the interval widens by about twice the slowdown
  such a load could cause, so a verdict that survives it does not rest on the load.
Documents graded before windows were recorded carry only the whole run's share (other_cpu_share):
it is regraded on today's thresholds, for every result of the run.
"""

from __future__ import annotations

import math

import numpy as np


def run_load(found) -> dict | None:
    """A run's machine.contention as {"contended", "reasons", "loaded": {key: share}, "share"
    (the run's), "windows", "grade"}; None when it says nothing (documents from before it was
    recorded, a quiet run)."""
    from gpuparity.platform.machine import BUSY_SHARE, WIDEN_SHARE

    if not isinstance(found, dict):
        return None
    reasons = [str(r) for r in found.get("reasons") or [] if isinstance(r, str)]
    loaded = {str(k): float(v) for k, v in (found.get("loaded") or {}).items()
              if isinstance(v, (int, float)) and math.isfinite(v) and 0 <= v <= 1} \
        if isinstance(found.get("loaded"), dict) else {}
    share = found.get("other_cpu_share")
    share = float(share) if isinstance(share, (int, float)) and math.isfinite(share) and 0 <= share <= 1 else None
    windows = found.get("windows") if isinstance(found.get("windows"), dict) else {}
    contended = bool(found.get("contended"))
    graded = "grade" in found
    if not graded and share is not None and share > BUSY_SHARE and not contended and "cpu" in (found.get("checked")
                                                                                                or ["cpu"]):
        contended = True          # an older document, regraded on today's threshold
        reasons.append(f"other processes used {100 * share:.0f}% of the CPUs during the run "
                       f"(no verdict above {100 * BUSY_SHARE:.0f}%)")
    whole = share if (not graded and share is not None and share >= WIDEN_SHARE) else None
    if not (contended or loaded or whole or windows.get("n")):
        return None
    return {"contended": contended, "reasons": reasons, "loaded": loaded, "share": share, "whole_run": whole,
            "windows": {k: windows.get(k) for k in ("n", "median", "max", "measure")},
            "grade": found.get("grade") if graded else ("contended" if contended else "busy" if whole else "quiet")}


def side_load(side) -> tuple[np.ndarray, np.ndarray]:
    """Per key of a side: (largest load share over its runs, NaN where none was recorded; the
    variance its interval gains for it, see the module notes)."""
    nk = len(side.keys)
    share, bound = np.full(nk, np.nan), np.zeros(nk)
    if not side.contention or not nk:
        return share, bound
    runs = side.u_run
    code, first = np.unique(side.u_key.astype(np.int64) * (len(side.runs) + 1) + runs, return_index=True)
    keys, run_of = side.u_key[first], runs[first]
    n_runs = np.bincount(keys, minlength=nk).astype(float)
    total = np.zeros(nk)
    for k, r in zip(keys.tolist(), run_of.tolist(), strict=True):
        rec = side.contention.get(side.runs[r]["run_id"]) if r < len(side.runs) else None
        if not rec:
            continue
        s = (rec.get("loaded") or {}).get(side.keys[k], rec.get("whole_run"))
        if s is None:
            continue
        share[k] = s if not np.isfinite(share[k]) else max(share[k], s)
        total[k] += -math.log1p(-min(float(s), 0.99))
    with np.errstate(invalid="ignore", divide="ignore"):
        bias = np.where(n_runs > 0, total / np.maximum(n_runs, 1), 0.0) ** 2
    return share, bias


def load_words(side, share: np.ndarray) -> str | None:
    """'CPU load beside its results: up to 12% of the CPUs (3 of 20 results at 5% or more:
    intervals widened)'; for a quiet side the largest window it read ('under 5% of the CPUs: at
    most 1% in 60 timed windows'); None where nothing was recorded."""
    from gpuparity.platform.machine import BUSY_SHARE, WIDEN_SHARE

    seen = share[np.isfinite(share)]
    recs = [r for r in side.contention.values() if r]
    windows = [r["windows"] for r in recs if (r.get("windows") or {}).get("n")]
    top = max(([float(seen.max())] if len(seen) else [])
              + [w["max"] for w in windows if isinstance(w.get("max"), (int, float))], default=None)
    if top is None and not side.contended:
        return None
    if side.contended:
        # each distinct reason once: two runs beside the same load say the same words
        reasons = dict.fromkeys(r for c in side.contended for r in c["reasons"][:1])
        return "CPU load beside its results: " + ("; ".join(reasons) or "contended") + ": no faster/slower verdict"
    busy = int((seen >= WIDEN_SHARE).sum())
    if not busy:
        n = sum(int(w["n"]) for w in windows)
        return (f"CPU load beside its results: under {100 * WIDEN_SHARE:.0f}% of the CPUs (at most {100 * top:.0f}% "
                f"in {n} timed window(s))")
    return (f"CPU load beside its results: up to {100 * top:.0f}% of the CPUs ({busy} of {len(side.keys)} "
            f"result(s) at {100 * WIDEN_SHARE:.0f}% or more: intervals widened; above {100 * BUSY_SHARE:.0f}%: "
            "no verdict)")
