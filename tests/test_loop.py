"""The measurement loop: method choice (cpu | graph | queue), first call kept out, one sync per batch,
the lead-in, steady warm-up, block sizes, the stop rule and its order-statistic interval.

GPU behaviour is driven by `QueueDevice`, a device of known costs that queues work as a GPU does:
the host issues each launch in `host_s`, the device runs it in `device_s` once both are free, a
graph replay is one launch of N back-to-back kernels, and markers read the device's time. The loop
under test is the real one; only the device is simulated (there is no GPU here). Real CPU runs use
real torch tensors and the real host clock.
"""

from __future__ import annotations

import math
import time
from collections import deque

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuparity.measure.clocks import LEAD_IN_MAX_S, CpuClock, NotCapturable
from gpuparity.measure.loop import (
    Estimate,
    LoopConfig,
    choose_method,
    measure,
    merge_windows,
)
from gpuparity.measure.stop import (
    MAX_SAMPLES,
    QUIET,
    TIMEOUT,
    median_ci_ranks,
    median_rel_halfwidth,
    should_stop,
)


class QueueDevice:
    """A GPU of known costs: a FIFO launch queue of limited depth (the host blocks when it is full),
    a host that issues launches, markers in device order."""

    gpu = True
    name = "queue-device"
    DEPTH = 1024

    def __init__(self, device_s: float, host_s: float, graph_launch_s: float = 1e-5, capturable: bool = True,
                 ramp: list[float] | None = None):
        self.device_s, self.host_s, self.graph_launch_s = device_s, host_s, graph_launch_s
        self.capturable = capturable
        self.ramp = list(ramp or [])      # device times of the first calls (clocks ramping up)
        self.host = self.dev = 0.0
        self.pending: deque[float] = deque()   # start times of queued work
        self.syncs = self.launches = self.calls = 0
        self.captured: list[int] = []

    def host_now(self) -> float:
        return self.host

    monotonic = host_now

    def _enqueue(self, cost: float) -> float:
        while self.pending and self.pending[0] <= self.host:
            self.pending.popleft()
        if len(self.pending) >= self.DEPTH:
            self.host = self.pending.popleft()   # wait for a slot
        start = max(self.dev, self.host)
        self.dev = start + cost
        self.pending.append(start)
        return start

    def _run(self, cost: float, launch_s: float) -> None:
        self.host += launch_s
        self.launches += 1
        self._enqueue(cost)

    def _cost(self) -> float:
        self.calls += 1
        return self.ramp.pop(0) if self.ramp else self.device_s

    def kernel(self) -> None:
        """The workload's invocation: one launch."""
        self._run(self._cost(), self.host_s)

    def marker(self) -> float:
        self.host += 1e-7
        return self._enqueue(0.0)

    def elapsed(self, a: float, b: float) -> float:
        return b - a

    def sync(self) -> None:
        self.syncs += 1
        self.host = max(self.host, self.dev)

    def overhead_s(self) -> float:
        return 0.0

    def capture(self, fn, n: int):
        if not self.capturable:
            raise NotCapturable("operation not permitted when stream is capturing")
        self.captured.append(n)
        costs = []
        real_run = self._run
        self._run = lambda cost, launch_s: costs.append(cost)   # capture records, runs nothing
        try:
            for _ in range(n):
                fn()
        finally:
            self._run = real_run
        return lambda: self._run(sum(costs), self.graph_launch_s)

    def lead_in(self, seconds: float) -> None:
        self._enqueue(min(seconds, LEAD_IN_MAX_S))


def sim_cfg(**kw) -> LoopConfig:
    base = dict(warmup_s=0.0, warmup_max_s=0.0, min_samples=10, max_samples=40, min_time_s=0.0, max_time_s=5.0,
                target_noise=1e-9, min_block_s=1e-3, batch_s=0.01)
    base.update(kw)
    return LoopConfig(**base)


