"""How a stated figure is held to the one its samples give (results/recompute.py): a disagreement
is refused with one line, or noted (and the figure replaced) when fixing; equal within rounding.
"""

from __future__ import annotations

import math
from typing import Any

from gpuparity.errors import UserError

REL_TOL = 1e-6                  # "beyond rounding": JSON keeps floats exactly; this allows other libms
ABS_TOL = 1e-12
FLAG = "recomputed"


class Disagreement(Exception):
    """A figure the document states that its samples do not give (fixable by recomputing)."""


class _Checker:
    def __init__(self, origin: str, fix: bool):
        self.origin, self.fix, self.notes = origin, fix, []

    def refuse(self, where: str, what: str) -> None:
        raise UserError(f"{self.origin}: {where}: {what}")

    def differ(self, where: str, what: str) -> None:
        """A disagreement: refused with one line (the first one), or noted when fixing."""
        if not self.fix:
            raise UserError(f"{self.origin}: {where}: {what} (import --recompute stores what the samples give)")
        self.notes.append(f"{where}: {what}")

    def same(self, where: str, field: str, stated: Any, derived: Any) -> bool:
        """True when `stated` is what the samples give (or states nothing); else a disagreement."""
        if stated is None or _close(stated, derived):
            return True
        if derived is None:
            self.differ(where, f"{field} states {_show(stated)}, but nothing the document holds gives it")
        else:
            self.differ(where, f"{field} states {_show(stated)}, its samples give {_show(derived)}")
        return False


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) \
            or not isinstance(b, (int, float)):
        return a == b
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    return abs(a - b) <= ABS_TOL + REL_TOL * max(abs(a), abs(b))


def _show(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)[:60]


def _num(v: Any) -> float | None:
    """A finite number, else None (nan from a figure function means 'not known')."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None
