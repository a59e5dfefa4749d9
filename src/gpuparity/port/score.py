"""Portability score: the share of the porting work the translation did on its own.

Each CUDA API use is one item (ten calls to cudaMalloc weigh ten times one call to
cudaGraphAddNode: the score tells how much of the code a rename ports, not how much of the
CUDA API surface HIP covers), and so is each hazard that blocks the AMD build (inline PTX,
texture references ...): a file with one of those is not ported, whatever its API uses say,
so it never scores 100%. Hazards that build but may give wrong results or run slowly do not
lower the score; they count, with the unsupported uses, in "needs a human".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from gpuparity.port.translate import ApiUse


@dataclass
class Score:
    uses: int = 0
    supported: int = 0
    blocking: int = 0  # hazards that block the AMD build

    @property
    def unsupported(self) -> int:
        return self.uses - self.supported

    @property
    def items(self) -> int:
        return self.uses + self.blocking

    @property
    def value(self) -> float | None:
        """Share in [0, 1]; None when the code has nothing to port (no CUDA API, no hazard)."""
        return self.supported / self.items if self.items else None

    def add(self, other: "Score") -> None:
        self.uses += other.uses
        self.supported += other.supported
        self.blocking += other.blocking

    def percent(self) -> str:
        v = self.value
        if v is None:
            return "n/a"
        text = f"{100 * v:.1f}%"
        return "99.9%" if text == "100.0%" and self.supported < self.items else text


def score_uses(uses: Iterable[ApiUse], blocking: int = 0) -> Score:
    s = Score(blocking=blocking)
    for u in uses:
        s.uses += 1
        s.supported += bool(u.supported)
    return s


def tree_score(scores: Iterable[Score]) -> Score:
    total = Score()
    for s in scores:
        total.add(s)
    return total
