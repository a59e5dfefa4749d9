"""The measurement loop: device-synchronised timing with an adaptive stop.

- CPU: perf_counter_ns around a block of invocations.
- CUDA and ROCm: torch.cuda events around the block (they exist on both back ends); the
  device is synchronised before reading them. torch.cuda.Event raises on a CPU-only build,
  so the timer is chosen from the device first.
- Warm-up runs for a fixed time; blocks hold enough invocations that the timer's own cost is
  under 1e-4 of the block; cold runs flush the last-level cache outside the timed region
  (one invocation per sample then); each sample is seconds per invocation.
- Stop when the relative noise of the median is under the target after a minimum number of
  samples and time, or at the timeout (flagged, with a warning).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from gpuparity.measure.stats import relative_noise, summarize


@dataclass
class LoopConfig:
    warmup_s: float = 0.2
    min_samples: int = 5
    max_samples: int = 200
    min_time_s: float = 0.3
    max_time_s: float = 10.0
    target_noise: float = 0.01
    timer_overhead_frac: float = 1e-4
    cold: bool = False
    flush_bytes: int = 0

    @classmethod
    def for_suite(cls, suite: str, device: str) -> "LoopConfig":
        if suite == "quick":
            return cls(warmup_s=0.05, min_samples=5, max_samples=30, min_time_s=0.1, max_time_s=1.5,
                       target_noise=0.02)
        if suite == "full":
            return cls(warmup_s=0.5, min_samples=10, max_samples=500, min_time_s=1.0, max_time_s=30.0)
        return cls()


@dataclass
class Measurement:
    samples: list[float]
    summary: dict
    reps_per_sample: int
    timer: str
    timed_out: bool
    warmup_invocations: int
    elapsed_s: float
    config: dict = field(default_factory=dict)


class Timer:
    """Times one block. `device` is 'cpu' or a CUDA/ROCm device string."""

    def __init__(self, device: str = "cpu"):
        self.device = device
        self.gpu = device.startswith("cuda")
        if self.gpu:
            import torch

            self._torch = torch
            self.name = "torch.cuda.Event"
        else:
            self.name = "perf_counter_ns"

    def sync(self) -> None:
        if self.gpu:
            self._torch.cuda.synchronize(self.device)

    def time_block(self, fn: Callable[[], Any], reps: int) -> float:
        """Seconds for `reps` back-to-back invocations."""
        if self.gpu:
            start = self._torch.cuda.Event(enable_timing=True)
            end = self._torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        t0 = time.perf_counter_ns()
        for _ in range(reps):
            fn()
        return (time.perf_counter_ns() - t0) / 1e9

    def overhead_s(self) -> float:
        """Cost of timing an empty block: what a block must dwarf."""
        self.time_block(lambda: None, 1)
        return min(self.time_block(lambda: None, 1) for _ in range(20))


class CacheFlusher:
    """Writes a buffer >= 2x the last-level cache so the next invocation starts cold."""

    def __init__(self, device: str, nbytes: int):
        import torch

        self._buf = torch.empty(max(nbytes, 1) // 4, dtype=torch.float32, device=device)

    def __call__(self) -> None:
        self._buf.fill_(1.0)


def should_stop(samples: list[float], elapsed: float, cfg: LoopConfig) -> tuple[bool, bool]:
    """(stop, timed_out): quiet enough after the minimum, or out of samples, or out of time."""
    n = len(samples)
    if n >= cfg.min_samples and elapsed >= cfg.min_time_s and relative_noise(samples) <= cfg.target_noise:
        return True, False
    if n >= cfg.max_samples and n >= cfg.min_samples:
        return True, False
    if elapsed >= cfg.max_time_s and n >= 2:
        return True, relative_noise(samples) > cfg.target_noise
    return False, False


def measure(fn: Callable[[], Any], device: str = "cpu", config: LoopConfig | None = None,
            on_sample: Callable[[int], None] | None = None, timer: Timer | None = None) -> Measurement:
    cfg = config or LoopConfig()
    timer = timer or Timer(device)
    t_start = time.perf_counter()

    # Warm-up by time; also gives a first estimate of one invocation's cost.
    warm = 0
    timer.sync()
    w0 = time.perf_counter()
    while True:
        fn()
        warm += 1
        timer.sync()
        if time.perf_counter() - w0 >= cfg.warmup_s:
            break
    per_call = max((time.perf_counter() - w0) / warm, 1e-9)

    if cfg.cold:
        reps = 1
        flush = CacheFlusher(device, cfg.flush_bytes) if cfg.flush_bytes else None
    else:
        flush = None
        overhead = timer.overhead_s()
        needed = overhead / cfg.timer_overhead_frac
        reps = max(1, int(needed / per_call + 0.999))
        # Keep a block well under the time budget so several samples fit.
        reps = min(reps, max(1, int(cfg.max_time_s / 4 / per_call)))

    samples: list[float] = []
    timed_out = False
    m0 = time.perf_counter()
    while True:
        if flush is not None:
            flush()
            timer.sync()
        samples.append(timer.time_block(fn, reps) / reps)
        if on_sample:
            on_sample(len(samples))
        stop, timed_out = should_stop(samples, time.perf_counter() - m0, cfg)
        if stop:
            break
    return Measurement(
        samples=samples,
        summary=summarize(samples),
        reps_per_sample=reps,
        timer=timer.name,
        timed_out=timed_out,
        warmup_invocations=warm,
        elapsed_s=time.perf_counter() - t_start,
        config=asdict(cfg),
    )
