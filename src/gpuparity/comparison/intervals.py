"""Student-t intervals of log ratios and their degrees of freedom (Welch-Satterthwaite, rounded
down to whole numbers). Distributions come from scipy.special (imported on first use: CLI start
stays fast).
"""

from __future__ import annotations

import numpy as np

LEVEL = 0.95


def _sp():
    import scipy.special

    return scipy.special


def whole_df(df: np.ndarray) -> np.ndarray:
    """Satterthwaite degrees of freedom rounded down to a whole number (below 1: as they are):
    rounding down is conservative, which matters where 1-df run effects dominate (2 runs a side)."""
    df = np.asarray(df, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(df) & (df >= 1), np.floor(np.where(np.isfinite(df), df, 1.0)), df)


def _per_distinct(fn, x: np.ndarray) -> np.ndarray:
    """fn over the distinct values of x only (degrees of freedom repeat: whole numbers, few runs)."""
    uniq, inv = np.unique(x, return_inverse=True)
    return fn(uniq)[inv.reshape(x.shape)] if len(uniq) < len(x) else fn(x)


def t_quantiles(p: float, df: np.ndarray) -> np.ndarray:
    """t(p, df) per element (df: whole_df; infinite: the normal); NaN where df is not positive."""
    df = whole_df(df)
    ok = df > 0
    out = np.full(df.shape, np.nan)
    if ok.any():
        out[ok] = _per_distinct(lambda d: _sp().stdtrit(d, p), df[ok])
    return out


def t_cdf(x: np.ndarray, df: np.ndarray) -> np.ndarray:
    """P(T_df <= x) per element (df: whole_df); NaN where x or df is unusable."""
    x, df = np.broadcast_arrays(np.asarray(x, dtype=float), whole_df(df))
    ok = np.isfinite(x) & (df > 0)
    out = np.full(x.shape, np.nan)
    if ok.any():
        out[ok] = _sp().stdtr(df[ok], x[ok])
    return out


def satterthwaite(*parts: tuple) -> np.ndarray:
    """Degrees of freedom of a sum of variance estimates (var, df) (Welch-Satterthwaite); terms
    with infinite df or no variance drop out of the denominator; all of them: infinite."""
    total = sum(np.asarray(v, dtype=float) for v, _ in parts)
    den = 0.0
    for v, d in parts:
        v, d = np.asarray(v, dtype=float), np.asarray(d, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            den = den + np.where(np.isfinite(d) & (d > 0) & (v > 0), v * v / np.where(d > 0, d, 1.0), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, total * total / np.where(den > 0, den, 1.0), np.inf)


def log_interval(log_ratio: np.ndarray, var: np.ndarray, df: np.ndarray, level: float = LEVEL):
    """(lo, hi) of exp(log_ratio +- t(df) sqrt(var)); NaN where the variance is unknown."""
    half = t_quantiles(1 - (1 - level) / 2, df) * np.sqrt(var)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.exp(log_ratio - half), np.exp(log_ratio + half)
