"""Many keys, many tests: headline counts of faster / slower / parity use Benjamini-Hochberg
(q = 0.05) over the keys' p-values (two one-sided tests, as the intervals); the regression gate
(--fail-if-slower X) uses Holm over the keys and category means (one-sided, family-wise 2.5%).
"""

from __future__ import annotations

import math

import numpy as np

from gpuparity.comparison.intervals import t_cdf
from gpuparity.comparison.verdict import VERDICTS

FDR_Q = 0.05            # Benjamini-Hochberg level of the headline counts
GATE_ALPHA = 0.025      # Holm family-wise level of the regression gate, one-sided (as a 95% interval)


def one_sided_p(log_ratio: np.ndarray, var: np.ndarray, df: np.ndarray, bound: float, below: bool) -> np.ndarray:
    """p-value of H0 'log ratio >= bound' (below=True: evidence that it is below) or of H0 'log
    ratio <= bound' (below=False); 1 where the variance is unknown."""
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (np.asarray(log_ratio) - bound) / np.sqrt(var)
    cdf = t_cdf(t, df)
    p = cdf if below else 1.0 - cdf
    return np.where(np.isfinite(p), p, 1.0)


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values."""
    p = np.asarray(p, dtype=float)
    m = len(p)
    if not m:
        return p
    order = np.argsort(p, kind="stable")
    adj = np.maximum.accumulate(np.minimum((m - np.arange(m)) * p[order], 1.0))
    out = np.empty(m)
    out[order] = adj
    return out


def bh(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values)."""
    p = np.asarray(p, dtype=float)
    m = len(p)
    if not m:
        return p
    order = np.argsort(p, kind="stable")
    q = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(q[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
    return out


def fdr_verdicts(log_ratio: np.ndarray, var: np.ndarray, df: np.ndarray, tolerance: float,
                 usable: np.ndarray, q: float = FDR_Q, group: np.ndarray | None = None) -> np.ndarray:
    """Per key, the verdict (index into VERDICTS) that survives Benjamini-Hochberg at q: faster /
    slower where it finds the interval beyond the band (p = 2 x the smaller one-sided p), parity
    where it finds it inside (two one-sided tests, p = 2 x the larger), inconclusive the rest.
    Keys not usable (flagged, contended, no interval) are inconclusive. group: adjust within each
    group (one comparison per group, as separate documents would) instead of over all keys."""
    b = math.log1p(tolerance)
    p_fast = one_sided_p(log_ratio, var, df, b, below=False)
    p_slow = one_sided_p(log_ratio, var, df, -b, below=True)
    p_diff = np.where(usable, np.minimum(1.0, 2 * np.minimum(p_fast, p_slow)), 1.0)
    p_in = np.where(usable, np.minimum(1.0, 2 * np.maximum(one_sided_p(log_ratio, var, df, -b, below=False),
                                                             one_sided_p(log_ratio, var, df, b, below=True))), 1.0)
    if group is not None:
        from gpuparity.comparison.moderate import grouped_bh

        adjust = lambda p: grouped_bh(p, np.asarray(group))     # noqa: E731
    else:
        adjust = bh
    differs = adjust(p_diff) <= q
    return np.select([differs & (p_fast < p_slow), differs, adjust(p_in) <= q], [0, 2, 1], 3)


def fdr_counts(codes: np.ndarray, q: float = FDR_Q) -> dict:
    """Headline counts of faster / slower / parity / inconclusive: fdr_verdicts' codes counted."""
    counts = np.bincount(codes, minlength=len(VERDICTS))
    return {**{v: int(counts[VERDICTS.index(v)]) for v in ("faster", "slower", "parity", "inconclusive")},
            "method": f"Benjamini-Hochberg over {len(codes)} result(s), q = {q:g}"}


def gate_failures(log_ratio: np.ndarray, var: np.ndarray, df: np.ndarray, threshold: float,
                  alpha: float = GATE_ALPHA) -> np.ndarray:
    """Which tests show B below (1 - threshold) x A, Holm-adjusted over all of them at a
    family-wise one-sided alpha."""
    p = one_sided_p(log_ratio, var, df, math.log(1 - threshold), below=True)
    return holm(p) <= alpha
