"""The serving envelope and the comparison at equal interactivity, in one place: the math the
comparison (comparison/serving_compare.py, with its intervals), the report's charts and any other
view of serving points (InferenceX rows) share.

A point is (interactivity, throughput): tokens/s per user against tokens/s per GPU (or per
server). A side's envelope over every run and configuration (TP, EP, precision, engine, load) is
its best throughput reachable at or above each interactivity (the Pareto frontier, as InferenceX
draws it); between its points it is read by linear interpolation. Two envelopes compare at the
interactivity levels both cover; where their ranges do not overlap there is no level to compare
at, and `closing_loads` says which loads (concurrencies, rates) would make them overlap, read off
each side's own sweep (interactivity against load is close to a power law along a sweep: a
least-squares line on the log-log scale, extrapolated to the other side's range).

    env_a, env_b = envelope(points_a), envelope(points_b)
    rows = compare_at_interactivity(env_a, env_b, 5)        # or a list of levels

Each point may come from another configuration: `envelope_index` says which points make the
envelope and `sources_at` which configuration gives it at each level (InferenceX labels its
envelope's points with their configurations).
"""

from __future__ import annotations

import math

import numpy as np


def envelope(points) -> tuple[np.ndarray, np.ndarray]:
    """The best throughput reachable at or above each interactivity: (x ascending, y non-increasing)
    over `points`, an iterable of (interactivity, throughput) pairs (any extra fields ignored)."""
    pts = [(float(p[0]), float(p[1])) for p in points]
    on = envelope_index(pts)
    return np.array([pts[i][0] for i in on]), np.array([pts[i][1] for i in on])


def envelope_index(points: list) -> list[int]:
    """Which of `points` (a list of (interactivity, throughput)) make the envelope, in its order
    (interactivity ascending): what names the configuration that gives the envelope at a level."""
    out, best = [], -math.inf
    for i in sorted(range(len(points)), key=lambda i: (-float(points[i][0]), -float(points[i][1]))):
        if float(points[i][1]) > best:
            out.append(i)
            best = float(points[i][1])
    return out[::-1]


def sources_at(xs: np.ndarray, names: list, levels) -> list:
    """Per level, what gives the envelope there: the name of its point at that interactivity, the
    one name of the two points it is read between, or "between X and Y" where they differ (None
    outside the envelope). xs: the envelope's interactivities (ascending), names: one per point."""
    out = []
    for x in np.asarray(levels, dtype=float).tolist():
        if not len(xs) or x < xs[0] or x > xs[-1]:
            out.append(None)
            continue
        j = int(np.searchsorted(xs, x))
        lo, hi = names[max(j - 1, 0)], names[j]
        out.append(hi if xs[j] == x or lo == hi else f"between {lo} and {hi}")
    return out


def throughput_at(env: tuple[np.ndarray, np.ndarray], levels) -> np.ndarray:
    """The envelope's throughput at each interactivity level (NaN outside its range)."""
    xs, ys = env
    levels = np.asarray(levels, dtype=float)
    if not len(xs):
        return np.full(levels.shape, np.nan)
    out = np.interp(levels, xs, ys)
    return np.where((levels >= xs[0]) & (levels <= xs[-1]), out, np.nan)


def overlap(env_a, env_b) -> tuple[float, float] | None:
    """(lowest, highest) interactivity both envelopes cover, None where they do not overlap."""
    if not len(env_a[0]) or not len(env_b[0]):
        return None
    lo, hi = max(env_a[0][0], env_b[0][0]), min(env_a[0][-1], env_b[0][-1])
    return (float(lo), float(hi)) if lo > 0 and hi >= lo else None


def levels_between(lo: float, hi: float, n: int) -> np.ndarray:
    """n interactivity levels spread geometrically over [lo, hi] (one where they are one)."""
    return np.unique(np.geomspace(lo, hi, n)) if hi > lo else np.array([lo])


def compare_at_interactivity(env_a, env_b, levels=5) -> list[dict]:
    """B's throughput over A's at equal interactivity: per level {"interactivity", "a", "b",
    "ratio"}. levels: how many, spread over the range both cover, or the levels themselves (a
    level outside either envelope has a, b or ratio None). Empty where the ranges do not overlap
    and levels is a count (closing_loads says what would make them overlap)."""
    if isinstance(levels, int):
        span = overlap(env_a, env_b)
        if span is None:
            return []
        at = levels_between(*span, levels)
    else:
        at = np.asarray(levels, dtype=float)
    ta, tb = throughput_at(env_a, at), throughput_at(env_b, at)
    out = []
    for x, a, b in zip(at.tolist(), ta.tolist(), tb.tolist(), strict=True):
        a, b = (None if math.isnan(v) else v for v in (a, b))
        out.append({"interactivity": x, "a": a, "b": b, "ratio": b / a if a and b is not None else None})
    return out


def _fit(sweep: list[tuple[float, float]]) -> tuple[float, float] | None:
    """(intercept, slope) of log interactivity against log load over a sweep; None with fewer
    than two loads or a slope that does not fall (more load, more interactivity: no trend to read)."""
    pts = [(math.log(c), math.log(x)) for c, x in sweep if c and x and c > 0 and x > 0]
    if len({p[0] for p in pts}) < 2:
        return None
    lc, lx = np.array(pts).T
    slope, intercept = np.polyfit(lc, lx, 1)
    return (float(intercept), float(slope)) if slope < 0 else None


def _power_of_two(c: float, up: bool) -> int:
    """The sweep value to try: the power of two at or beyond c (up: above, else below; at least 1)."""
    if c <= 1:
        return 1
    e = math.log2(c)
    return int(2 ** (math.ceil(e - 1e-9) if up else math.floor(e + 1e-9)))


def closing_loads(sweep_a: list[tuple[float, float]], sweep_b: list[tuple[float, float]], load: str = "c") -> str:
    """Why two sides' interactivity ranges do not overlap and which loads would make them: each
    sweep is [(load, interactivity)] of one side (load: concurrency or request rate, `load` its
    name). The side with the lower interactivity needs a lighter load (fewer users at once), the
    other a heavier one; each side's needed load is read off its own sweep's log-log trend."""
    xa = [x for _, x in sweep_a if x]
    xb = [x for _, x in sweep_b if x]
    if not xa or not xb:
        return "no common level: a side has no point with an interactivity"
    low, high = ("A", "B") if max(xa) < min(xb) else ("B", "A")
    sweeps = {"A": sweep_a, "B": sweep_b}
    top_low = max(x for _, x in sweeps[low] if x)
    bottom_high = min(x for _, x in sweeps[high] if x)
    text = (f"no common level: {low} reaches at most {top_low:.3g} tok/s per user, {high} at least "
            f"{bottom_high:.3g}")
    ways = []
    fit = _fit(sweeps[low])
    if fit:
        need = math.exp((math.log(bottom_high) - fit[0]) / fit[1])
        if need >= 1 or load != "c":
            ways.append(f"{low} at {load}<={_power_of_two(need, False) if load == 'c' else f'{need:.3g}'}")
        else:
            text += (f"; {low} cannot reach it by a lighter load (at {load}=1 its trend gives "
                     f"{math.exp(fit[0]):.3g} tok/s per user)")
    fit = _fit(sweeps[high])
    if fit:
        need = math.exp((math.log(top_low) - fit[0]) / fit[1])
        ways.append(f"{high} at {load}>={_power_of_two(need, True) if load == 'c' else f'{need:.3g}'}")
    if not ways:
        return text + f"; run {low} at a lighter load or {high} at a heavier one (too few loads to read a trend)"
    return text + "; to overlap, run " + ", or ".join(ways)
