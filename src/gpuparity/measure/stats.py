"""Summaries of raw samples: median, mean, p10/p90, bootstrap 95% CI, relative noise."""

from __future__ import annotations

import numpy as np

BOOTSTRAP_RESAMPLES = 2000


def bootstrap_ci(samples, stat=np.median, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of `stat` (vectorised: one resample matrix)."""
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        return float("nan"), float("nan")
    if x.size == 1:
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(resamples, x.size))
    stats = stat(x[idx], axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(stats, [alpha, 1 - alpha])
    return float(lo), float(hi)


def relative_noise(samples) -> float:
    """Half-width of the 95% CI of the median over the median: what the adaptive stop watches."""
    x = np.asarray(samples, dtype=float)
    if x.size < 2:
        return float("inf")
    med = float(np.median(x))
    lo, hi = bootstrap_ci(x, resamples=500)
    return (hi - lo) / 2 / med if med > 0 else float("inf")


def summarize(samples) -> dict:
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        return {"n": 0}
    med = float(np.median(x))
    lo, hi = bootstrap_ci(x)
    return {
        "n": int(x.size),
        "median": med,
        "mean": float(x.mean()),
        "std": float(x.std(ddof=1)) if x.size > 1 else 0.0,
        "min": float(x.min()),
        "max": float(x.max()),
        "p10": float(np.quantile(x, 0.10)),
        "p90": float(np.quantile(x, 0.90)),
        "ci_low": lo,
        "ci_high": hi,
        "rel_noise": (hi - lo) / 2 / med if med > 0 else float("inf"),
    }
