"""The measurement loop: device-timed blocks in batches, steady-state warm-up, adaptive stop.

One trial of one case, in this order:
1. The first call runs alone and is timed apart (`first_call_s`): autotuning first calls (cuDNN
   benchmark, MIOpen find, TunableOp) never enter the estimate or a sample.
2. A short eager burst estimates the device time and the host (launch) time of one call.
3. The method: on a CPU "cpu" (host timer). On a GPU "graph" (N invocations captured into one
   CUDA/HIP graph, one launch per sample) when the call is short or launch-bound and capturable,
   else "queue" (eager launches queued behind a lead-in spin kernel, so the device never waits for
   the host; a batch the host could not keep ahead of is counted as host-bound).
4. A block (one sample) holds enough invocations to last `min_block_s` (and, on a CPU, to dwarf
   the timer's cost); a sample is the block's time over its invocations. Cold runs flush the
   last-level cache before each block, queued ahead of its start marker with no host sync.
5. Warm-up in blocks until at least `warmup_s` has passed and the last `steady_blocks` windows of
   at least `steady_window_s` of device time each (100 ms on GPUs: clocks, power and temperature
   settle over 0.1-10 s, not over one millisecond block) agree within `steady_tol` (or
   `warmup_max_s` is spent: recorded as not steady). The lead-in spin is then calibrated again,
   at the warmed-up clock.
6. Timed batches: all markers of a batch are recorded, then one synchronisation; the stop rule
   (measure.stop: an order-statistic CI of the median, microseconds) is checked between batches.
   Each sample's busy interval is mapped to the host's monotonic clock, so the energy window is
   the timed busy time and nothing else.
7. Throttling (nvbench's rule, with the driver's word): after each timed batch the device's state
   is read (`throttle`); a batch that ends with a power / thermal reason active and the SM clock
   below THROTTLE_CLOCK of the warmed-up clock is dropped and counted, and the loop waits
   THROTTLE_RECOVERY_S before the next. A sustained power cap is the steady state and is kept;
   at most half the batches are dropped (past that they are kept and flagged "throttled").
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from gpuparity.measure.clocks import CpuClock, NotCapturable, clock_for
from gpuparity.measure.stats import summarize
from gpuparity.measure.stop import MAX_SAMPLES, TIMEOUT, median_rel_halfwidth, should_stop
from gpuparity.measure.telemetry import throttle_dip

METHODS = ("auto", "graph", "queue")
SHORT_CALL_S = 2e-4          # a call this short is dominated by its launch: replay it from a graph
LAUNCH_BOUND_SHARE = 0.5     # ... as is one whose host launch time is this share of its device time
ESTIMATE_S = 2e-3            # device time of the eager burst that estimates one call
MAX_BATCH = 256              # samples between two synchronisations at most
MERGE_GAP_S = 2e-6           # busy intervals closer than this (marker resolution) are one interval
THROTTLE_CLOCK = 0.75        # a batch is throttled below this share of the warmed-up SM clock (nvbench)
THROTTLE_RECOVERY_S = 0.05   # wait after a throttled batch (nvbench's default recovery delay)


@dataclass
class LoopConfig:
    warmup_s: float = 0.2            # warm-up lasts at least this long ...
    warmup_max_s: float = 2.0        # ... and at most this long waiting for steady blocks
    steady_blocks: int = 3           # the last windows of the warm-up that must agree ...
    steady_tol: float = 0.02         # ... within this relative range ...
    steady_window_s: float = 0.1     # ... each at least this much device time (whole blocks)
    min_samples: int = 5
    max_samples: int = 200
    min_time_s: float = 0.3
    max_time_s: float = 10.0
    target_noise: float = 0.01       # stop when the median's 95% CI half-width is under this share
    timer_overhead_frac: float = 1e-4
    min_block_s: float = 1e-3        # device time of one sample at least (GPU)
    batch_s: float = 0.05            # device time queued between two synchronisations
    method: str = "auto"             # auto | graph | queue (GPU)
    cold: bool = False
    flush_bytes: int = 0

    @classmethod
    def for_suite(cls, suite: str, device: str) -> "LoopConfig":
        gpu = device != "cpu"
        if suite == "quick":
            if gpu:
                return cls(warmup_s=0.3, warmup_max_s=1.5, min_samples=5, max_samples=60, min_time_s=0.1,
                           max_time_s=1.5, target_noise=0.02, min_block_s=5e-4)
            # A CPU's quick suite is a smoke test of a few minutes: 20 ms windows.
            return cls(warmup_s=0.05, warmup_max_s=0.15, steady_tol=0.05, steady_window_s=0.02, min_samples=5,
                       max_samples=30, min_time_s=0.1, max_time_s=1.5, target_noise=0.02, min_block_s=0.0,
                       batch_s=0.02)
        if suite == "full":
            return cls(warmup_s=2.0 if gpu else 0.5, warmup_max_s=10.0 if gpu else 2.0, min_samples=10,
                       max_samples=500, min_time_s=1.0, max_time_s=30.0, min_block_s=2e-3 if gpu else 0.0,
                       batch_s=0.1)
        return cls(warmup_s=1.0 if gpu else 0.2, warmup_max_s=5.0 if gpu else 1.0,
                   min_block_s=1e-3 if gpu else 0.0, batch_s=0.1 if gpu else 0.05)


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
    hit_max_samples: bool = False
    method: str = "cpu"              # cpu | graph | queue
    method_note: str = ""            # why this method
    first_call_s: float | None = None
    warmup_s: float = 0.0
    steady: bool = True              # the warm-up ended on agreeing windows
    batches: int = 0
    host_bound_batches: int = 0      # queue batches the host could not keep ahead of
    throttled_samples: int = 0       # samples dropped: taken while the device throttled (and their batches)
    throttled_batches: int = 0
    throttled_kept: int = 0          # throttled batches kept (past the share the loop may drop)
    throttle_reasons: list = field(default_factory=list)   # what the driver said, per throttled batch (first few)
    per_call_host_s: float | None = None
    windows: list[tuple[float, float]] = field(default_factory=list)   # busy intervals, monotonic s
    state_start: Any = None          # probe() right before the first timed batch ...
    state_end: Any = None            # ... and right after the last


@dataclass
class Estimate:
    device_s: float                  # one call's device time
    host_s: float                    # the host's time to issue one call
    calls: int


def choose_method(requested: str, est: Estimate, gpu: bool, capturable: bool) -> tuple[str, str]:
    """(method, why). Graphs where the call is short or launch-bound and can be captured; else the
    eager queue; the host timer on a CPU."""
    if requested not in METHODS:
        raise ValueError(f"loop method must be one of {METHODS}, got {requested!r}")
    if not gpu:
        return "cpu", "host timer (no device queue)"
    if requested == "queue":
        return "queue", "requested"
    if not capturable:
        return "queue", "the workload cannot be captured into a graph"
    if requested == "graph":
        return "graph", "requested"
    if est.device_s < SHORT_CALL_S:
        return "graph", f"short call ({est.device_s * 1e6:.1f} us)"
    if est.host_s >= LAUNCH_BOUND_SHARE * est.device_s:
        return "graph", (f"launch-bound (host {est.host_s * 1e6:.1f} us per call, device "
                         f"{est.device_s * 1e6:.1f} us)")
    return "queue", (f"device-bound (host {est.host_s * 1e6:.1f} us per call, device "
                     f"{est.device_s * 1e6:.1f} us)")


def block_reps(per_call_s: float, cfg: LoopConfig, clock, cycle: int = 1) -> int:
    """Invocations in one block: at least `min_block_s` of device time and enough to dwarf the
    timer's cost; one for cold runs; whole rotations of `cycle` operand sets."""
    if cfg.cold:
        return 1
    block_s = max(cfg.min_block_s, clock.overhead_s() / cfg.timer_overhead_frac)
    reps = max(1, math.ceil(block_s / max(per_call_s, 1e-9)))
    reps = min(reps, max(1, int(cfg.max_time_s / 4 / max(per_call_s, 1e-9))))  # several samples fit
    return -(-reps // cycle) * cycle


def estimate(fn: Callable[[], Any], clock, min_s: float = ESTIMATE_S, max_calls: int = 4096) -> Estimate:
    """Device and host time of one call from an eager burst long enough to time (the first call
    is already behind us)."""
    n = 1
    while True:
        clock.sync()
        h0 = clock.host_now()
        a = clock.marker()
        for _ in range(n):
            fn()
        b = clock.marker()
        host = clock.host_now() - h0
        clock.sync()
        dev = clock.elapsed(a, b)
        if dev >= min_s or n >= max_calls:
            return Estimate(device_s=max(dev / n, 1e-9), host_s=host / n, calls=n)
        n = min(max_calls, max(2 * n, math.ceil(n * min_s / max(dev, 1e-9))))


class Flush:
    """Writes a buffer >= 2x the last-level cache so the next block starts cold."""

    def __init__(self, device: str, nbytes: int):
        import torch

        self._buf = torch.empty(max(nbytes, 4) // 4, dtype=torch.float32, device=device)

    def __call__(self) -> None:
        self._buf.fill_(1.0)


class Blocks:
    """One block of `reps` invocations: a graph replay, or the eager calls."""

    def __init__(self, fn: Callable[[], Any], reps: int, method: str, clock):
        self.reps, self.method, self.note = reps, method, ""
        self.run: Callable[[], Any]
        if method == "graph":
            self.run = clock.capture(fn, reps)
        else:
            def run():
                for _ in range(reps):
                    fn()
            self.run = run


@dataclass
class Batch:
    times: list[float]               # seconds per block
    windows: list[tuple[float, float]]
    host_bound: bool
    host_per_block_s: float          # the host's time to queue one block (sizes the next lead-in)


def run_batch(blocks: Blocks, k: int, clock, flush: Callable[[], None] | None = None,
              lead_in_s: float = 0.0) -> Batch:
    """k blocks queued back to back behind a lead-in, one synchronisation; busy intervals on the
    monotonic clock."""
    clock.lead_in(lead_in_s)
    marks = []
    h0 = clock.host_now()
    for _ in range(k):
        if flush is not None:
            flush()
        a = clock.marker()
        blocks.run()
        marks.append((a, clock.marker()))
    queued = clock.host_now()
    clock.sync()
    t_sync = clock.monotonic()
    wait = clock.host_now() - queued           # the work still queued when the host was done
    last = marks[-1][1]
    times = [clock.elapsed(a, b) for a, b in marks]
    windows = []
    for (_, b), dt in zip(marks, times, strict=True):
        end = t_sync - clock.elapsed(b, last)
        windows.append((end - dt, end))
    # Less than a block still queued at the end: the device kept pace with the host, i.e. it
    # waited for launches (host-bound) rather than the host waiting for it.
    return Batch(times=times, windows=windows, host_bound=clock.gpu and wait < times[-1],
                 host_per_block_s=(queued - h0) / k)


def merge_windows(windows: list[tuple[float, float]], gap: float = MERGE_GAP_S) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in windows:
        if out and a - out[-1][1] <= gap:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def windows_of(block_times: list[float], window_s: float, count: int) -> list[float]:
    """Mean block time of each of the last `count` windows of whole blocks lasting at least
    `window_s` together (newest last); fewer when the blocks do not fill them."""
    out: list[float] = []
    total, n = 0.0, 0
    for t in reversed(block_times):
        total, n = total + t, n + 1
        if total >= window_s:
            out.append(total / n)
            total, n = 0.0, 0
            if len(out) == count:
                break
    return out[::-1]


def steady(block_times: list[float], cfg: LoopConfig) -> bool:
    """The last `steady_blocks` windows (of >= `steady_window_s` each) agree within `steady_tol`
    of their median."""
    last = sorted(windows_of(block_times, cfg.steady_window_s, cfg.steady_blocks))
    if len(last) < cfg.steady_blocks:
        return False
    return (last[-1] - last[0]) <= cfg.steady_tol * last[len(last) // 2]


def batch_size(block_s: float, cfg: LoopConfig, n: int) -> int:
    """Blocks in the next batch: about `batch_s` of device time, within the samples left."""
    k = max(1, min(MAX_BATCH, round(cfg.batch_s / max(block_s, 1e-9))))
    return max(1, min(k, cfg.max_samples - n)) if cfg.max_samples > n else 1


def measure(fn: Callable[[], Any], device: str = "cpu", config: LoopConfig | None = None,
            on_sample: Callable[[int], None] | None = None, *, clock=None, capturable: bool = True,
            cycle: int = 1, probe: Callable[[], Any] | None = None,
            throttle: Callable[[], Any] | None = None) -> Measurement:
    """Measure one trial of `fn` (see the module docstring). `cycle`: operand sets a rotating
    workload goes through (blocks hold whole rotations); `probe()`: the device's clocks and
    temperature, read at the start and the end of the timed window; `throttle()`: the same
    reading (measure.telemetry's snapshot), taken after every timed batch to drop throttled ones."""
    cfg = config or LoopConfig()
    clock = clock or clock_for(device)
    t_start = time.perf_counter()

    clock.sync()
    h0 = clock.host_now()
    fn()
    clock.sync()
    first_call_s = clock.host_now() - h0

    est = estimate(fn, clock)
    method, note = choose_method(cfg.method, est, clock.gpu, capturable)
    flush = Flush(device, cfg.flush_bytes) if cfg.cold and cfg.flush_bytes else None
    blocks, note = _blocks(fn, block_reps(est.device_s, cfg, clock, cycle), method, note, clock)
    warm = est.calls + 1

    # Warm-up to steady state; the block size is re-derived once from warm figures when calls
    # run more than 2x faster than estimated (clocks up, autotuning done, a graph without the
    # launch gaps of the eager estimate). Slower calls only make blocks longer than needed.
    w0 = time.perf_counter()
    times: list[float] = []
    resized = False
    host_per_block: float | None = None
    while True:
        k = batch_size(max(est.device_s * blocks.reps, 1e-9), cfg, 0)
        b = run_batch(blocks, k, clock, flush, _lead_in(est, blocks, host_per_block))
        host_per_block = b.host_per_block_s
        times += b.times
        warm += k * blocks.reps
        elapsed = time.perf_counter() - w0
        per_call = sorted(times[-cfg.steady_blocks:])[len(times[-cfg.steady_blocks:]) // 2] / blocks.reps
        if not resized and not cfg.cold and per_call < est.device_s / 2 and len(times) >= cfg.steady_blocks:
            resized = True
            est = Estimate(device_s=per_call, host_s=est.host_s, calls=est.calls)
            new_reps = block_reps(per_call, cfg, clock, cycle)
            if new_reps != blocks.reps:
                blocks, note = _blocks(fn, new_reps, blocks.method, note, clock)
                times, host_per_block = [], None
                continue
        is_steady = steady(times, cfg)
        if (elapsed >= cfg.warmup_s and is_steady) or elapsed >= cfg.warmup_max_s:
            break
    est = Estimate(device_s=per_call, host_s=est.host_s, calls=est.calls)
    warmup_s = time.perf_counter() - w0
    calibrate = getattr(clock, "calibrate", None)
    if calibrate is not None:          # the lead-in spin's rate at the warmed-up clock
        calibrate()
    reference = throttle() if throttle is not None else None

    state_start = probe() if probe else None
    samples: list[float] = []
    windows: list[tuple[float, float]] = []
    batches = host_bound = 0
    dropped = dropped_batches = kept_throttled = 0
    reasons: list[str] = []
    m0 = time.perf_counter()
    while True:
        k = batch_size(est.device_s * blocks.reps, cfg, len(samples))
        b = run_batch(blocks, k, clock, flush, _lead_in(est, blocks, host_per_block))
        host_per_block = b.host_per_block_s
        dip = throttle_dip(throttle(), reference, THROTTLE_CLOCK) if throttle is not None else None
        if dip and dropped_batches < max(batches, 1):     # at most half of all batches are dropped
            dropped, dropped_batches = dropped + len(b.times), dropped_batches + 1
            reasons = (reasons + [dip])[:5]
            time.sleep(THROTTLE_RECOVERY_S)
            continue
        if dip:
            kept_throttled += 1
            if dip not in reasons:      # a kept batch's reasons decide whether compare holds its verdict
                reasons = (reasons + [dip])[:5]
        samples += [t / blocks.reps for t in b.times]
        windows += b.windows
        batches += 1
        host_bound += b.host_bound
        if on_sample:
            on_sample(len(samples))
        reason = should_stop(samples, time.perf_counter() - m0, cfg)
        if reason:
            break
    state_end = probe() if probe else None
    noisy = median_rel_halfwidth(samples) > cfg.target_noise
    return Measurement(
        samples=samples, summary=summarize(samples), reps_per_sample=blocks.reps, timer=clock.name,
        timed_out=reason == TIMEOUT and noisy, hit_max_samples=reason == MAX_SAMPLES and noisy,
        warmup_invocations=warm, elapsed_s=time.perf_counter() - t_start, config=asdict(cfg),
        method=blocks.method, method_note=note, first_call_s=first_call_s, warmup_s=warmup_s,
        steady=is_steady, batches=batches, host_bound_batches=host_bound if blocks.method == "queue" else 0,
        per_call_host_s=est.host_s, windows=merge_windows(windows), state_start=state_start,
        state_end=state_end, throttled_samples=dropped, throttled_batches=dropped_batches,
        throttled_kept=kept_throttled, throttle_reasons=reasons)


def _blocks(fn, reps: int, method: str, note: str, clock) -> tuple[Blocks, str]:
    """Blocks of the chosen method; a graph that cannot be captured falls back to the queue."""
    try:
        return Blocks(fn, reps, method, clock), note
    except NotCapturable as exc:
        return Blocks(fn, reps, "queue", clock), f"graph capture failed ({exc}); queued eagerly"


def _lead_in(est: Estimate, blocks: Blocks, host_per_block: float | None) -> float:
    """Twice the host's time to queue one block: the device spins that long before the first
    block, so it starts on queued work; a device-bound batch then stays ahead by itself (a
    launch-bound one cannot: that is what graphs are for). Measured per block for graphs (one
    launch each), from the eager estimate for queued calls."""
    if blocks.method == "cpu":
        return 0.0
    per_block = host_per_block if blocks.method == "graph" and host_per_block else est.host_s * blocks.reps
    return 2.0 * per_block


# -- a single timed block, for callers that run their own loop (collectives, the GEMM search) ----
class Timer:
    """Times one block of invocations. `device` is 'cpu' or a CUDA/ROCm device string."""

    def __init__(self, device: str = "cpu"):
        self.device = device
        self.clock = clock_for(device)
        self.gpu = self.clock.gpu
        self.name = self.clock.name

    def sync(self) -> None:
        self.clock.sync()

    def time_block(self, fn: Callable[[], Any], reps: int) -> float:
        """Seconds for `reps` back-to-back invocations (device-synchronised)."""
        self.clock.sync()
        a = self.clock.marker()
        for _ in range(reps):
            fn()
        b = self.clock.marker()
        self.clock.sync()
        return self.clock.elapsed(a, b)

    def overhead_s(self) -> float:
        """Cost of timing an empty block: what a block must dwarf."""
        self.time_block(lambda: None, 1)
        return min(self.time_block(lambda: None, 1) for _ in range(20))


__all__ = ["CpuClock", "LoopConfig", "Measurement", "Timer", "choose_method", "measure"]
