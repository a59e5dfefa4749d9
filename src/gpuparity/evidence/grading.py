"""Claims graded by size: the measured effect set against the claimed one, with the evidence's spread.

A claim's expected subject/baseline ratio is a band [lo, hi] (either end open), a direction, or parity,
widened by its tolerance. Its claimed effect is the band's end nearest 1 (the least the claim asserts:
"10-20% faster" claims at least 1.1x). A measured ratio m is read as a share of that effect on the log
scale, share = ln(m) / ln(claimed), the scale on which the comparison reads every ratio (2x and 0.5x are
effects of one size). Grades:

  supported      m inside the band widened by the tolerance (for a direction-only claim: the direction).
  partly         the claimed direction, with at least PARTLY_FROM of the claimed effect (the share is
                 stated), or past the band's far end (the effect is larger than claimed: "exceeds").
  not supported  less than PARTLY_FROM of the claimed effect, or no effect beyond the noise: the right
                 direction alone never supports a magnitude; a parity claim more than PARITY_NEAR
                 tolerance bands away.
  contradicted   the other direction beyond the noise: the evidence's whole spread interval lies on the
                 other side of 1 (without a spread, m past the claim's tolerance band around 1); for an
                 absolute bound (a board power, a score), a figure on the wrong side of it.

A claim's verdict over several checks (pairs of parts, rounds, price bases, interactivity levels):
supported or partly when every check supports it, not supported or contradicted when every check
refutes it, and "mixed" when checks disagree, naming which check says what.
"""

from __future__ import annotations

import math

# A measured effect below two thirds of the claimed one (log scale) does not support the claim: a
# claim that overstates the effect by half again or more would mislead the reader who acts on it
# (1.18x met against a claimed 3.5x is 13%; 17% cheaper against a claimed 30% is 53%). From two
# thirds up the claim is "partly" supported, with the share stated.
PARTLY_FROM = 2 / 3
# A parity claim missed by up to twice its tolerance band is "near parity" (partly); beyond, not supported.
PARITY_NEAR = 2.0

SUPPORTS = ("supported", "partly")
REFUTES = ("not supported", "contradicted")
GRADES = (*SUPPORTS, *REFUTES, "mixed")


def bounds_text(bounds: tuple, tol: float) -> str:
    lo, hi = bounds
    if lo is not None and hi is not None:
        core = "parity" if lo == hi == 1 else f"{lo:.3g}" if lo == hi else f"{lo:.3g}-{hi:.3g}"
    elif lo is not None:
        core = "above 1" if lo == 1 else f">= {lo:.3g}"
    else:
        core = "below 1" if hi == 1 else f"<= {hi:.3g}"
    return f"{core} (tolerance {tol:.0%})"


def _direction(bounds: tuple) -> int:
    """+1: the claim says the subject is ahead (ratio above 1), -1: behind, 0: parity or a band around 1."""
    lo, hi = bounds
    if lo is not None and lo >= 1 and not (hi is not None and hi <= 1):
        return 1
    if hi is not None and hi <= 1 and not (lo is not None and lo >= 1):
        return -1
    return 0


def claimed_effect(bounds: tuple) -> float | None:
    """The band's end nearest 1 (the least the claim asserts); None for parity or direction only."""
    lo, hi = bounds
    near = lo if _direction(bounds) > 0 else hi if _direction(bounds) < 0 else None
    return None if near is None or near == 1 else near


def share_of(value: float, bounds: tuple) -> float | None:
    """ln(value) / ln(claimed effect): the part of the claimed effect measured (1 = all of it)."""
    effect = claimed_effect(bounds)
    if effect is None or not value > 0:
        return None
    return math.log(value) / math.log(effect)


def within(value: float, bounds: tuple, tol: float) -> bool:
    lo, hi = bounds
    if lo == hi == 1:                                 # parity: symmetric on the log scale
        return 1 / (1 + tol) <= value <= 1 + tol
    return (lo is None or value >= lo * (1 - tol)) and (hi is None or value <= hi * (1 + tol))


