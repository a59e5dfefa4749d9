"""Power / clock / temperature telemetry (placeholder: the issue-6 work replaces this).

Interface used by the runner and workloads:
  open_sampler(fingerprint) -> sampler with describe() -> dict, start(), stop() -> dict | None
"""

from __future__ import annotations


class NullSampler:
    def __init__(self, reason: str):
        self.reason = reason

    def describe(self) -> dict:
        return {"method": "none", "reason": self.reason}

    def start(self) -> None:
        pass

    def stop(self) -> dict:
        return {"method": "none", "valid": False, "energy": f"unavailable: {self.reason}"}


def open_sampler(fingerprint: dict):
    return NullSampler("no power sampler implemented yet")
