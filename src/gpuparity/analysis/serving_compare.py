"""Serving results compared at equal interactivity (tokens/s per user) along each side's
best-throughput (Pareto) curve."""

from __future__ import annotations

import math

import numpy as np

from gpuparity.analysis.estimate import verdict
from gpuparity.analysis.sides import Side


def _serving_points(side: Side) -> dict[str, list[tuple[float, float]]]:
    curves: dict[str, list] = {}
    for i, extra in side.extras.items():
        info = extra.get("info") or {}
        s = info.get("serving") or {}
        x, y, ckey = s.get("interactivity"), s.get("throughput_per_gpu"), info.get("curve_key")
        failures = (s.get("errors") or 0) + (s.get("timeouts") or 0)
        if side.meta[i][1] != "serving" or not ckey or x is None or y is None or failures > 0:
            continue
        curves.setdefault(str(ckey), []).append((float(x), float(y)))
    return curves


def pareto(points: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Best throughput reachable at or above each interactivity: x ascending, y non-increasing."""
    xs, ys, best = [], [], -math.inf
    for x, y in sorted(points, key=lambda p: (-p[0], -p[1])):
        if y > best:
            xs.append(x)
            ys.append(y)
            best = y
    return np.array(xs[::-1]), np.array(ys[::-1])


def serving_at_equal_interactivity(a: Side, b: Side, tolerance: float = 0.05, levels: int = 5) -> list[dict]:
    """Throughput per GPU of B over A at equal tokens/s per user, along each side's Pareto curve
    (linear interpolation of the monotone envelope), at levels spread over the shared range.
    Point estimates (one measurement per concurrency): the verdict uses the point alone. Points
    with request errors or timeouts are left out of the curves."""
    pa, pb = _serving_points(a), _serving_points(b)
    out = []
    for ckey in sorted(set(pa) & set(pb)):
        xa, ya = pareto(pa[ckey])
        xb, yb = pareto(pb[ckey])
        lo, hi = max(xa[0], xb[0]), min(xa[-1], xb[-1])
        if not (lo > 0 and hi >= lo):
            out.append({"curve_key": ckey, "interactivity": None, "note": "interactivity ranges do not overlap"})
            continue
        for x in (np.unique(np.geomspace(lo, hi, levels)) if hi > lo else [lo]):
            ta, tb = float(np.interp(x, xa, ya)), float(np.interp(x, xb, yb))
            ratio = tb / ta if ta > 0 else None
            out.append({"curve_key": ckey, "interactivity": float(x), "a_throughput": ta, "b_throughput": tb,
                        "ratio": ratio, "verdict": verdict(ratio, ratio, tolerance) if ratio else "inconclusive"})
    return out


def serving_curves(side: Side) -> dict[str, dict]:
    """Raw points and the Pareto envelope per curve key (for plots)."""
    out = {}
    for ckey, pts in _serving_points(side).items():
        xs, ys = pareto(pts)
        out[ckey] = {"points": sorted(pts), "pareto": [[x, y] for x, y in zip(xs.tolist(), ys.tolist(), strict=True)]}
    return out