def test_short_call_is_replayed_from_a_graph_and_timed_without_launch_gaps():
    dev = QueueDevice(device_s=3e-6, host_s=8e-6)         # a 1024^3 GEMM on an H200, eager launch 8 us
    m = measure(dev.kernel, "cuda", sim_cfg(), clock=dev)
    assert m.method == "graph" and "short call" in m.method_note
    assert m.reps_per_sample * 3e-6 >= 1e-3                # a block lasts the minimum block time
    # The eager estimate is the launch rate (8 us); the graph's warm blocks show 3 us, and the block
    # is re-sized once from them and captured again.
    assert dev.captured[-1] == m.reps_per_sample and len(dev.captured) == 2
    assert np.median(m.samples) == pytest.approx(3e-6, rel=1e-6)
    assert m.host_bound_batches == 0


def test_queued_short_call_is_host_bound_and_says_so():
    dev = QueueDevice(device_s=3e-6, host_s=8e-6)
    m = measure(dev.kernel, "cuda", sim_cfg(method="queue", batch_s=0.05, max_samples=200), clock=dev)
    assert m.method == "queue" and m.method_note == "requested"
    # Past the queue's depth the launch rate, not the kernel, sets the pace.
    assert np.median(m.samples) == pytest.approx(8e-6, rel=0.01)
    assert m.host_bound_batches == m.batches > 0


def test_long_call_is_queued_behind_a_lead_in_with_no_host_gap():
    dev = QueueDevice(device_s=1e-3, host_s=1e-5)
    m = measure(dev.kernel, "cuda", sim_cfg(), clock=dev)
    assert m.method == "queue" and "device-bound" in m.method_note
    assert dev.captured == []
    # Every sample, the first of each batch included, is the kernel alone: the host never shows.
    assert max(m.samples) == pytest.approx(1e-3, rel=1e-6) and min(m.samples) == pytest.approx(1e-3, rel=1e-6)
    assert m.host_bound_batches == 0


def test_launch_bound_call_is_graphed_even_when_not_short():
    dev = QueueDevice(device_s=4e-4, host_s=3e-4)          # an op sequence the host issues barely faster
    m = measure(dev.kernel, "cuda", sim_cfg(), clock=dev)
    assert m.method == "graph" and "launch-bound" in m.method_note


def test_uncapturable_call_falls_back_to_the_queue_with_the_reason():
    dev = QueueDevice(device_s=3e-6, host_s=8e-6, capturable=False)
    m = measure(dev.kernel, "cuda", sim_cfg(), clock=dev)
    assert m.method == "queue" and "graph capture failed" in m.method_note
    assert "operation not permitted" in m.method_note
    dev2 = QueueDevice(device_s=3e-6, host_s=8e-6)
    m2 = measure(dev2.kernel, "cuda", sim_cfg(), clock=dev2, capturable=False)
    assert m2.method == "queue" and "cannot be captured" in m2.method_note and dev2.captured == []


def test_one_synchronisation_per_batch():
    dev = QueueDevice(device_s=1e-4, host_s=1e-5)
    cfg = sim_cfg(min_samples=60, max_samples=60, batch_s=0.01, min_block_s=1e-3)
    syncs_before = []

    def probe():
        syncs_before.append(dev.syncs)

    m = measure(dev.kernel, "cuda", cfg, clock=dev, probe=probe)
    timed_syncs = syncs_before[1] - syncs_before[0]
    assert len(m.samples) == 60
    assert m.batches == timed_syncs < len(m.samples)         # samples share their batch's sync
    assert m.batches == math.ceil(60 / 10)                    # 10 ms of blocks of 1 ms per batch


def test_first_call_is_kept_out_of_the_estimate_and_the_samples():
    dev = QueueDevice(device_s=1e-3, host_s=1e-5, ramp=[0.5])   # an autotuning first call: 500 ms
    m = measure(dev.kernel, "cuda", sim_cfg(), clock=dev)
    assert m.first_call_s >= 0.5
    assert max(m.samples) == pytest.approx(1e-3, rel=1e-6)
    assert m.reps_per_sample == 1                             # sized from the steady call, not the first


