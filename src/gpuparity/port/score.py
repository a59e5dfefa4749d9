"""Portability score: the occurrence-weighted share of CUDA API uses with a supported HIP API.

Ten calls to cudaMalloc weigh ten times one call to cudaGraphAddNode: the score tells how much
of the code a rename ports, not how much of the CUDA API surface HIP covers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from gpuparity.port.translate import ApiUse


@dataclass
class Score:
    uses: int = 0
    supported: int = 0

    @property
    def unsupported(self) -> int:
        return self.uses - self.supported

    @property
    def value(self) -> float | None:
        """Share in [0, 1]; None when the code uses no CUDA API at all."""
        return self.supported / self.uses if self.uses else None

    def add(self, other: "Score") -> None:
        self.uses += other.uses
        self.supported += other.supported

    def percent(self) -> str:
        v = self.value
        return "n/a" if v is None else f"{100 * v:.1f}%"


def score_uses(uses: Iterable[ApiUse]) -> Score:
    s = Score()
    for u in uses:
        s.uses += 1
        s.supported += bool(u.supported)
    return s


def tree_score(scores: Iterable[Score]) -> Score:
    total = Score()
    for s in scores:
        total.add(s)
    return total
