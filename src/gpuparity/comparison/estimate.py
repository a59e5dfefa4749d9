"""Comparison statistics: the variance model, per-key side estimates, ratio intervals, verdicts
and multiplicity (the random-effects means over keys: comparison/means.py). One estimator for every view (`compare` in the
terminal, JSON/CSV, the report, `gpuparity.compare()`); the README's "Statistics" says it in words.

The model. For key k (a result: workload, parameters, dtype) on a side, run r (one invocation of
the tool on one box) and trial t, the log trial figure is

    y(k,r,t) = mu(k) + rho(r) + e(k,r) + tau(k,r,t)   (+ the trial's within-trial error, se)

rho(r): the run effect, shared by every key of the run's category (the box, its boot, clocks,
power cap, thermals, co-tenants); e(k,r): the key x run interaction; tau: trial-to-trial noise
inside one run. Trials of one run all see the same rho(r) + e(k,r), so:

- The unit is the run. m(k,r) = mean over the run's trials of y; the side's estimate of key k is
  L(k) = mean over its R(k) runs of m(k,r) (value = exp L: the geometric mean; one trial of one
  run: its stored figure). Trials only measure the within-run part.
- A category with more than half of its keys measured in >= 2 runs ("measured"): fit m(k,r) = L(k) + rho(r) + e(k,r)
  by backfitting over the keys with >= 2 runs. Shared run variance V = sample variance of the
  rho(r) over the category's runs (runs - 1 degrees of freedom, however many keys: the run
  effect is one draw per run). Per key, residual variance s2(k) with df(k) = its share of the
  category's residual df (pairs - keys - runs + 1). The s2(k) are moderated as limma's eBayes
  does (squeezeVar / fitFDist: moments of log s2 with digamma / trigamma give a prior s0^2 with
  d0 degrees of freedom; posterior (d0 s0^2 + df s2) / (d0 + df), d0 capped so that no key claims
  more df than the category's residuals hold), robustly: an outlying key keeps its own variance
  (comparison/moderate.py). var L(k) = (V + posterior s2) / R(k), df by
  Satterthwaite. A key with one run in such a category takes V + s0^2.
- Any other category cannot see its run-to-run spread: it takes a Prior (shared variance + key x
  run variance, per key where the history measured that key, with degrees of freedom): from the
  store's history of the same product, stack, driver and torch over other occasions
  (comparison/history.py), else a per-category default with 2 df (comparison/priors.py), or
  --run-spread; every view says which. With T >= 2 trials in the run, var L(k) = prior +
  (moderated within-run trial variance) / T; one trial: prior + the larger of se^2 and the
  prior's trial-to-trial variance (history measures it; the defaults already cover one trial's
  noise) (no se: no interval). A key of such a category measured in R >= 2 runs here updates
  the prior's total for itself alone: (d_p P + (R - 1) s2_runs) / (d_p + R - 1), then / R.
- A key timed beside other load (comparison/load.py) carries the slowdown it could cause as a
  variance of its own (`extra`), shared by every key of a mean it enters.
- Ratio B/A per key: exp(L_B - L_A); 95% interval exp(log ratio +- t(df) sqrt(var_A + var_B)), df
  by Welch-Satterthwaite, rounded down to a whole number (conservative where 1-df run effects
  dominate, e.g. 2 runs a side).
- Category (and overall) means: comparison/means.py. Where both sides take the same Prior (one
  default, one history: Prior.ident), its estimates count once, not twice (pair_df).
- Verdict (comparison/verdict.py; symmetric on the log scale, band [1/(1+t), 1+t]): faster when
  the interval lies above 1+t, slower when below 1/(1+t), parity when inside, else inconclusive. A key flagged unstable or
  contended on a side is at most inconclusive; so is a mean whose keys are more than half
  flagged; a comparison with a contended side has no faster/slower verdict at all (flags.py, ratios.py).
- Many keys, many tests (comparison/multiplicity.py): headline counts of faster / slower / parity
  use Benjamini-Hochberg (q = 0.05) over the keys' p-values (two one-sided tests, as the intervals); the regression gate
  (--fail-if-slower X) uses Holm over the keys and category means (one-sided, family-wise 2.5%).
  Rows keep their own per-key verdicts.

Intervals and degrees of freedom: comparison/intervals.py (scipy.special, imported on first use:
CLI start stays fast).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gpuparity.comparison.intervals import satterthwaite
from gpuparity.comparison.moderate import squeeze

MOSTLY = 0.5            # a mean whose keys are more than this share flagged: at most inconclusive
TINY = 1e-12            # smallest variance taken to the log (identical figures)
BACKFIT_ITERATIONS = 100


@dataclass
class SideEstimate:
    """Per key (index of the side): value, L, var L, df, runs, trials; the shared and key-specific
    parts of var L; per (key, run) pair the indices (for the run weights of a mean); per
    category how its spread was known."""

    value: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    df: np.ndarray
    runs: np.ndarray
    trials: np.ndarray
    shared: np.ndarray          # variance of one run effect of the key's category (not / R)
    shared_df: np.ndarray
    key_var: np.ndarray         # key-specific part of var L (already / R): prior_key + own
    key_df: np.ndarray
    prior_key: np.ndarray       # the part of key_var a Prior gives (its key x run variance)
    prior_key_df: np.ndarray
    own: np.ndarray             # the part measured on this side (moderated residual or trial variance)
    own_df: np.ndarray
    source: np.ndarray          # per key: id of the Prior behind shared and prior_key, -1 measured here
    pair_key: np.ndarray
    pair_run: np.ndarray
    n_runs: int
    basis: dict = field(default_factory=dict)     # category -> {"source", "spread", ...}
    load: np.ndarray | None = None  # per key: the variance its load adds (inside `own`; shared by its keys in means)


def category_codes(side) -> tuple[list[str], np.ndarray]:
    """(category names, code per key); a key without a category is 'other'."""
    cached = getattr(side, "_category_codes", None)
    if cached is not None:
        return cached
    cats = [m[1] or "other" for m in side.meta]
    names = sorted(set(cats))
    index = {n: i for i, n in enumerate(names)}
    out = (names, np.array(list(map(index.__getitem__, cats)), dtype=np.int64))
    side._category_codes = out
    return out


def _pairs(side) -> tuple[np.ndarray, ...]:
    """Per (key, run): key, run, trials, run mean m of the log figures, within-run sum of squares,
    mean within-trial se^2."""
    n_runs = max(len(side.runs), int(side.u_run.max()) + 1 if len(side.u_run) else 1)
    code = side.u_key.astype(np.int64) * n_runs + side.u_run
    uniq, inv = np.unique(code, return_inverse=True)
    logs = np.log(side.u_value)
    t = np.bincount(inv, minlength=len(uniq)).astype(float)
    m = np.bincount(inv, weights=logs, minlength=len(uniq)) / t
    dev = logs - m[inv]
    ssw = np.bincount(inv, weights=dev * dev, minlength=len(uniq))
    with np.errstate(invalid="ignore"):
        se2 = np.bincount(inv, weights=side.u_se * side.u_se, minlength=len(uniq)) / t
    return uniq // n_runs, uniq % n_runs, t, m, ssw, se2, n_runs


@dataclass
class RunFit:
    """The run-level fit of a set of (key, run) means, per category: shared run variance V
    (df), prior residual variance s0^2 (d0), runs and keys; per key the moderated residual
    variance and its df (NaN for keys with one run)."""

    v_run: np.ndarray
    df_run: np.ndarray
    s0: np.ndarray
    d0: np.ndarray
    runs: np.ndarray
    keys: np.ndarray
    post: np.ndarray
    post_df: np.ndarray


def run_level_fit(pk: np.ndarray, pr: np.ndarray, m: np.ndarray, cat_of_key: np.ndarray, n_cat: int,
                  n_keys: int, n_runs: int) -> RunFit:
    """Fit m(k,r) = L(k) + rho(r) + e(k,r) per category (backfitting), for pairs of keys that
    have >= 2 runs; see the module notes."""
    runs_of_key = np.bincount(pk, minlength=n_keys)
    keep = runs_of_key[pk] >= 2
    pk, pr, m = pk[keep], pr[keep], m[keep]
    c_p = cat_of_key[pk]
    cr_uniq, cr = np.unique(c_p * n_runs + pr, return_inverse=True)
    cr_cat = cr_uniq // n_runs
    per_cr = np.bincount(cr, minlength=len(cr_uniq)).astype(float)
    big_r = np.maximum(runs_of_key, 1).astype(float)
    rho = np.zeros(len(cr_uniq))
    for _ in range(BACKFIT_ITERATIONS):
        level = np.bincount(pk, weights=m - rho[cr], minlength=n_keys) / big_r
        new = np.bincount(cr, weights=m - level[pk], minlength=len(cr_uniq)) / per_cr
        done = not len(new) or float(np.max(np.abs(new - rho))) < 1e-12
        rho = new
        if done:
            break
    level = np.bincount(pk, weights=m - rho[cr], minlength=n_keys) / big_r
    resid = m - level[pk] - rho[cr]
    runs_c = np.bincount(cr_cat, minlength=n_cat).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho_mean = np.bincount(cr_cat, weights=rho, minlength=n_cat) / runs_c
        v_run = np.bincount(cr_cat, weights=(rho - rho_mean[cr_cat]) ** 2, minlength=n_cat) / (runs_c - 1)
    rep = runs_of_key >= 2
    keys_c = np.bincount(cat_of_key[rep], minlength=n_cat).astype(float)
    pairs_c = np.bincount(c_p, minlength=n_cat).astype(float)
    resid_df = np.maximum(pairs_c - keys_c - runs_c + 1, 0.0)
    extra = np.bincount(cat_of_key[rep], weights=runs_of_key[rep] - 1.0, minlength=n_cat)
    with np.errstate(invalid="ignore", divide="ignore"):
        df_k = np.where(rep, (runs_of_key - 1.0) * resid_df[cat_of_key] / np.maximum(extra[cat_of_key], 1.0), 0.0)
        s2 = np.where(df_k > 0, np.bincount(pk, weights=resid * resid, minlength=n_keys) / df_k, np.nan)
    cap = resid_df - np.bincount(cat_of_key, weights=df_k, minlength=n_cat) / np.maximum(keys_c, 1.0)
    idx = np.nonzero(df_k > 0)[0]
    post, post_df = np.full(n_keys, np.nan), np.full(n_keys, np.nan)
    s0, d0 = np.zeros(n_cat), np.full(n_cat, np.inf)
    if len(idx):
        p, pdf, s0_c, d0_c = squeeze(s2[idx], df_k[idx], cat_of_key[idx], n_cat, cap)
        post[idx], post_df[idx] = p, pdf
        has = np.bincount(cat_of_key[idx], minlength=n_cat) > 0
        s0, d0 = np.where(has, s0_c, 0.0), np.where(has, d0_c, np.inf)
    # a key with >= 2 runs in a category with no residual df (one such key): all is shared
    post = np.where(rep & ~(df_k > 0), 0.0, post)
    post_df = np.where(rep & ~(df_k > 0), np.inf, post_df)
    return RunFit(v_run, np.maximum(runs_c - 1, 0.0), s0, d0, runs_c, keys_c, post, post_df)


def measured_categories(cat: np.ndarray, runs: np.ndarray, n_cat: int) -> np.ndarray:
    """Per category: whether it measures its own run-to-run spread, i.e. more than half of its keys
    have >= 2 runs. A key or two measured again does not make a category measured: they update
    their own estimate and the rest keep the category's Prior."""
    if not len(cat):
        return np.zeros(n_cat, dtype=bool)
    rep = np.bincount(cat[runs >= 2], minlength=n_cat)
    return rep > MOSTLY * np.bincount(cat, minlength=n_cat)