def test_first_call_is_kept_out_on_a_real_cpu_workload():
    a = torch.randn(128, 128)
    first: list[float] = []                                   # the first call's span, monotonic s

    def fn():
        if not first:
            first.append(time.monotonic())
            time.sleep(0.5)                                   # e.g. a library tuning its kernel on first use
            first.append(time.monotonic())
        torch.mm(a, a)

    m = measure(fn, "cpu", LoopConfig(warmup_s=0.01, warmup_max_s=0.05, min_samples=5, max_samples=20,
                                      min_time_s=0.0, max_time_s=1.0, target_noise=0.5))
    assert m.method == "cpu" and m.timer == "perf_counter_ns"
    assert m.first_call_s >= 0.5
    # No timed block overlaps the first call, and the estimate that sized the blocks did not see
    # it (a loaded host stalls a 128^3 product for milliseconds, never for the 0.5 s it takes).
    assert m.windows and min(w[0] for w in m.windows) > first[1]
    assert m.per_call_host_s < 0.25


def test_warm_up_waits_for_steady_blocks():
    ramp = [3e-3 - 2e-5 * i for i in range(100)]               # clocks ramping up over 100 calls
    dev = QueueDevice(device_s=1e-3, host_s=1e-5, ramp=ramp)
    m = measure(dev.kernel, "cuda", sim_cfg(warmup_s=0.0, warmup_max_s=5.0, steady_tol=0.01), clock=dev)
    assert m.steady
    assert m.warmup_invocations > 100 - 30                    # most of the ramp went into the warm-up
    assert np.median(m.samples) == pytest.approx(1e-3, rel=1e-6)


def test_warm_up_gives_up_at_its_limit_and_records_it():
    rng = np.random.default_rng(0)
    dev = QueueDevice(device_s=1e-3, host_s=1e-5, ramp=list(1e-3 * (1 + rng.uniform(0, 0.5, 100000))))
    t0 = time.perf_counter()
    m = measure(dev.kernel, "cuda", sim_cfg(warmup_s=0.0, warmup_max_s=0.2, steady_tol=1e-6), clock=dev)
    assert not m.steady and 0.2 <= m.warmup_s < 2.0 and time.perf_counter() - t0 < 5.0


def test_blocks_hold_whole_rotations():
    dev = QueueDevice(device_s=1e-4, host_s=1e-5)
    m = measure(dev.kernel, "cuda", sim_cfg(), clock=dev, cycle=7)
    assert m.reps_per_sample % 7 == 0 and m.reps_per_sample >= 10


def test_busy_windows_are_the_timed_samples():
    dev = QueueDevice(device_s=1e-3, host_s=1e-5)
    m = measure(dev.kernel, "cuda", sim_cfg(min_samples=30, max_samples=30), clock=dev)
    busy = sum(b - a for a, b in m.windows)
    assert busy == pytest.approx(sum(m.samples) * m.reps_per_sample, rel=1e-6)
    assert merge_windows([(0.0, 1.0), (1.000001, 2.0), (3.0, 4.0)]) == [(0.0, 2.0), (3.0, 4.0)]
    assert len(m.windows) == m.batches                        # one interval per batch: no gap inside


def test_method_choice_rules():
    est = Estimate(device_s=5e-4, host_s=1e-5, calls=4)
    assert choose_method("auto", est, gpu=False, capturable=True)[0] == "cpu"
    assert choose_method("auto", est, gpu=True, capturable=True)[0] == "queue"
    assert choose_method("graph", est, gpu=True, capturable=True) == ("graph", "requested")
    assert choose_method("graph", est, gpu=True, capturable=False)[0] == "queue"
    assert choose_method("auto", Estimate(1e-5, 1e-6, 1), gpu=True, capturable=True)[0] == "graph"
    with pytest.raises(ValueError, match="loop method"):
        choose_method("fast", est, gpu=True, capturable=True)


class TwoCostClock(CpuClock):
    """A host clock on which invocations cost 1 ms and 2 ms in turn. Blocks hold one invocation
    (a call dwarfs the 10 ns timer), so samples alternate: the median then lies between two equal
    halves and its interval spans both (half-width >= 1/4 of it at every count), a workload no
    noise target below that can stop. Each call also sleeps `real_s`, so the loop's real clock
    advances and bounds the samples a time limit lets in."""

    COSTS = (1e-3, 2e-3)

    def __init__(self, real_s: float = 0.0):
        self.real_s, self.spent, self.calls = real_s, 0.0, 0

    def call(self) -> None:
        self.spent += self.COSTS[self.calls % 2]
        self.calls += 1
        if self.real_s:
            time.sleep(self.real_s)

    def marker(self):
        return self.spent

    def elapsed(self, a, b) -> float:
        return b - a

    def overhead_s(self) -> float:
        return 1e-8


