"""Operands that do not flatter: sizes against the last-level cache, and rotating operand sets.

A kernel timed over and over on one small set of operands reads them from the cache after the
first call; an MI300X's 256 MB Infinity Cache holds a whole skinny-GEMM weight that an H200's 50 MB
L2 does not, so warm numbers tilt between vendors. Two remedies, recorded with every result:
- arrays far above the last-level cache (memory workloads: >= 4x);
- rotation: `copies` independent operand sets whose total is > 2x the cache, one per invocation
  in turn (`Rotation`), so each call finds its operands evicted by the calls before it.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

CPU_LLC_DEFAULT = 32 * 2**20
GPU_LLC_DEFAULT = 256 * 2**20      # the largest GPU last-level cache in use (MI300-class Infinity Cache)
ROTATE_OVER_LLC = 2                # rotated operand sets total more than this many caches
MAX_COPIES = 64


def llc_bytes(fingerprint: dict, device: str) -> int:
    """The measured device's last-level cache (platform.detect records it), else a safe default."""
    if device == "cpu":
        return int((fingerprint.get("cpu") or {}).get("llc_bytes") or CPU_LLC_DEFAULT)
    devices = fingerprint.get("devices") or [{}]
    return int(devices[0].get("llc_bytes") or GPU_LLC_DEFAULT)


def rotation_copies(set_bytes: int, llc: int, budget_bytes: int | None = None) -> int:
    """Operand sets needed so that together they exceed ROTATE_OVER_LLC x the cache (1 when one
    set already does), capped at MAX_COPIES and at what fits in `budget_bytes`."""
    if set_bytes <= 0:
        raise ValueError("an operand set has a size")
    copies = math.floor(ROTATE_OVER_LLC * llc / set_bytes) + 1
    if budget_bytes is not None:
        copies = min(copies, max(1, budget_bytes // set_bytes))
    return max(1, min(copies, MAX_COPIES))


class Rotation:
    """Cycles through operand sets: each call of `next()` gives the next one."""

    def __init__(self, sets: Sequence[Any]):
        if not sets:
            raise ValueError("nothing to rotate")
        self.sets, self._i = list(sets), 0

    def __len__(self) -> int:
        return len(self.sets)

    def next(self) -> Any:
        s = self.sets[self._i]
        self._i = (self._i + 1) % len(self.sets)
        return s


def rotating(sets: Sequence[Any], call: Callable[[Any], Any]) -> tuple[Callable[[], Any], Rotation]:
    """One invocation that runs `call` on the next set in turn, and the rotation behind it."""
    rot = Rotation(sets)

    def fn():
        return call(rot.next())

    return fn, rot


def describe(mode: str, copies: int, set_bytes: int, llc: int) -> dict:
    """What result["info"]["operands"] records."""
    total = copies * set_bytes
    return {"mode": mode, "copies": copies, "set_bytes": set_bytes, "total_bytes": total, "llc_bytes": llc,
            "over_llc": round(total / llc, 2) if llc else None}


def device_budget(device: str, share: float = 0.25) -> int | None:
    """Bytes the operand copies may take: a share of free device memory (None on a CPU: no cap
    beyond MAX_COPIES; CPU sizes are small)."""
    if device == "cpu":
        return None
    import torch

    free, _ = torch.cuda.mem_get_info()
    return int(free * share)