def grade(value: float, bounds: tuple, tol: float, spread: tuple | None = None, absolute: bool = False) -> dict:
    """{grade, share, value, spread, why} of one measured figure against a claim's band (module notes).
    spread: (low, high) of the ratio over the evidence's spread, where it is known."""
    spread = tuple(spread) if spread and all(isinstance(s, (int, float)) and s > 0 for s in spread) else None
    out = {"value": value, "share": None, "spread": list(spread) if spread else None}
    if absolute:
        ok = within(value, bounds, tol)
        return {**out, "grade": "supported" if ok else "contradicted",
                "why": "holds" if ok else "the figure is on the other side of the claimed bound"}
    direction = _direction(bounds)
    lo, hi = bounds
    if direction == 0:
        if within(value, bounds, tol):
            return {**out, "grade": "supported", "why": "within the band"}
        if lo == hi == 1 and within(value, (1, 1), (1 + tol) ** PARITY_NEAR - 1):
            return {**out, "grade": "partly", "why": f"near parity (within {PARITY_NEAR:g} tolerance bands)"}
        return {**out, "grade": "not supported", "why": "outside the band"}
    share = share_of(value, bounds)
    out["share"] = share
    # the other direction beyond the noise: the spread (or the tolerance band) wholly past 1
    near_end = (spread[1] if direction > 0 else spread[0]) if spread else value * (1 + tol) ** direction
    if (value - 1) * direction < 0 and (near_end - 1) * direction < 0:
        return {**out, "grade": "contradicted", "why": "the other direction"}
    far = hi if direction > 0 else lo
    if share is None:                                  # a direction without a magnitude
        if far is not None and not within(value, bounds, tol) and (value - far) * direction > 0:
            return {**out, "grade": "partly", "why": "exceeds the claim: the effect is larger than claimed"}
        if (value - 1) * direction > 0:
            return {**out, "grade": "supported", "why": "the claimed direction"}
        return {**out, "grade": "not supported", "why": "no effect in the claimed direction"}
    if within(value, bounds, tol):
        return {**out, "grade": "supported", "why": "within the claimed band"}
    if far is not None and (value - far) * direction > 0:
        return {**out, "grade": "partly", "why": f"exceeds the claim: {share:.0%} of the claimed effect"}
    if share >= PARTLY_FROM:
        return {**out, "grade": "partly", "why": f"{share:.0%} of the claimed effect"}
    return {**out, "grade": "not supported",
            "why": f"{max(share, 0):.0%} of the claimed effect, under {PARTLY_FROM:.0%}: the direction alone "
                   "never supports a magnitude"}


def check(value: float, bounds: tuple, tol: float, label: str, what: str, spread: tuple | None = None,
          absolute: bool = False) -> dict:
    """A graded check: the grade, the figures and one line that says it (what, then the grade)."""
    g = grade(value, bounds, tol, spread, absolute)
    band = f" (over the evidence's spread {spread[0]:.3g}-{spread[1]:.3g})" if g["spread"] else ""
    summary = f"{what}: {value:.3g}{band} vs claimed {bounds_text(bounds, tol)}: {g['grade']} ({g['why']})"
    return {**g, "label": label, "passed": g["grade"] == "supported", "summary": summary, "absolute": absolute}


def combine(grades: list[tuple[str, str]]) -> tuple[str, str]:
    """(verdict, which check says what) over (label, grade) pairs; ('untested', '') with none."""
    if not grades:
        return "untested", ""
    by: dict[str, list[str]] = {}
    for label, g in grades:
        by.setdefault(g, []).append(label)
    kinds = set(by)
    supports = bool(kinds & {*SUPPORTS, "mixed"})
    refutes = bool(kinds & {*REFUTES, "mixed"})
    if supports and refutes:
        verdict = "mixed"
    elif supports:
        verdict = "supported" if kinds == {"supported"} else "partly"
    else:
        verdict = "contradicted" if kinds == {"contradicted"} else "not supported"
    detail = "; ".join(f"{g} on {', '.join(dict.fromkeys(by[g]))}" for g in GRADES if g in by) if len(by) > 1 else ""
    return verdict, detail
