"""Comparison statistics: per-key estimates and their variances, intervals, verdicts."""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np

LEVEL = 0.95


DRAWS = 20000


SEED = 20240601


VERDICTS = ("faster", "parity", "slower", "inconclusive")


def verdict(ci_low: float | None, ci_high: float | None, tolerance: float = 0.05) -> str:
    """faster / parity / slower / inconclusive for a CI of the ratio B/A."""
    if ci_low is None or ci_high is None or not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return "inconclusive"
    lo_bound, hi_bound = 1.0 - tolerance, 1.0 + tolerance
    if ci_low > hi_bound:
        return "faster"
    if ci_high < lo_bound:
        return "slower"
    if ci_low >= lo_bound and ci_high <= hi_bound:
        return "parity"
    return "inconclusive"


def verdicts(ci_low: np.ndarray, ci_high: np.ndarray, tolerance: float) -> np.ndarray:
    """Vectorised `verdict`: indices into VERDICTS."""
    lo, hi = 1.0 - tolerance, 1.0 + tolerance
    with np.errstate(invalid="ignore"):
        return np.select([ci_low > hi, ci_high < lo, (ci_low >= lo) & (ci_high <= hi)], [0, 2, 1], 3)


def _median_pattern(n: int, draws: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """0-based indices (lo, hi) of the two middle order statistics of n draws with replacement
    from n sorted items, one pair per draw (lo == hi for odd n)."""
    k = (n + 1) // 2 if n % 2 else n // 2
    u_lo = rng.beta(k, n - k + 1, size=draws)
    lo = np.minimum((u_lo * n).astype(np.int64), n - 1)
    if n % 2:
        return lo, lo
    u_hi = u_lo + (1.0 - u_lo) * rng.beta(1, n - k, size=draws)
    return lo, np.minimum((u_hi * n).astype(np.int64), n - 1)


@lru_cache(maxsize=4096)
def median_weights(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (lo, hi) order-statistic pairs of a bootstrap median of n samples and their weights."""
    lo, hi = _median_pattern(n, DRAWS, np.random.default_rng([SEED, n]))
    codes, counts = np.unique(lo * n + hi, return_counts=True)
    return codes // n, codes % n, counts / DRAWS


def log_median_stats(flat: np.ndarray, owner: np.ndarray, n_keys: int) -> tuple[np.ndarray, ...]:
    """Per key: median, bootstrap variance of the log median (NaN for n < 2), and sample count."""
    if len(owner) > 1 and np.any(owner[1:] < owner[:-1]):     # pooled runs: group each key's samples
        order = np.argsort(owner, kind="stable")
        flat, owner = flat[order], owner[order]
    counts = np.bincount(owner, minlength=n_keys)
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    median = np.full(n_keys, np.nan)
    var = np.full(n_keys, np.nan)
    for n in np.unique(counts[counts > 0]):
        n = int(n)
        keys = np.nonzero(counts == n)[0]
        lo, hi, w = median_weights(n) if n > 1 else (None, None, None)
        step = max(1, 2_000_000 // (n + (len(w) if w is not None else 0)))
        for i in range(0, len(keys), step):
            sel = keys[i:i + step]
            xs = np.sort(flat[offsets[sel][:, None] + np.arange(n)[None, :]], axis=1)   # (g, n)
            median[sel] = (xs[:, (n - 1) // 2] + xs[:, n // 2]) / 2
            if n < 2:
                continue
            lx = np.log(xs)
            lx -= lx[:, [n // 2]]                     # centre: no cancellation in E[v^2] - E[v]^2
            v = (lx[:, lo] + lx[:, hi]) * 0.5         # log median of each distinct resample pattern
            m = v @ w
            var[sel] = np.maximum((v * v) @ w - m * m, 0.0)
    return median, var, counts


def geomean(ratios: np.ndarray, log_vars: np.ndarray, level: float = LEVEL) -> tuple[float, float, float]:
    """Geometric mean of ratios and its CI from the keys' log-ratio bootstrap variances."""
    logs = np.log(ratios)
    mean = float(logs.mean())
    half = NormalDist().inv_cdf(1 - (1 - level) / 2) * math.sqrt(float(log_vars.sum())) / len(logs)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)
