"""The one spelling of each kind of figure, for every view: the run table and `show`, `compare`,
the HTML report and its markdown twin print a figure through these functions and nothing else,
so a figure read in one view is found, character for character, in the others (the run table
once printed 4 significant digits and the report 3: 97.49 there, 97.5 here).

Plain text; '' where there is no number (each view prints its own placeholder). The prose of a
comparison's headline ("B is 1.80x A", comparison.headline) and a peer tool's own table
(results.serving_table, in that tool's format) keep their spellings.
"""

from __future__ import annotations

import math


def _real(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def figure(x) -> str:
    """A measured quantity in its unit (a throughput and its CI bounds, a datasheet peak, a latency
    in ms): 4 significant digits, whole and grouped from 1,000 on: 0.01335, 97.49, 812.3, 4,300."""
    if not _real(x):
        return ""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def percent(x) -> str:
    """A share in percent (of the datasheet peak, MFU), without the sign: 82.1, 0.52, 100."""
    return f"{x:.3g}" if _real(x) else ""


def ratio(x) -> str:
    """B/A in at most 8 characters: 0.583, 1.2e+08 (a wild CI bound must not widen a column)."""
    if not _real(x):
        return ""
    return f"{x:.3f}" if 0.001 <= abs(x) < 1000 else f"{x:.2g}"


def ratio_ci(value, lo, hi) -> str:
    """'0.583 [0.551, 0.617]'; the ratio alone without both bounds."""
    if not _real(value):
        return ""
    return f"{ratio(value)} [{ratio(lo)}, {ratio(hi)}]" if _real(lo) and _real(hi) else ratio(value)


def latency(seconds) -> str:
    """A time with the unit that reads best, 3 significant digits: 1.23 s, 45.6 ms, 7.8 us, 950 ns."""
    if not _real(seconds):
        return ""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
