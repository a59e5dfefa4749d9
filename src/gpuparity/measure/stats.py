"""Statistics of raw samples: summaries (median, mean, p10/p90, bootstrap 95% CI, relative noise),
the standard error of a log median (order statistics, drift-inflated), Student-t quantiles
(scipy.special).

These are the estimator's building blocks; results/figure.py turns them into a result's figure
and comparison/estimate.py into comparisons.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
DRAWS = 20000            # draws of the bootstrap median's order-statistic pattern, once per n
SEED = 20240601
MAX_AR1 = 0.95           # lag-1 autocorrelation used for the drift inflation is clipped here
MIN_AR1_SAMPLES = 10     # below this, a lag-1 estimate is noise: no inflation (trials carry the spread)


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


# -- the standard error of a log median --------------------------------------------------------
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
    """Distinct (lo, hi) order-statistic pairs of a bootstrap median of n samples and their weights.

    For n sorted samples the median of a bootstrap resample is the mean of two order statistics
    whose indices depend only on n, so their distribution is drawn once per n (Beta order
    statistics of uniforms) and applied to any sample set of that size as weights: the bootstrap
    variance of the median without resampling each set."""
    lo, hi = _median_pattern(n, DRAWS, np.random.default_rng([SEED, n]))
    codes, counts = np.unique(lo * n + hi, return_counts=True)
    return codes // n, codes % n, counts / DRAWS


def ar1_inflation(lags: np.ndarray, n: np.ndarray | int) -> np.ndarray:
    """Variance inflation (1 + r) / (1 - r) for lag-1 autocorrelation r (clipped to [0, MAX_AR1]):
    consecutive samples that drift together carry less information than independent ones."""
    r = np.clip(np.nan_to_num(np.asarray(lags, dtype=float), nan=0.0), 0.0, MAX_AR1)
    return np.where(np.asarray(n) >= MIN_AR1_SAMPLES, (1 + r) / (1 - r), 1.0)


def lag1(x: np.ndarray) -> float:
    """Lag-1 autocorrelation of a sample series in measurement order (0 for fewer than 4), with
    Kendall's small-sample bias correction r + (1 + 3r) / n (the plain estimate is biased low
    by about that much, which would understate drift in short trials)."""
    x = np.asarray(x, dtype=float)
    if x.size < 4:
        return 0.0
    d = x - x.mean()
    den = float(d @ d)
    r = float(d[1:] @ d[:-1]) / den if den > 0 else 0.0
    return r + (1 + 3 * r) / x.size


def log_median_se(samples) -> float:
    """Standard error of log(median) of samples in measurement order: the order-statistic
    bootstrap standard deviation, inflated for drift (AR(1)). NaN for fewer than 2 samples."""
    x = np.asarray([v for v in samples if v > 0], dtype=float)
    n = x.size
    if n < 2:
        return float("nan")
    lo, hi, w = median_weights(n)
    lx = np.log(np.sort(x))
    lx -= lx[n // 2]
    v = (lx[lo] + lx[hi]) * 0.5
    m = float(v @ w)
    var = max(float((v * v) @ w) - m * m, 0.0)
    return math.sqrt(var * float(ar1_inflation(lag1(np.log(x)), n)))


def log_median_se_many(flat: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """log_median_se (without the drift term) of many sample sets at once: set i is the next
    counts[i] values of flat. Sets of one size share one order-statistic weight pattern."""
    counts = np.asarray(counts, dtype=np.int64)
    out = np.full(len(counts), np.nan)
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    for n in np.unique(counts[counts > 1]).tolist():
        sets = np.nonzero(counts == n)[0]
        lo, hi, w = median_weights(n)
        step = max(1, 2_000_000 // (n + len(w)))
        for i in range(0, len(sets), step):
            sel = sets[i:i + step]
            with np.errstate(invalid="ignore", divide="ignore"):
                lx = np.log(np.sort(flat[offsets[sel][:, None] + np.arange(n)[None, :]], axis=1))
            lx -= lx[:, [n // 2]]                 # centre: no cancellation in E[v^2] - E[v]^2
            v = (lx[:, lo] + lx[:, hi]) * 0.5     # log median of each distinct resample pattern
            m = v @ w
            out[sel] = np.sqrt(np.maximum((v * v) @ w - m * m, 0.0))
    return out


# -- Student-t quantiles -----------------------------------------------------------------------
@lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df > 0 degrees of freedom (df may be fractional; df = inf
    gives the normal quantile). scipy.special, imported on first use: CLI start stays fast."""
    from scipy.special import ndtri, stdtrit

    return float(ndtri(p) if math.isinf(df) else stdtrit(df, p))
