"""The loop's statistics and stopping rule, on workloads whose cost is known."""

import time

import numpy as np

from gpuparity.measure.loop import LoopConfig, Timer, measure, should_stop
from gpuparity.measure.stats import bootstrap_ci, relative_noise, summarize


def busy(seconds: float):
    """A CPU-bound invocation of known cost (a spin on the monotonic clock)."""
    def fn():
        end = time.perf_counter_ns() + int(seconds * 1e9)
        while time.perf_counter_ns() < end:
            pass
    return fn


class VirtualTimer(Timer):
    """A clock that advances by a known cost per invocation, with known noise: the truth is exact."""

    def __init__(self, median_cost: float, seed: int):
        super().__init__("cpu")
        self.cost, self.rng = median_cost, np.random.default_rng(seed)

    def time_block(self, fn, reps):
        for _ in range(reps):
            fn()
        # Log-normal noise with median 1: the median of one invocation's cost is exactly `cost`.
        return float(self.cost * np.exp(self.rng.normal(0, 0.02, reps)).sum())

    def overhead_s(self):
        return 1e-8


def test_ci_of_known_cost_contains_truth():
    truth = 2e-3
    hits = 0
    for seed in range(20):
        cfg = LoopConfig(warmup_s=0.0, min_samples=10, min_time_s=0.0, max_time_s=5, target_noise=0.002)
        m = measure(lambda: None, "cpu", cfg, timer=VirtualTimer(truth, seed))
        s = m.summary
        hits += s["ci_low"] <= truth <= s["ci_high"]
        assert abs(s["median"] - truth) / truth < 0.01
        assert s["p10"] <= s["median"] <= s["p90"]
        assert len(m.samples) == s["n"] >= 10
    assert hits >= 16  # nominal 95% coverage over 20 runs


def test_real_spin_is_never_timed_faster_than_it_is():
    truth = 2e-3
    m = measure(busy(truth), "cpu", LoopConfig(warmup_s=0.02, min_samples=5, min_time_s=0.05, max_time_s=2))
    assert m.summary["min"] >= truth * 0.999  # device-synchronised timing cannot undercount
    assert m.summary["median"] < truth * 5


def test_bootstrap_ci_covers_known_median():
    rng = np.random.default_rng(1)
    hits = 0
    for trial in range(100):
        x = rng.normal(10.0, 1.0, size=40)
        lo, hi = bootstrap_ci(x, seed=trial)
        hits += lo <= 10.0 <= hi
    assert 88 <= hits <= 100  # nominal 95% coverage


def test_summary_fields_on_constructed_samples():
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s["median"] == 3.0
    assert s["mean"] == 22.0
    assert s["n"] == 5
    assert s["ci_low"] <= 3.0 <= s["ci_high"]
    assert summarize([])["n"] == 0


def test_relative_noise_shrinks_with_steadier_samples():
    rng = np.random.default_rng(2)
    noisy = 1 + rng.normal(0, 0.2, 50)
    steady = 1 + rng.normal(0, 0.002, 50)
    assert relative_noise(steady) < 0.01 < relative_noise(noisy)
    assert relative_noise([1.0]) == float("inf")


def test_stopping_rule_on_constructed_samples():
    cfg = LoopConfig(min_samples=5, min_time_s=0.5, max_time_s=10, max_samples=50, target_noise=0.01)
    quiet = [1.0, 1.001, 0.999, 1.0, 1.0005]
    assert should_stop(quiet[:4], 1.0, cfg) == (False, False)  # under the minimum count
    assert should_stop(quiet, 0.1, cfg) == (False, False)  # under the minimum time
    assert should_stop(quiet, 1.0, cfg) == (True, False)  # quiet enough: stop
    noisy = [1.0, 2.0, 1.0, 3.0, 1.0, 2.5]
    assert should_stop(noisy, 1.0, cfg) == (False, False)  # keep sampling
    assert should_stop(noisy, 10.0, cfg) == (True, True)  # timeout, flagged
    assert should_stop(noisy * 9, 5.0, cfg) == (True, False)  # sample cap


def test_loop_stops_early_when_quiet():
    cfg = LoopConfig(warmup_s=0.01, min_samples=6, min_time_s=0.0, max_time_s=5, target_noise=0.05)
    m = measure(busy(1e-3), "cpu", cfg)
    assert 6 <= len(m.samples) < 200
    assert not m.timed_out and m.elapsed_s < 4


def test_stops_at_timeout_when_noisy_and_flags_it():
    rng = np.random.default_rng(3)

    def jittery():
        busy(float(rng.choice([2e-4, 2e-3])))()

    cfg = LoopConfig(warmup_s=0.01, min_samples=5, min_time_s=0.05, max_time_s=0.4, target_noise=1e-4,
                     max_samples=10_000)
    t0 = time.perf_counter()
    m = measure(jittery, "cpu", cfg)
    assert m.timed_out
    assert time.perf_counter() - t0 < 3.0
    assert len(m.samples) >= 5


def test_block_makes_timer_overhead_negligible():
    calls = []
    m = measure(lambda: calls.append(1), "cpu", LoopConfig(warmup_s=0.01, min_samples=3, max_time_s=1))
    # A no-op is far cheaper than the timer, so each sample must time many invocations.
    assert m.reps_per_sample > 100


def test_cold_mode_times_one_invocation_per_sample():
    cfg = LoopConfig(warmup_s=0.01, min_samples=4, max_time_s=1, cold=True, flush_bytes=1 << 20)
    m = measure(busy(5e-4), "cpu", cfg)
    assert m.reps_per_sample == 1
