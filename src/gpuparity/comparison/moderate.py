"""limma's moderation of variances, robustly (module notes of comparison/priors.py; used by
comparison/estimate.py for a side's own runs and by comparison/history.py for a store's)."""

from __future__ import annotations

import numpy as np

OUTLIER_Q = 0.1            # BH level at which a key's variance is an outlier of its group
ROBUST_ROUNDS = 4
TRIM = 0.2                 # share of a group's largest variances left out of the first fit
TINY = 1e-12


def _sp():
    import scipy.special

    return scipy.special


def trigamma_inverse(x: np.ndarray) -> np.ndarray:
    """y with trigamma(y) = x (limma's Newton iteration), element-wise, x > 0."""
    sp = _sp()
    x = np.asarray(x, dtype=float)
    y = 0.5 + 1.0 / x
    for _ in range(50):
        tri = sp.polygamma(1, y)
        dif = tri * (1 - tri / x) / sp.polygamma(2, y)
        y = y + dif
        if np.all(-dif / y < 1e-8):
            break
    return np.where(x > 1e7, 1 / np.sqrt(x), np.where(x < 1e-6, 1 / x, y))


def _per_distinct(fn, x: np.ndarray) -> np.ndarray:
    """fn over the distinct values of x only (degrees of freedom repeat)."""
    uniq, inv = np.unique(x, return_inverse=True)
    return fn(uniq)[inv.reshape(x.shape)] if len(uniq) < len(x) else fn(x)


def _fit(z: np.ndarray, d: np.ndarray, g: np.ndarray, use: np.ndarray, n_groups: int, cap: np.ndarray):
    """(s0^2, d0, n) per group by moments of log s2 over the estimates `use` marks."""
    sp = _sp()
    e = z - _per_distinct(lambda h: sp.digamma(h) - np.log(h), d / 2)
    w = use.astype(float)
    n = np.bincount(g, weights=w, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        emean = np.bincount(g, weights=e * w, minlength=n_groups) / n
        evar = (np.bincount(g, weights=w * (e - emean[g]) ** 2, minlength=n_groups) / (n - 1)
                - np.bincount(g, weights=w * _per_distinct(lambda h: sp.polygamma(1, h), d / 2),
                              minlength=n_groups) / n)
        d0 = np.where(evar > 0, 2 * trigamma_inverse(np.where(evar > 0, evar, 1.0)), np.inf)
        d0 = np.where(n >= 2, np.minimum(d0, np.maximum(cap, 0.0)), 0.0)
        half = np.where(d0 > 0, d0 / 2, 1.0)
        s0 = np.exp(emean + np.where(d0 > 0, sp.digamma(half) - np.log(half), 0.0))
    return s0, d0, n


def grouped_bh(p: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values within each group."""
    order = np.lexsort((p, g))
    gs, ps = g[order], p[order]
    start = np.r_[0, np.nonzero(np.diff(gs))[0] + 1]
    size = np.diff(np.r_[start, len(gs)])
    m = np.repeat(size, size).astype(float)
    rank = np.arange(len(gs)) - np.repeat(start, size) + 1
    q = ps * m / rank
    out_sorted = np.empty_like(q)
    for s, n in zip(start.tolist(), size.tolist(), strict=True):     # groups are few (categories)
        out_sorted[s:s + n] = np.minimum.accumulate(q[s:s + n][::-1])[::-1]
    out = np.empty_like(q)
    out[order] = np.minimum(out_sorted, 1.0)
    return out


def squeeze(s2: np.ndarray, df: np.ndarray, group: np.ndarray, n_groups: int, cap: np.ndarray,
            robust: bool = True):
    """Moderated variances per group (see the module notes). Returns (posterior s2, posterior
    df) per element and (s0^2, d0) per group. d0 is capped at `cap` (per group): the keys of a
    group share their residuals' degrees of freedom, so the prior cannot hold more than the group
    does. A group with one estimate is not moderated (its s0^2 is that estimate, with its df);
    an outlying estimate keeps its own value and df."""
    sp = _sp()
    s2, df = np.asarray(s2, dtype=float), np.asarray(df, dtype=float)
    ok = (df > 0) & np.isfinite(s2)
    g, d = group[ok], df[ok]
    z = np.log(np.maximum(s2[ok], TINY))
    inlier = np.ones(len(z), dtype=bool)
    if robust and len(z) >= 3:
        # a first fit without each group's top TRIM of log s2: a few outliers must not mask themselves
        # (inflate the prior's spread, so that none of them looks far from it); they come back if not far
        rank = np.empty(len(z))
        order = np.lexsort((z, g))
        start = np.r_[0, np.nonzero(np.diff(g[order]))[0] + 1]
        size = np.diff(np.r_[start, len(order)])
        rank[order] = (np.arange(len(order)) - np.repeat(start, size)) / np.repeat(size, size)
        inlier = (rank < 1 - TRIM) | (np.repeat(size, size)[np.argsort(order)] < 5)
    s0, d0, n = _fit(z, d, g, inlier, n_groups, cap)
    if robust and len(z) >= 3:
        for _ in range(ROBUST_ROUNDS):
            # upper tail of F(d, d0) at s2 / s0^2 (d0 infinite: the chi-square)
            ratio = np.exp(z) / s0[g]
            dd0 = d0[g]
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                p = np.where(np.isfinite(dd0) & (dd0 > 0), sp.fdtrc(d, np.where(dd0 > 0, dd0, 1.0), ratio),
                             sp.chdtrc(d, d * ratio))
            p = np.where(np.isfinite(p), p, 1.0)
            new = grouped_bh(p, g) > OUTLIER_Q
            kept = np.bincount(g, weights=new.astype(float), minlength=n_groups)
            new |= kept[g] < 3          # a group left with fewer than 3 estimates keeps them all
            if np.array_equal(new, inlier):
                break
            inlier = new
            s0, d0, n = _fit(z, d, g, inlier, n_groups, cap)
    single = n == 1                 # a group's only estimate is its prior
    with np.errstate(invalid="ignore", divide="ignore"):
        s0 = np.where(single, np.exp(np.bincount(g, weights=z * inlier, minlength=n_groups)), s0)
        d0_out = np.where(single, np.bincount(g, weights=d * inlier, minlength=n_groups), d0)
        d0_key = np.where(inlier, d0[g], 0.0)          # an outlier keeps its own variance
        post_ok = (d0_key * s0[g] + d * s2[ok]) / (d0_key + d)
    post, post_df = np.full(len(s2), np.nan), np.full(len(s2), np.nan)
    post[ok], post_df[ok] = post_ok, d0_key + d
    return post, post_df, np.where(n > 0, s0, np.nan), d0_out


def outliers(post_df: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Which moderated estimates kept their own variance (squeeze's outliers)."""
    return np.isfinite(df) & (df > 0) & (post_df == df)
