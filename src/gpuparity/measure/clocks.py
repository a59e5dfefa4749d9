"""Device clocks for the measurement loop: where time is read, and how N invocations are replayed.

A clock records markers in the device's own order and reads the time between two of them after
one synchronisation (so a whole batch of samples costs one host-device round trip):
- `CpuClock`: perf_counter_ns at the marker; nothing is queued, so sync does nothing.
- `TorchGpuClock`: torch.cuda events on the current stream (CUDA and ROCm alike); graph capture
  through torch.cuda.CUDAGraph (a HIP graph on ROCm); a lead-in spin kernel (torch.cuda._sleep)
  keeps the device busy while the host queues a batch, so no sample starts on an idle device; its
  rate is timed again at the warmed-up clock (`calibrate`).

The loop (measure.loop) only talks to this interface; tests drive it with their own clocks.
"""

from __future__ import annotations

import time
from typing import Any, Callable

CPU_TIMER = "perf_counter_ns"
GPU_TIMER = "torch.cuda.Event"
LEAD_IN_MAX_S = 0.02


class NotCapturable(Exception):
    """The invocation cannot be recorded into a device graph; the message says why."""


class CpuClock:
    name = CPU_TIMER
    gpu = False

    def host_now(self) -> float:
        """The host's clock (seconds): how long the host took to issue work."""
        return time.perf_counter()

    def monotonic(self) -> float:
        """The clock telemetry samples on (measure.telemetry): busy intervals are mapped onto it."""
        return time.monotonic()

    def sync(self) -> None:
        pass

    def marker(self) -> Any:
        return time.perf_counter_ns()

    def elapsed(self, a, b) -> float:
        return (b - a) / 1e9

    def overhead_s(self) -> float:
        """Cost of an empty timed block: what a block must dwarf."""
        best = float("inf")
        for _ in range(20):
            a = self.marker()
            best = min(best, self.elapsed(a, self.marker()))
        return best

    def capture(self, fn: Callable[[], Any], n: int) -> Callable[[], None]:
        raise NotCapturable("a CPU has no device graphs")

    def lead_in(self, seconds: float) -> None:
        pass

    def calibrate(self) -> None:
        pass


class TorchGpuClock:
    name = GPU_TIMER
    gpu = True

    def __init__(self, device: str = "cuda"):
        import torch

        self.torch, self.device = torch, device
        self._cycles_per_s: float | None = None

    def host_now(self) -> float:
        return time.perf_counter()

    def monotonic(self) -> float:
        return time.monotonic()

    def sync(self) -> None:
        self.torch.cuda.synchronize(self.device)

    def marker(self) -> Any:
        ev = self.torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def elapsed(self, a, b) -> float:
        return a.elapsed_time(b) / 1e3

    def overhead_s(self) -> float:
        """Nothing: events queued back to back inside a batch add no host time to a sample; their
        ~0.5 us resolution is what min_block_s (>= 0.5 ms on a GPU) dwarfs."""
        return 0.0

    def capture(self, fn: Callable[[], Any], n: int) -> Callable[[], None]:
        """A replay of `n` back-to-back invocations, captured after a warm call on a side stream
        (library handles and workspaces are created outside the capture)."""
        torch = self.torch
        graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        try:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn()
            torch.cuda.current_stream().wait_stream(side)
            self.sync()
            with torch.cuda.graph(graph):
                for _ in range(n):
                    fn()
            self.sync()
        except Exception as exc:  # noqa: BLE001 - any refusal means: queue eagerly instead
            try:
                self.sync()
            except Exception:
                pass
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise NotCapturable(f"{type(exc).__name__}: {first[:200]}") from exc
        return graph.replay

    def lead_in(self, seconds: float) -> None:
        """Queue a spin kernel of about `seconds` so the host runs ahead of the device."""
        sleep = getattr(self.torch.cuda, "_sleep", None)
        if sleep is None or seconds <= 0:
            return
        sleep(max(1, int(min(seconds, LEAD_IN_MAX_S) * self.cycles_per_s())))

    def calibrate(self) -> None:
        """Time the spin kernel again now: the loop calls this once the warm-up has brought the
        clocks up, so a lead-in lasts what it should at the clock the samples run at (a rate timed
        at idle clocks makes SM-clocked spins too short)."""
        self._cycles_per_s = None
        self.cycles_per_s()

    def cycles_per_s(self) -> float:
        """The spin kernel's clock rate, timed on first use and again by calibrate() (it differs by
        vendor: SM clock vs a fixed counter)."""
        if self._cycles_per_s is None:
            cycles = 1_000_000
            self.sync()
            a = self.marker()
            self.torch.cuda._sleep(cycles)
            b = self.marker()
            self.sync()
            self._cycles_per_s = cycles / max(self.elapsed(a, b), 1e-6)
        return self._cycles_per_s


def clock_for(device: str):
    return CpuClock() if device == "cpu" else TorchGpuClock(device)