def needs_prior(side) -> list[str]:
    """Categories of a side that cannot measure their run-to-run spread (measured_categories)."""
    names, cat = category_codes(side)
    measured = measured_categories(cat, np.asarray(side.n_runs), len(names))
    return [n for n, m in zip(names, measured.tolist(), strict=True) if not m]


def _ident_code(prior) -> int:
    """A code per prior estimate: both sides' default of one category, or one history, share it."""
    if prior is None:
        return -1
    import zlib

    return zlib.crc32((prior.ident or f"id:{id(prior)}").encode()) & 0x7FFFFFFF


def side_estimate(side, priors: dict, extra: np.ndarray | None = None) -> SideEstimate:
    """Per-key estimates of one side under the model (module notes); `priors` covers every
    category in needs_prior(side); `extra`: per key a variance known exactly that its estimate
    carries besides (the load it was timed beside: comparison/load.py)."""
    names, cat = category_codes(side)
    nk, n_cat = len(side.keys), len(names)
    pk, pr, t, m, ssw, se2, n_runs = _pairs(side)
    runs = np.bincount(pk, minlength=nk).astype(float)
    trials = np.bincount(side.u_key, minlength=nk).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(pk, weights=m, minlength=nk) / runs
    first = np.zeros(nk, dtype=np.int64)
    first[side.u_key[::-1]] = np.arange(len(side.u_key))[::-1]
    value = np.where(trials == 1, side.u_value[first], np.exp(mean)) if nk else mean
    shared, shared_df = np.zeros(nk), np.full(nk, np.inf)
    prior_key, prior_key_df = np.zeros(nk), np.full(nk, np.inf)
    own, own_df = np.zeros(nk), np.full(nk, np.inf)
    source = np.full(nk, -1, dtype=np.int64)
    basis = {}
    replicated = measured_categories(cat, runs, n_cat)
    in_rep = replicated[cat] if nk else np.zeros(0, bool)
    if in_rep.any():
        fit = run_level_fit(pk, pr, m, cat, n_cat, nk, n_runs)
        c = cat[in_rep]
        rep_key = runs[in_rep] >= 2
        shared[in_rep], shared_df[in_rep] = fit.v_run[c], fit.df_run[c]
        kv = np.where(rep_key, fit.post[in_rep], fit.s0[c])
        kdf = np.where(rep_key, fit.post_df[in_rep], fit.d0[c])
        own[in_rep], own_df[in_rep] = kv / runs[in_rep], kdf
        for j in np.nonzero(replicated)[0].tolist():
            basis[names[j]] = {"source": "runs", "runs": int(fit.runs[j]), "keys": int(fit.keys[j]),
                               "spread": math.sqrt(fit.v_run[j] + fit.s0[j]), "shared": math.sqrt(fit.v_run[j]),
                               "key": math.sqrt(fit.s0[j]), "shared_df": float(fit.df_run[j]),
                               "prior_df": float(fit.d0[j]) if math.isfinite(fit.d0[j]) else None}
    in_prior = ~in_rep
    if in_prior.any():
        idx = np.nonzero(in_prior)[0]
        c, big_r = cat[idx], runs[idx]
        sel = in_prior[pk]
        tk = np.bincount(pk[sel], weights=t[sel], minlength=nk)[idx]             # all its trials
        dw = np.bincount(pk[sel], weights=t[sel] - 1, minlength=nk)[idx]         # within-run df
        sw = np.bincount(pk[sel], weights=ssw[sel], minlength=nk)[idx]
        with np.errstate(invalid="ignore", divide="ignore"):
            se2k = np.bincount(pk[sel], weights=se2[sel] * t[sel], minlength=nk)[idx] / tk
        multi = dw >= 1
        trial_var, trial_df = se2k, np.full(len(idx), np.inf)       # one trial's variance
        if multi.any():
            s2 = np.where(multi, sw / np.maximum(dw, 1), np.nan)
            d = np.where(multi, dw, 0.0)
            cap = (np.bincount(c, weights=d, minlength=n_cat)
                   - np.bincount(c, weights=d, minlength=n_cat) / np.maximum(np.bincount(c[multi], minlength=n_cat), 1))
            post, post_df, _, _ = squeeze(s2, d, c, n_cat, cap)
            trial_var = np.where(multi, post, trial_var)
            trial_df = np.where(multi, post_df, trial_df)

        def per_cat(name: str, missing: float) -> np.ndarray:
            return np.array([getattr(priors[n], name) if n in priors else missing for n in names])

        ps, ps_df, pkv, pk_df = per_cat("shared", np.nan), per_cat("shared_df", np.inf), per_cat("key", 0.0), \
            per_cat("key_df", np.inf)
        ptv, ptv_df = per_cat("trial", 0.0), per_cat("trial_df", np.inf)
        # one trial: the prior's trial noise where it is larger than the trial's se^2 (or that is unknown)
        one = ~multi & (ptv[c] > 0) & ~(trial_var >= ptv[c])
        trial_var = np.where(one, ptv[c], trial_var)
        trial_df = np.where(one, ptv_df[c], trial_df)
        # the key's own history variance where the history measured it, else the category's
        kvar, kdf = pkv[c].copy(), pk_df[c].copy()
        for j, name in enumerate(names):
            if priors.get(name) is not None and priors[name].keys:
                where = np.nonzero(c == j)[0]
                got = [priors[name].keys.get(side.keys[i]) for i in idx[where].tolist()]
                hit = np.array([x is not None for x in got], dtype=bool)
                if hit.any():
                    kvar[where[hit]] = [x[0] for x in got if x is not None]
                    kdf[where[hit]] = [x[1] for x in got if x is not None]
        sh, kv, ov = ps[c], kvar, trial_var / tk
        sh_df, k_df, o_df = ps_df[c], kdf, trial_df
        # a key measured in >= 2 runs here: its run means update the prior's spread for it alone
        again = big_r >= 2
        if again.any():
            ms = np.bincount(pk[sel], weights=m[sel], minlength=nk)[idx] / big_r
            dev = m[sel] - ms[np.searchsorted(idx, pk[sel])]
            s2r = np.bincount(pk[sel], weights=dev * dev, minlength=nk)[idx] / np.maximum(big_r - 1, 1)
            one_run = sh + kv + ov * big_r                # what the prior says one run's mean varies by
            d_p = satterthwaite((sh, sh_df), (kv, k_df), (ov * big_r, o_df))
            with np.errstate(invalid="ignore", divide="ignore"):
                scale = np.where(again & np.isfinite(d_p) & (one_run > 0),
                                 (d_p * one_run + (big_r - 1) * s2r) / ((d_p + big_r - 1) * one_run), 1.0)
            post_df = np.where(again & np.isfinite(d_p), d_p + big_r - 1, np.inf)
            sh, kv, ov = sh * scale, kv * scale, ov * scale
            sh_df, k_df, o_df = (np.where(again, np.minimum(x, post_df), x) for x in (sh_df, k_df, o_df))
        shared[idx], shared_df[idx] = sh, sh_df
        prior_key[idx], prior_key_df[idx] = kv / big_r, k_df
        own[idx], own_df[idx] = ov, o_df
        source[idx] = np.array([_ident_code(priors.get(n)) for n in names], dtype=np.int64)[c]
        for j in sorted(set(c.tolist())):
            pr_ = priors.get(names[j])
            if pr_ is not None:
                basis[names[j]] = {"source": pr_.source, "runs": pr_.runs, "spread": pr_.spread,
                                   "shared": math.sqrt(pr_.shared), "key": math.sqrt(pr_.key), "text": pr_.text,
                                   "df": _finite_or_none(pr_.df), "keys_own": len(pr_.keys),
                                   "measured_again": int(np.sum(again & (c == j)))}
    if extra is not None and len(extra):
        own_df = satterthwaite((own, own_df), (extra, np.full(nk, np.inf)))
        own = own + extra
    key_var = prior_key + own
    key_df = satterthwaite((prior_key, prior_key_df), (own, own_df))
    with np.errstate(invalid="ignore", divide="ignore"):
        var = shared / np.maximum(runs, 1) + key_var
        df = satterthwaite((shared / np.maximum(runs, 1), shared_df), (prior_key, prior_key_df), (own, own_df))
    return SideEstimate(value, mean, var, df, runs, trials, shared, shared_df, key_var, key_df, prior_key,
                        prior_key_df, own, own_df, source, pk, pr, n_runs, basis,
                        extra if extra is not None and len(extra) else np.zeros(nk))


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def pair_df(a: SideEstimate, b: SideEstimate, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Satterthwaite df of var_A + var_B per matched key. Where both sides take the same Prior (one
    product and stack, one history), its estimates are one estimate, not two independent ones:
    their variances add with the prior's df."""
    same = (a.source[ia] >= 0) & (a.source[ia] == b.source[ib])
    sa, sb = a.shared[ia] / np.maximum(a.runs[ia], 1), b.shared[ib] / np.maximum(b.runs[ib], 1)
    pa, pb = a.prior_key[ia], b.prior_key[ib]
    return satterthwaite((np.where(same, sa + sb, sa), a.shared_df[ia]), (np.where(same, 0.0, sb), b.shared_df[ib]),
                         (np.where(same, pa + pb, pa), a.prior_key_df[ia]), (np.where(same, 0.0, pb), b.prior_key_df[ib]),
                         (a.own[ia], a.own_df[ia]), (b.own[ib], b.own_df[ib]))
