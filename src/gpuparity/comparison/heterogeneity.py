"""Heterogeneity as a verdict of its own: a mean over keys that disagree is "mixed", never parity.

A category (or the overall) mean reads "mixed: faster on X of N, slower on Y", the extremes named,
when its keys disagree beyond the parity band:
- keys both faster and slower after Benjamini-Hochberg (the rows' fdr_verdict); or
- some key faster or slower after adjustment while the mean's own interval reads parity (a
  parity mean would hide them); or
- a heterogeneity test: Cochran's Q of the keys' log ratios around their weighted mean, with each
  key's key-specific variance (a side that takes a Prior: its whole variance, since a default does
  not split the run effect from the key x run part: conservative), read as F(N - 1, df) with the
  keys' smallest df, below HET_P, and the estimated spread of the true key ratios (DerSimonian-
  Laird tau) reaching beyond both ends of the band (exp(mean -+ tau) outside it).
A mean held for contention or flagged results stays held: "mixed" needs a verdict to replace.
"""

from __future__ import annotations

import math

import numpy as np

HET_P = 0.01


def _test(d: np.ndarray, v: np.ndarray, df: np.ndarray) -> tuple[float, float]:
    """(p of Cochran's Q as F(n - 1, smallest df), DerSimonian-Laird tau) over keys with variances."""
    import scipy.special

    ok = np.isfinite(d) & np.isfinite(v) & (v > 0)
    d, v = d[ok], v[ok]
    n = len(d)
    if n < 3:
        return 1.0, 0.0
    w = 1.0 / v
    mean = float((w * d).sum() / w.sum())
    q = float((w * (d - mean) ** 2).sum())
    s1, s2 = float(w.sum()), float((w * w).sum())
    tau = math.sqrt(max(0.0, (q - (n - 1)) / (s1 - s2 / s1))) if s1 > 0 else 0.0
    dfd = float(np.min(df[ok])) if np.isfinite(df[ok]).any() else math.inf
    if math.isfinite(dfd) and dfd > 0:
        p = float(scipy.special.fdtrc(n - 1, dfd, q / (n - 1)))
    else:
        p = float(scipy.special.chdtrc(n - 1, q))
    return (p if math.isfinite(p) else 1.0), tau


def mixed(sel: np.ndarray, fdr: list[str], log_ratio: np.ndarray, het_var: np.ndarray, df: np.ndarray,
          mean_log: float, mean_verdict: str, tolerance: float, names: list[str]) -> dict | None:
    """The "mixed" reading of a mean over the rows `sel` (module notes), None where its keys agree.
    fdr: each row's adjusted verdict; het_var: each row's key-specific variance; names: each row's
    name for the extremes."""
    if not len(sel):
        return None
    b = math.log1p(tolerance)
    verdicts = [fdr[j] for j in sel.tolist()]
    nf, ns = verdicts.count("faster"), verdicts.count("slower")
    why = None
    if nf and ns:
        why = "keys both faster and slower after adjustment"
    elif (nf or ns) and mean_verdict == "parity":
        why = "keys beyond the band while the mean is within it"
    else:
        p, tau = _test(log_ratio[sel], het_var[sel], df[sel])
        if p < HET_P and mean_log - tau < -b and mean_log + tau > b:
            why = f"heterogeneity test p = {p:.2g}, key spread (tau) {100 * tau:.0f}% on the log scale"
    if why is None:
        return None
    lr = log_ratio[sel]
    lo, hi = int(sel[int(np.nanargmin(lr))]), int(sel[int(np.nanargmax(lr))])
    return {"faster": nf, "slower": ns, "n": int(len(sel)), "why": why,
            "lowest": {"name": names[lo], "ratio": math.exp(float(log_ratio[lo]))},
            "highest": {"name": names[hi], "ratio": math.exp(float(log_ratio[hi]))}}


def mixed_text(m: dict) -> str:
    """'mixed: faster on 100 of 200, slower on 100 (0.76x memory copy .. 1.31x gemm m=4096)'."""
    return (f"mixed: faster on {m['faster']} of {m['n']}, slower on {m['slower']} "
            f"({m['lowest']['ratio']:.2f}x {m['lowest']['name']} .. {m['highest']['ratio']:.2f}x "
            f"{m['highest']['name']})")