def test_two_cost_samples_never_meet_a_target_under_a_quarter():
    clock = TwoCostClock()
    samples = []
    for n in range(1, 400):
        a = clock.marker()
        clock.call()
        samples.append(clock.elapsed(a, clock.marker()))
        if n >= 2:
            assert median_rel_halfwidth(samples) >= 0.25


def test_hit_max_samples_is_flagged_on_a_noisy_workload():
    clock = TwoCostClock()
    cfg = LoopConfig(warmup_s=0.0, warmup_max_s=0.0, min_samples=5, max_samples=8, min_time_s=0.0, max_time_s=60.0,
                     target_noise=1e-4, min_block_s=0.0)
    m = measure(clock.call, "cpu", cfg, clock=clock)
    assert m.reps_per_sample == 1 and {round(x * 1e6) for x in m.samples} == {1000, 2000}
    assert m.hit_max_samples and not m.timed_out and len(m.samples) == 8


def test_stops_at_timeout_when_noisy_and_flags_it():
    # Every call sleeps 1 ms of real time: the 10 000 samples allowed would take 10 s, far past
    # the 0.4 s limit, so the limit (not the count) ends the trial on any machine.
    clock = TwoCostClock(real_s=1e-3)
    cfg = LoopConfig(warmup_s=0.0, warmup_max_s=0.0, min_samples=5, max_samples=10_000, min_time_s=0.05,
                     max_time_s=0.4, target_noise=1e-4, min_block_s=0.0)
    m = measure(clock.call, "cpu", cfg, clock=clock)
    assert m.timed_out and not m.hit_max_samples
    assert 5 <= len(m.samples) < cfg.max_samples and m.elapsed_s >= cfg.max_time_s
    assert median_rel_halfwidth(m.samples) >= 0.25


def test_real_spin_is_never_timed_faster_than_it_is():
    truth = 2e-3

    def spin():
        end = time.perf_counter_ns() + int(truth * 1e9)
        while time.perf_counter_ns() < end:
            pass

    m = measure(spin, "cpu", LoopConfig(warmup_s=0.02, min_samples=5, min_time_s=0.05, max_time_s=2, min_block_s=0.0))
    assert m.summary["min"] >= truth * 0.999
    # ... nor slower than the time that passed (a loaded host stretches a spin, not the clock).
    assert sum(m.samples) * m.reps_per_sample <= m.elapsed_s


def test_no_op_blocks_dwarf_the_cpu_timer():
    calls = []
    m = measure(lambda: calls.append(1), "cpu", LoopConfig(warmup_s=0.01, min_samples=3, max_time_s=1, min_block_s=0.0))
    assert m.reps_per_sample > 100


def test_cold_mode_times_one_invocation_per_sample_after_a_flush():
    a = torch.randn(64, 64)
    cfg = LoopConfig(warmup_s=0.01, warmup_max_s=0.05, min_samples=4, max_samples=8, max_time_s=1, cold=True,
                     flush_bytes=1 << 20, min_block_s=0.0)
    m = measure(lambda: torch.mm(a, a), "cpu", cfg)
    assert m.reps_per_sample == 1 and len(m.samples) >= 4


# -- the stop rule ---------------------------------------------------------------------------
def test_stop_reasons_on_constructed_samples():
    cfg = LoopConfig(min_samples=5, min_time_s=0.5, max_time_s=10, max_samples=50, target_noise=0.01)
    quiet = [1.0, 1.001, 0.999, 1.0, 1.0005, 1.0, 0.9995]
    assert should_stop(quiet[:4], 1.0, cfg) is None           # under the minimum count
    assert should_stop(quiet, 0.1, cfg) is None               # under the minimum time
    assert should_stop(quiet, 1.0, cfg) == QUIET
    noisy = [1.0, 2.0, 1.0, 3.0, 1.0, 2.5]
    assert should_stop(noisy, 1.0, cfg) is None
    assert should_stop(noisy, 10.0, cfg) == TIMEOUT
    assert should_stop(noisy * 9, 5.0, cfg) == MAX_SAMPLES


