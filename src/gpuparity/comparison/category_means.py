"""The category means of a comparison document (its "geomean"): per category, and "all" with the
categories weighted equally, the random-effects mean of the rows' ratios (comparison/means.py)
with its verdict, held where the comparison is contended or the mean mostly flagged, "mixed" where
its keys disagree beyond the band (comparison/heterogeneity.py), and the same per peak, $ and W."""

from __future__ import annotations

import math

import numpy as np

from gpuparity.comparison.estimate import MOSTLY, SideEstimate
from gpuparity.comparison.flags import contended_words
from gpuparity.comparison.heterogeneity import mixed
from gpuparity.comparison.means import group_means
from gpuparity.comparison.normalise import NORMALISED
from gpuparity.comparison.ratios import Core
from gpuparity.comparison.verdict import VERDICTS, verdicts


def category_means(core: Core, order: np.ndarray, cols: dict, factors: dict, ranges: dict, measured: np.ndarray,
              fdr: np.ndarray, tolerance: float, level: float) -> dict:
    """Per category (and 'all' when there are several: categories weighted equally) the
    random-effects mean of the ratios with its CI (means.group_means) over the keys with a CI,
    "mixed" where its keys disagree beyond the band (comparison/heterogeneity.py); normalised
    views only where every one of those keys has the normalisation (per $: the CI over the price
    factor's range; per watt: a verdict only on measured power on both sides). One group_means
    call for all categories (a store may hold hundreds), one for 'all'."""
    cats = [c or "other" for c in cols["category"]]
    ratio, log_var = core.ratio[order], core.log_var[order]
    keep = np.nonzero(np.isfinite(log_var) & np.isfinite(ratio) & (ratio > 0))[0]
    ia, ib = core.ia[order][keep], core.ib[order][keep]
    names = sorted({cats[j] for j in keep.tolist()})
    index = {c: i for i, c in enumerate(names)}
    code = np.array([index[cats[j]] for j in keep.tolist()], dtype=np.int64)
    by = np.argsort(code, kind="stable")
    members = np.split(keep[by], np.cumsum(np.bincount(code, minlength=len(names)))[:-1]) if len(names) else []
    per_cat = group_means(core.est_a, core.est_b, ia, ib, code, len(names), level) if names else {}
    groups = [(cat, members[i], per_cat, i) for i, cat in enumerate(names)]
    if len(names) >= 2:
        # categories weighted equally: a suite's key count per category is no measure of importance
        groups.append(("all", keep, group_means(core.est_a, core.est_b, ia, ib, np.zeros(len(keep), np.int64), 1,
                                                level, strata=code), 0))
    flagged, a_units, b_units = core.flagged[order], core.a_units[order], core.b_units[order]
    het = _het_var(core.est_a, core.ia[order]) + _het_var(core.est_b, core.ib[order])
    fdr_words = [VERDICTS[v] for v in fdr.tolist()]
    row_names = [" ".join(x for x in (w, " ".join(f"{k}={v}" for k, v in (p or {}).items() if k != "dtype"), d) if x)
                 for w, p, d in zip(cols["workload"], cols["params"], cols["dtype"], strict=True)]
    out = {}
    for cat, sel, g, i in groups:
        ratio_g, lo, hi = math.exp(float(g["log_ratio"][i])), float(g["ci_low"][i]), float(g["ci_high"][i])
        n_flagged = int(flagged[sel].sum())
        held = (contended_words(core) if core.contended
                else f"mostly flagged ({n_flagged} of {len(sel)})" if n_flagged > MOSTLY * len(sel) else None)
        capped = held is not None
        verdict = "inconclusive" if capped else _verdict1(lo, hi, tolerance)
        disagree = None if capped else mixed(sel, fdr_words, core.log_ratio[order], het, core.df[order],
                                             float(g["log_ratio"][i]), verdict, tolerance, row_names)
        entry = {"ratio": ratio_g, "ci_low": lo if math.isfinite(lo) else None,
                 "ci_high": hi if math.isfinite(hi) else None, "n": len(sel),
                 "verdict": "mixed" if disagree else verdict, "mixed": disagree,
                 "a_trials": float(np.median(a_units[sel])), "b_trials": float(np.median(b_units[sel])),
                 "a_runs": float(np.median(core.est_a.runs[core.ia[order][sel]])),
                 "b_runs": float(np.median(core.est_b.runs[core.ib[order][sel]])),
                 "log_se": _finite(math.sqrt(float(g["var"][i]))), "df": _finite(float(g["df"][i])),
                 "key_basis": str(g["key_basis"][i]), "flagged": n_flagged, "held": held,
                 "weights": "categories equally" if cat == "all" else "keys equally"}
        for suffix in NORMALISED:
            f, (f_lo, f_hi) = factors[suffix][sel], (r[sel] for r in ranges[suffix])
            if np.all(np.isfinite(f) & (f > 0)) and np.all(np.isfinite(f_lo) & np.isfinite(f_hi)):
                m, m_lo, m_hi = (math.exp(float(np.mean(np.log(x)))) for x in (f, f_lo, f_hi))
                entry[f"ratio_{suffix}"], entry[f"ci_low_{suffix}"], entry[f"ci_high_{suffix}"] = (
                    ratio_g * m, _finite(lo * m_lo), _finite(hi * m_hi))
                judged = suffix != "per_watt" or bool(measured[sel].all())      # per W: measured power only
                entry[f"verdict_{suffix}"] = (None if not judged else "inconclusive" if capped else "mixed"
                                              if disagree else _verdict1(lo * m_lo, hi * m_hi, tolerance))
        out[cat] = entry
    return out


def _het_var(est: SideEstimate, idx: np.ndarray) -> np.ndarray:
    """A key's variance that differs between keys (heterogeneity.py): the key-specific part,
    and for a key on a Prior its whole variance (a default does not split the run effect out)."""
    return est.key_var[idx] + np.where(est.source[idx] >= 0, est.shared[idx] / np.maximum(est.runs[idx], 1), 0.0)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _verdict1(lo: float, hi: float, tolerance: float) -> str:
    return VERDICTS[int(verdicts(np.array([lo]), np.array([hi]), tolerance)[0])]
