"""Random-effects means of the log ratios over keys: per category, and "all" over categories with
each category weighted equally (a suite's key count per category is no measure of importance).

For keys j with log ratio d_j and weights w_j (1/K in a category of K keys; 1/(C K_c) for "all"
over C categories), G = sum w_j d_j, and var G is
- the shared part of each side: the run effects, each run's weighted by the keys it holds
  (sum over runs of (sum of w_j / R_j over its keys)^2 x V, per side);
- plus the possible slowdown of a load the keys were timed beside (comparison/load.py), as one
  bias shared by them: (sum w_j x its bound)^2 per side;
- plus a key part, the larger of the model's (sum w_j^2 x key-specific variance) and the keys'
  own disagreement, as Hartung-Knapp, within each stratum (a category): sum over strata of
  w^2 K_c / (K_c - 1) sum (d_j - mean_c)^2, with K_c - 1 df each (Satterthwaite over strata).
Never narrower than the keys' disagreement allows. Each part's df is the smallest of its keys'
(they share their priors); where both sides take one Prior, its estimates count once.
"""

from __future__ import annotations

import numpy as np

from gpuparity.comparison.estimate import SideEstimate
from gpuparity.comparison.intervals import LEVEL, log_interval, satterthwaite


def _shared_part(est: SideEstimate, idx: np.ndarray, group: np.ndarray, w: np.ndarray, n_groups: int):
    """Per group: variance of the weighted mean that the side's run effects cause, and its df."""
    nk = len(est.mean)
    pos = np.full(nk, -1, dtype=np.int64)
    pos[idx] = np.arange(len(idx))
    pj = pos[est.pair_key]
    keep = pj >= 0
    pj, pkey, prun = pj[keep], est.pair_key[keep], est.pair_run[keep]
    g = group[pj]
    with np.errstate(invalid="ignore", divide="ignore"):
        weight = np.sqrt(est.shared[pkey]) * w[pj] / est.runs[pkey]
    cell, inv = np.unique(g.astype(np.int64) * est.n_runs + prun, return_inverse=True)
    sums = np.bincount(inv, weights=weight, minlength=len(cell))
    var = np.bincount(cell // est.n_runs, weights=sums * sums, minlength=n_groups)
    df = np.full(n_groups, np.inf)
    np.minimum.at(df, group, est.shared_df[idx])
    return var, df


def _disagreement(d: np.ndarray, w: np.ndarray, group: np.ndarray, strata: np.ndarray, n_groups: int):
    """Per group: the keys' own disagreement as a variance of the weighted mean (Hartung-Knapp
    within each stratum), and its df."""
    code, s = np.unique(group.astype(np.int64) * (int(strata.max()) + 1 if len(strata) else 1) + strata,
                        return_inverse=True)
    n_s = np.bincount(s, minlength=len(code)).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_s = np.bincount(s, weights=d, minlength=len(code)) / n_s
        ss = np.bincount(s, weights=(d - mean_s[s]) ** 2, minlength=len(code))
        w_s = np.bincount(s, weights=w, minlength=len(code)) / n_s        # equal within a stratum
        part = np.where(n_s >= 2, w_s * w_s * n_s / (n_s - 1) * ss, 0.0)
    g_s = code // (int(strata.max()) + 1 if len(strata) else 1)
    var = np.bincount(g_s, weights=part, minlength=n_groups)
    den = np.bincount(g_s, weights=np.where(n_s >= 2, part * part / np.maximum(n_s - 1, 1), 0.0), minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        df = np.where(den > 0, var * var / np.where(den > 0, den, 1.0), np.inf)
    return var, df


def group_means(a: SideEstimate, b: SideEstimate, ia: np.ndarray, ib: np.ndarray, group: np.ndarray,
                n_groups: int, level: float = LEVEL, strata: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Random-effects mean of the log ratios per group (key j: ia[j] on A, ib[j] on B, in
    group[j]); strata (per key, e.g. its category): each stratum of a group weighs the same, its
    keys alike (None: one stratum per group). Returns per group: n, log_ratio, var, df, ci_low,
    ci_high, key_basis ("model" or "keys": which key part won)."""
    strata = group if strata is None else strata
    n = np.bincount(group, minlength=n_groups).astype(float)
    sc, s_inv = np.unique(group.astype(np.int64) * (int(strata.max()) + 1 if len(strata) else 1) + strata,
                          return_inverse=True)
    per_stratum = np.bincount(s_inv, minlength=len(sc)).astype(float)
    strata_of_group = np.bincount(sc // (int(strata.max()) + 1 if len(strata) else 1), minlength=n_groups)
    w = 1.0 / (per_stratum[s_inv] * strata_of_group[group]) if len(group) else np.zeros(0)
    d = b.mean[ib] - a.mean[ia]

    def total(x: np.ndarray) -> np.ndarray:
        return np.bincount(group, weights=w * w * x, minlength=n_groups)

    def least(df: np.ndarray) -> np.ndarray:
        """Per group the smallest df: the keys' estimates share their priors, so they are not
        independent (a conservative df for their sum)."""
        out = np.full(n_groups, np.inf)
        np.minimum.at(out, group, df)
        return out

    # a group whose every key takes one Prior on both sides: one estimate, not two
    same = np.bincount(group, weights=~((a.source[ia] >= 0) & (a.source[ia] == b.source[ib])),
                       minlength=n_groups) == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        dbar = np.bincount(group, weights=w * d, minlength=n_groups)
        pa, pb = total(a.prior_key[ia]), total(b.prior_key[ib])
        oa, ob = total(a.own[ia]), total(b.own[ib])
        model = pa + pb + oa + ob
        model_df = satterthwaite((np.where(same, pa + pb, pa), least(a.prior_key_df[ia])),
                                 (np.where(same, 0.0, pb), least(b.prior_key_df[ib])),
                                 (oa, least(a.own_df[ia])), (ob, least(b.own_df[ib])))
    empirical, empirical_df = _disagreement(d, w, group, strata, n_groups)
    use_keys = empirical > model
    key_part = np.where(use_keys, empirical, model)
    key_df = np.where(use_keys, empirical_df, model_df)
    sa, sa_df = _shared_part(a, ia, group, w, n_groups)
    sb, sb_df = _shared_part(b, ib, group, w, n_groups)
    # a load's possible slowdown is one bias for all the keys it was timed beside: it does not average out
    bias = sum(np.bincount(group, weights=w * np.sqrt(est.load[idx]), minlength=n_groups) ** 2
               for est, idx in ((a, ia), (b, ib)) if est.load is not None) if len(group) else 0.0
    var = sa + sb + key_part + bias
    df = satterthwaite((np.where(same, sa + sb, sa), sa_df), (np.where(same, 0.0, sb), sb_df), (key_part, key_df),
                       (bias + np.zeros(n_groups), np.full(n_groups, np.inf)))
    lo, hi = log_interval(dbar, var, df, level)
    return {"n": n, "log_ratio": dbar, "var": var, "df": df, "ci_low": lo, "ci_high": hi,
            "key_basis": np.where(use_keys, "keys", "model")}