def test_a_median_on_one_repeated_value_is_quiet_however_wide_the_rest():
    # The rule watches the median, not the spread: 18 of 30 samples on one value hold the
    # interval's ranks (9 and 20), so the samples far off either side do not matter. Sums of two
    # fixed spin lengths are such a workload: not "too noisy for any target".
    cfg = LoopConfig(min_samples=5, min_time_s=0.0, max_time_s=10, max_samples=50, target_noise=1e-4)
    samples = [0.2] * 6 + [1.1] * 18 + [2.0] * 6
    assert median_ci_ranks(30) == (9, 20)
    assert median_rel_halfwidth(samples) == 0.0 and should_stop(samples, 1.0, cfg) == QUIET


@pytest.mark.parametrize("n", [6, 7, 10, 31, 100, 999, 1000, 1001, 5000])
def test_median_ci_ranks_reach_the_level_and_are_the_narrowest(n):
    lo, hi = median_ci_ranks(n)
    assert hi == n - 1 - lo

    def coverage(j):  # P(x_(j) <= median <= x_(n-1-j)) = 1 - 2 P(Binomial(n, 1/2) <= j)
        return 1 - 2 * sum(math.comb(n, i) for i in range(j + 1)) / 2**n

    assert coverage(lo) >= 0.95
    if n <= 1000:                                             # exact: one rank narrower falls short
        assert coverage(lo + 1) < 0.95
    else:                                                     # normal approximation: within two ranks
        assert coverage(lo + 3) < 0.95


def test_small_samples_use_the_full_range():
    assert median_ci_ranks(5) == (0, 4)
    assert median_rel_halfwidth([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2 / 3)
    assert median_rel_halfwidth([1.0]) == math.inf


def test_order_statistic_interval_covers_known_median():
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(200):
        x = rng.lognormal(0.0, 0.05, size=40)
        lo, hi = median_ci_ranks(40)
        s = np.sort(x)
        hits += s[lo] <= 1.0 <= s[hi]
    assert 186 <= hits <= 200                                 # >= 95% nominal (conservative: discrete)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.floats(min_value=1e-9, max_value=1e3, allow_nan=False), min_size=2, max_size=300))
def test_halfwidth_is_bounded_by_the_range(xs):
    h = median_rel_halfwidth(xs)
    med = float(np.median(xs))
    assert 0.0 <= h <= (max(xs) - min(xs)) / 2 / med + 1e-12


class NoisyCpuClock(CpuClock):
    """A host clock on which each invocation costs a known median with log-normal noise."""

    def __init__(self, cost: float, seed: int):
        self.cost, self.rng, self.calls = cost, np.random.default_rng(seed), 0

    def marker(self):
        return self.calls

    def elapsed(self, a, b) -> float:
        return float(self.cost * np.exp(self.rng.normal(0, 0.02, b - a)).sum())

    def overhead_s(self) -> float:
        return 1e-8


def test_ci_of_known_cost_contains_truth():
    truth, hits = 2e-3, 0
    for seed in range(20):
        clock = NoisyCpuClock(truth, seed)

        def call(clock=clock):
            clock.calls += 1

        cfg = LoopConfig(warmup_s=0.0, warmup_max_s=0.0, min_samples=10, min_time_s=0.0, max_time_s=5,
                         target_noise=0.002, min_block_s=0.0)
        m = measure(call, "cpu", cfg, clock=clock)
        s = m.summary
        hits += s["ci_low"] <= truth <= s["ci_high"]
        assert abs(s["median"] - truth) / truth < 0.01
        assert len(m.samples) == s["n"] >= 10
    assert hits >= 16  # nominal 95% coverage over 20 runs


def test_loop_stops_early_when_quiet():
    clock = NoisyCpuClock(1e-3, seed=7)                       # 2% noise; the target is 5%

    def call():
        clock.calls += 1

    cfg = LoopConfig(warmup_s=0.0, warmup_max_s=0.0, min_samples=6, max_samples=200, min_time_s=0.0,
                     max_time_s=5, target_noise=0.05, min_block_s=0.0, batch_s=0.006)   # 6 samples a batch
    m = measure(call, "cpu", cfg, clock=clock)
    assert len(m.samples) in (6, 12) and not m.timed_out and not m.hit_max_samples
