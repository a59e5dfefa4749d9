"""torch.distributed awareness for runs launched by torchrun: every rank measures, rank 0 writes."""

from __future__ import annotations

import os


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def is_distributed() -> bool:
    return world_size() > 1


def is_writer() -> bool:
    return rank() == 0
