"""The adaptive stop rule and the cheap interval it watches.

The loop checks the rule after every batch of samples, while the device waits, so the interval
must cost microseconds: the distribution-free confidence interval of the median from order
statistics (the number of samples below the median is Binomial(n, 1/2)), one sort, no resampling.
Below 6 samples no pair of order statistics reaches 95%; the interval is then [min, max].
The result's own interval is the estimator's (measure.stats, results.figure), not this one.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

LEVEL = 0.95
EXACT_UP_TO = 1000       # exact binomial tail up to here, normal approximation above


@lru_cache(maxsize=4096)
def median_ci_ranks(n: int, level: float = LEVEL) -> tuple[int, int]:
    """0-based ranks (lo, n-1-lo) of the sorted samples that bound the median at `level`: the
    largest lo with 1 - 2 P(B <= lo) >= level, B ~ Binomial(n, 1/2) the samples below the median
    (0 when even the full range falls short, n < 6)."""
    if n < 1:
        raise ValueError("no samples")
    alpha = 1.0 - level
    if n <= EXACT_UP_TO:
        lo, cdf = 0, 2.0**-n                       # P(B <= 0)
        while lo + 1 < n // 2:
            nxt = cdf + math.comb(n, lo + 1) / 2.0**n
            if 2 * nxt > alpha:
                break
            lo, cdf = lo + 1, nxt
    else:  # normal approximation, one rank wider to stay on the safe side
        z = NormalDist().inv_cdf(1 - alpha / 2)
        lo = max(0, math.floor((n - z * math.sqrt(n)) / 2) - 1)
    return lo, n - 1 - lo


def median_rel_halfwidth(samples) -> float:
    """Half-width of the order-statistic CI of the median over the median (inf below 2 samples)."""
    n = len(samples)
    if n < 2:
        return float("inf")
    x = sorted(samples)
    med = x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2
    lo, hi = median_ci_ranks(n)
    return (x[hi] - x[lo]) / 2 / med if med > 0 else float("inf")


QUIET, MAX_SAMPLES, TIMEOUT = "quiet", "max_samples", "timeout"


def should_stop(samples, elapsed: float, cfg) -> str | None:
    """Why to stop now, or None to go on: quiet enough after the minimum count and time
    (QUIET); out of samples (MAX_SAMPLES); out of time with at least two samples (TIMEOUT).
    The last two stop short of the noise target only when the noise is above it."""
    n = len(samples)
    if n < cfg.min_samples and elapsed < cfg.max_time_s:
        return None
    noise = median_rel_halfwidth(samples)
    if n >= cfg.min_samples and elapsed >= cfg.min_time_s and noise <= cfg.target_noise:
        return QUIET
    if n >= max(cfg.max_samples, cfg.min_samples):
        return MAX_SAMPLES
    if elapsed >= cfg.max_time_s and n >= 2:
        return TIMEOUT
    return None
