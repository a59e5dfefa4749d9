"""The parity band and the verdict it gives a ratio's interval: faster / parity / slower /
inconclusive, symmetric on the log scale (band [1/(1+t), 1+t]); the views print the band
through band_text / band_range.
"""

from __future__ import annotations

import math

import numpy as np

VERDICTS = ("faster", "parity", "slower", "inconclusive")
INCONCLUSIVE = VERDICTS.index("inconclusive")      # its code in verdicts()


def band(tolerance: float) -> tuple[float, float]:
    """The parity band on B/A, symmetric on the log scale: [1/(1+t), 1+t]."""
    return 1.0 / (1.0 + tolerance), 1.0 + tolerance


def band_range(tolerance: float) -> str:
    """The band's ends: '0.952-1.05' for 5%."""
    return "-".join(f"{x:.3f}".rstrip("0").rstrip(".") for x in band(tolerance))


def band_text(tolerance: float) -> str:
    """The band in words, as every view prints it: 'parity band 0.952-1.05 (±5% on the log scale)'."""
    return f"parity band {band_range(tolerance)} (±{100 * tolerance:g}% on the log scale)"


def verdict(ci_low: float | None, ci_high: float | None, tolerance: float = 0.05) -> str:
    """faster / parity / slower / inconclusive for a CI of the ratio B/A."""
    if ci_low is None or ci_high is None or not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return "inconclusive"
    return VERDICTS[int(verdicts(np.array([ci_low]), np.array([ci_high]), tolerance)[0])]


def verdicts(ci_low: np.ndarray, ci_high: np.ndarray, tolerance: float) -> np.ndarray:
    """Vectorised `verdict`: indices into VERDICTS."""
    lo, hi = band(tolerance)
    with np.errstate(invalid="ignore"):
        return np.select([ci_low > hi, ci_high < lo, (ci_low >= lo) & (ci_high <= hi)], [0, 2, 1], 3)
