"""Two programs' outputs compared as a person reads them: the same lines and words, the
numbers within a tolerance (relative or absolute, as math.isclose), so that a port whose float
sums round differently still compares equal."""

from __future__ import annotations

import math
import re

_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|(?<!\w)[-+]?(?:inf|nan)(?!\w)", re.I)


def _close(a: str, b: str, rtol: float, atol: float) -> bool:
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return math.isclose(x, y, rel_tol=rtol, abs_tol=atol)


def difference(a: str, b: str, rtol: float = 1e-5, atol: float = 1e-8) -> str | None:
    """None when the outputs are equal (numbers within tolerance), else the first difference."""
    la, lb = a.splitlines(), b.splitlines()
    for n, (x, y) in enumerate(zip(la, lb, strict=False), 1):
        if _NUMBER.sub("#", x) != _NUMBER.sub("#", y):
            return f"line {n}: {x.strip()[:80]!r} vs {y.strip()[:80]!r}"
        for p, q in zip(_NUMBER.findall(x), _NUMBER.findall(y), strict=True):
            if not _close(p, q, rtol, atol):
                return f"line {n}: {p} vs {q}"
    if len(la) != len(lb):
        return f"{len(la)} lines vs {len(lb)}"
    return None
