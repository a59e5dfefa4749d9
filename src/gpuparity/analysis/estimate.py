"""Comparison statistics: per-key side estimates, ratio intervals, verdicts, joint geomeans.

The estimator (the README's "Statistics" repeats it):
- Unit: one trial of a key in one run (sides.py). Its figure v and log standard error se come
  from results/figure.py. Trials of different runs count alike (each is a fresh process).
- Side estimate per key: L = mean of log v over its units (the geometric mean; with one unit it
  is that unit's figure, the number the run table shows).
  Variance: n >= 2 units: s^2 / n with n - 1 degrees of freedom (s: sd of log v), so within-
  trial noise, drift and trial-to-trial spread are all inside it; n = 1: se^2 + floor^2 with
  infinite degrees of freedom, where floor is the run-to-run spread assumed for a single run
  (default 3%, --run-spread / GPUPARITY_RUN_SPREAD): one run cannot see its own spread.
- Ratio B/A per key: exp(L_B - L_A); 95% interval exp(log ratio +- t(df) sqrt(var_A + var_B)),
  df by Welch-Satterthwaite.
- Verdict: faster / slower when the whole interval lies beyond 1 +- tolerance, parity when it lies
  within, else inconclusive; a result flagged unstable on either side is at most inconclusive.
- Category (and overall) geometric mean of the keys' ratios: G = mean over keys of L, per side.
  When every key has >= 2 units, the keys are not treated as independent: each unit's residuals
  (log v - L) are averaged over the keys it holds (a trial is one machine state for every key),
  and var(G) = var(those unit means) / units, with units - 1 degrees of freedom. When some key has
  one unit: var(G) = sum of the keys' within variances / K^2 + floor^2 (the assumed run-to-run
  shift moves every key of the run together).
"""

from __future__ import annotations

import math

import numpy as np

from gpuparity.measure.stats import t_quantile

LEVEL = 0.95
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


def key_estimates(side, floor: float) -> tuple[np.ndarray, ...]:
    """Per key of a side: (value, L = mean log figure, its variance, degrees of freedom, units).
    value = exp(L), except that one unit's value is its figure as stored (the run table's number)."""
    n_keys = len(side.keys)
    logs = np.log(side.u_value)
    n = np.bincount(side.u_key, minlength=n_keys).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(side.u_key, weights=logs, minlength=n_keys) / n
        dev = logs - mean[side.u_key]
        ss = np.bincount(side.u_key, weights=dev * dev, minlength=n_keys)
        single_se = np.bincount(side.u_key, weights=np.where(n[side.u_key] == 1, side.u_se, 0.0), minlength=n_keys)
        var = np.where(n >= 2, ss / np.maximum(n - 1, 1) / n, single_se ** 2 + floor ** 2)
    first = np.zeros(n_keys, dtype=np.int64)
    first[side.u_key[::-1]] = np.arange(len(side.u_key))[::-1]
    value = np.where(n == 1, side.u_value[first], np.exp(mean)) if n_keys else mean
    df = np.where(n >= 2, n - 1, np.inf)
    return value, mean, var, df, n


def welch_df(va: np.ndarray, dfa: np.ndarray, vb: np.ndarray, dfb: np.ndarray) -> np.ndarray:
    """Welch-Satterthwaite degrees of freedom of var_A + var_B (infinite df terms drop out)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.where(np.isinf(dfa), 0.0, va * va / dfa) + np.where(np.isinf(dfb), 0.0, vb * vb / dfb)
        return np.where(den > 0, (va + vb) ** 2 / den, np.inf)


def t_quantiles(p: float, df: np.ndarray) -> np.ndarray:
    """t(p, df) per element; df rounded down to a quarter (conservative) so few distinct values
    need the exact routine."""
    df = np.asarray(df, dtype=float)
    out = np.full(df.shape, np.nan)
    finite = np.isfinite(df) & (df > 0)
    out[np.isinf(df)] = t_quantile(p, math.inf)
    if finite.any():
        rounded = np.maximum(np.floor(df[finite] * 4) / 4, 0.25)
        uniq, inv = np.unique(rounded, return_inverse=True)
        out[finite] = np.array([t_quantile(p, float(d)) for d in uniq])[inv]
    return out


def log_interval(log_ratio: np.ndarray, var: np.ndarray, df: np.ndarray, level: float = LEVEL):
    """(lo, hi) of exp(log_ratio +- t(df) sqrt(var)); NaN where the variance is unknown."""
    half = t_quantiles(1 - (1 - level) / 2, df) * np.sqrt(var)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.exp(log_ratio - half), np.exp(log_ratio + half)


def side_geomean(side, keys: np.ndarray, est: tuple, floor: float) -> tuple[float, float, float]:
    """(G, var(G), df) of a side over the given key indices (see the module notes)."""
    _, mean, var, _, n = est
    k = len(keys)
    g = float(mean[keys].mean())
    if n[keys].min() >= 2:
        chosen = np.zeros(len(side.keys), dtype=bool)
        chosen[keys] = True
        sel = chosen[side.u_key]
        resid = np.log(side.u_value[sel]) - mean[side.u_key[sel]]
        ids, inv = np.unique(side.u_id[sel], return_inverse=True)
        unit_mean = np.bincount(inv, weights=resid) / np.bincount(inv)
        if len(ids) >= 2:
            return g, float(unit_mean.var(ddof=1)) / len(ids), float(len(ids) - 1)
    within = np.where(n[keys] >= 2, var[keys], var[keys] - floor ** 2)
    return g, float(within.sum()) / (k * k) + floor ** 2, math.inf


def geomean_ratio(a, b, ka: np.ndarray, kb: np.ndarray, est_a: tuple, est_b: tuple, floor: float,
                  level: float = LEVEL) -> tuple[float, float, float]:
    """Geometric mean of B/A over matched keys (ka[j] on A is kb[j] on B) and its interval."""
    ga, va, dfa = side_geomean(a, ka, est_a, floor)
    gb, vb, dfb = side_geomean(b, kb, est_b, floor)
    df = welch_df(np.array([va]), np.array([dfa]), np.array([vb]), np.array([dfb]))
    lo, hi = log_interval(np.array([gb - ga]), np.array([va + vb]), df, level)
    return math.exp(gb - ga), float(lo[0]), float(hi[0])
