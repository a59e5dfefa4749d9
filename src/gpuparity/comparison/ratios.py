"""The statistical core of a comparison: for every key present (ok) on both sides, the ratio B/A
of the figures shown, its interval and its verdict code, held at inconclusive where a flag says so
(comparison/flags.py). The estimator is comparison/estimate.py's; compare.py builds the document
from this core."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuparity.comparison.estimate import SideEstimate, pair_df, side_estimate
from gpuparity.comparison.flags import NO_CLAIM, flagged, hot_throttled
from gpuparity.comparison.intervals import LEVEL, log_interval
from gpuparity.comparison.load import side_load
from gpuparity.comparison.priors import default_priors
from gpuparity.comparison.sides import Side
from gpuparity.comparison.units import same_unit
from gpuparity.comparison.verdict import INCONCLUSIVE, verdicts


@dataclass
class Core:
    """Matched keys (indices into each side) with values, ratios, CIs and verdict codes."""

    ia: np.ndarray
    ib: np.ndarray
    a_value: np.ndarray
    b_value: np.ndarray
    ratio: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    log_var: np.ndarray
    df: np.ndarray
    verdict: np.ndarray
    a_units: np.ndarray
    b_units: np.ndarray
    unstable: np.ndarray
    est_a: SideEstimate
    est_b: SideEstimate
    log_ratio: np.ndarray = None
    flagged: np.ndarray = None      # unstable, throttled by heat or contended on a side: at most inconclusive
    contended: list = None          # [{"side", "runs": [{"run_id", "reasons"}]}] of contended sides
    throttled: np.ndarray = None    # throttled, not by power capping alone (comparison/flags.py)
    load_a: np.ndarray = None       # per key of each side: the CPU load share it was timed beside (comparison/load)
    load_b: np.ndarray = None
    reasons: dict = None            # matched key position -> why its verdict is held (server_checks), beyond flags


def run_spread(floor: float | None, category: str | None = None) -> float:
    """The spread assumed without history: --run-spread, GPUPARITY_RUN_SPREAD or the default."""
    from gpuparity.results.figure import run_spread_default

    return run_spread_default(category) if floor is None else floor


def compare_core(a: Side, b: Side, tolerance: float = 0.05, level: float = LEVEL,
                 floor: float | None = None, priors: tuple | None = None) -> Core:
    """Ratios B/A, CIs and verdicts for every key present (ok) on both sides. `priors`: (A's,
    B's) {category: Prior} for the categories they cannot measure (default_priors when None)."""
    pa, pb = priors if priors is not None else (default_priors(a, floor), default_priors(b, floor))
    other = np.array([b.index.get(k, -1) for k in a.keys], dtype=np.int64)
    ia = np.nonzero(other >= 0)[0]
    ib = other[ia]
    one_unit = same_unit(a, b, ia, ib)         # per GPU against per server: no ratio (comparison/units.py)
    ia, ib = ia[one_unit], ib[one_unit]
    (load_a, bias_a), (load_b, bias_b) = side_load(a), side_load(b)
    est_a, est_b = side_estimate(a, pa, bias_a), side_estimate(b, pb, bias_b)
    va, la, vara, na = est_a.value[ia], est_a.mean[ia], est_a.var[ia], est_a.trials[ia]
    vb, lb, varb, nb = est_b.value[ib], est_b.mean[ib], est_b.var[ib], est_b.trials[ib]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = vb / va
    log_ratio = lb - la
    log_var = vara + varb
    df = pair_df(est_a, est_b, ia, ib)
    lo, hi = log_interval(log_ratio, log_var, df, level)
    # the row's ratio is of the values shown (a single trial's stored figure); its CI is centred on it
    with np.errstate(invalid="ignore", divide="ignore"):
        shift = np.where(np.isfinite(ratio) & (ratio > 0), np.log(np.where(ratio > 0, ratio, 1.0)) - log_ratio, 0.0)
    lo, hi = lo * np.exp(shift), hi * np.exp(shift)
    unstable = np.zeros(len(ia), dtype=bool)
    for flag in NO_CLAIM:
        unstable |= flagged(a, b, ia, ib, flag)
    throttled = hot_throttled(a)[ia] | hot_throttled(b)[ib]
    contended = [{"side": s.label, "runs": s.contended} for s in (a, b) if s.contended]
    held = unstable | throttled | flagged(a, b, ia, ib, "contended") | bool(contended)
    codes = np.where(held, INCONCLUSIVE, verdicts(lo, hi, tolerance))
    return Core(ia, ib, va, vb, ratio, lo, hi, log_var, df, codes, na, nb, unstable, est_a, est_b,
                log_ratio + shift, held, contended, throttled, load_a, load_b)
