"""GPU timing paths, tested on the CPU with simulated devices (test_loop.QueueDevice), a fake
telemetry source behind the real sampler, a fake torch.cuda for the spin calibration and a faked
host sync for the grouped-GEMM probe: host-bound batches flag their result, throttled samples are
dropped, steady state is judged over 100 ms windows, the lead-in spin is timed at the warm clock."""

from __future__ import annotations

import copy
from contextlib import contextmanager

import numpy as np
import pytest
import torch
from test_compare import make_result, make_run, noisy_trials
from test_loop import QueueDevice, sim_cfg

from gpuparity.comparison.compare import compare_runs
from gpuparity.measure import loop as loop_module
from gpuparity.measure.clocks import TorchGpuClock
from gpuparity.measure.energy import Sample
from gpuparity.measure.loop import THROTTLE_RECOVERY_S, LoopConfig, measure, steady, windows_of
from gpuparity.measure.telemetry import ThreadedSampler
from gpuparity.results.figure import derive
from gpuparity.results.schema import new_result
from gpuparity.workloads.base import fill_measurement, merge_trials


def measured_result(m) -> dict:
    r = new_result("gemm", "kernel", {"m": 1, "dtype": "bf16"}, "bf16")
    r["work"] = {"flop": 1e9}
    fill_measurement(r, m)
    derive(r, None, None)
    return r


# -- host-bound batches ----------------------------------------------------------------------
def test_a_host_bound_batch_flags_the_result_and_caps_its_verdicts():
    dev = QueueDevice(device_s=3e-6, host_s=8e-6)                 # the host cannot keep up with the kernel
    bound = measured_result(measure(dev.kernel, "cuda", sim_cfg(method="queue", batch_s=0.05), clock=dev))
    assert "host_bound" in bound["flags"] and bound["info"]["host_bound_batches"] > 0
    dev2 = QueueDevice(device_s=1e-3, host_s=1e-5)
    fine = measured_result(measure(dev2.kernel, "cuda", sim_cfg(), clock=dev2))
    assert "host_bound" not in fine["flags"]
    merged = merge_trials([fine, bound], None)                    # one host-bound trial flags the case
    assert "host_bound" in merged["flags"]
    a = [make_result("gemm", {"m": 1}, [], trials=noisy_trials(100.0, 0.005, 20, 1), flags=["host_bound"])]
    b = [make_result("gemm", {"m": 1}, [], trials=noisy_trials(150.0, 0.005, 20, 2))]
    (row,) = compare_runs([make_run(a)], [make_run(b, run_id="b")], floor=0.02)["rows"]     # a known run spread
    assert row["ci_low"] > 1.05 and row["verdict"] == "inconclusive" and "host_bound" in row["flags"]


# -- throttled samples -----------------------------------------------------------------------
class ThrottlingDevice(QueueDevice):
    """Calls [start, end) run at half speed, as under a power or thermal clock cut."""

    def __init__(self, start: int, end: int, **kw):
        super().__init__(**kw)
        self.start, self.end = start, end

    @property
    def hot(self) -> bool:
        return self.start <= self.calls < self.end

    def _cost(self) -> float:
        cost = super()._cost()
        return 2 * cost if self.hot else cost


class FakeSource:
    """A telemetry source (measure.samplers' interface) whose readings follow a function."""

    method = "fake"

    def __init__(self, reading):
        self.devices = [{"index": 0, "name": "fake gpu"}]
        self.reading = reading

    def describe(self) -> dict:
        return {}

    def read(self, k: int) -> Sample:
        mhz, reasons = self.reading()
        return Sample(t=0.0, sm_mhz=mhz, throttle=bool(reasons), throttle_reasons=tuple(reasons))


@pytest.fixture
def sleeps(monkeypatch):
    waited = []
    monkeypatch.setattr(loop_module.time, "sleep", waited.append)
    return waited


def test_samples_taken_while_the_driver_reports_throttling_are_dropped_and_counted(sleeps):
    dev = ThrottlingDevice(100, 160, device_s=1e-3, host_s=1e-5)     # after the warm-up's one batch
    sampler = ThreadedSampler(FakeSource(lambda: (900.0, ("thermal",)) if dev.hot else (1980.0, ("power",))))
    cfg = sim_cfg(min_samples=300, max_samples=300, batch_s=0.02)
    m = measure(dev.kernel, "cuda", cfg, clock=dev, throttle=sampler.snapshot)
    assert m.throttled_samples > 0 and m.throttled_batches > 0
    assert sleeps.count(THROTTLE_RECOVERY_S) == m.throttled_batches             # a recovery wait after each
    assert len(m.samples) == 300                                                 # dropped ones are not counted
    slow_kept = sum(s > 1.5e-3 for s in m.samples)
    assert slow_kept <= 20 < m.throttled_samples                                 # at most the batch it ended in
    assert np.median(m.samples) == pytest.approx(1e-3, rel=1e-6)
    r = measured_result(m)
    assert r["info"]["throttled_samples_dropped"] == m.throttled_samples
    assert "thermal" in r["info"]["throttle_reasons_seen"][0] and "dropped" in r["info"]["warning"]
    assert "throttled" not in r["flags"]


def test_a_sustained_power_cap_is_the_steady_state_and_is_kept(sleeps):
    dev = QueueDevice(device_s=1e-3, host_s=1e-5)
    sampler = ThreadedSampler(FakeSource(lambda: (1500.0, ("power",))))         # capped all along
    m = measure(dev.kernel, "cuda", sim_cfg(min_samples=60, max_samples=60), clock=dev, throttle=sampler.snapshot)
    assert m.throttled_samples == 0 and sleeps == []


def test_at_most_half_the_batches_are_dropped_then_the_result_is_flagged(sleeps):
    dev = QueueDevice(device_s=1e-3, host_s=1e-5)
    readings = iter([(1980.0, ())] + [(800.0, ("thermal",))] * 10_000)           # warm, then throttled for good
    sampler = ThreadedSampler(FakeSource(lambda: next(readings)))
    m = measure(dev.kernel, "cuda", sim_cfg(min_samples=60, max_samples=60, batch_s=0.01), clock=dev,
                throttle=sampler.snapshot)
    assert len(m.samples) == 60 and 0 < m.throttled_batches <= m.batches and m.throttled_kept > 0
    assert "throttled" in measured_result(m)["flags"]


def test_a_kept_throttled_batch_records_why_and_trials_keep_every_reason(sleeps):
    """The power cap throttles the dropped batch, heat the kept ones: compare holds a result only
    when its reasons are more than the power cap's, so the kept batches' reasons must be there, and
    a later trial's must survive the merge of trials."""
    from gpuparity.comparison.flags import throttle_reasons
    from gpuparity.workloads.base import merge_trials

    dev = QueueDevice(device_s=1e-3, host_s=1e-5)
    # warm; then the loop drops a power-capped batch, keeps two hot ones (at most half are dropped),
    # and drops only power-capped ones after: the hot batches are known only from what was kept
    readings = iter([(1980.0, ()), (800.0, ("power",)), (800.0, ("thermal",)), (800.0, ("thermal",))]
                    + [(800.0, ("power",))] * 10_000)
    sampler = ThreadedSampler(FakeSource(lambda: next(readings)))
    m = measure(dev.kernel, "cuda", sim_cfg(min_samples=60, max_samples=60, batch_s=0.01), clock=dev,
                throttle=sampler.snapshot)
    hot = measured_result(m)
    assert m.throttled_kept > 0 and "throttled" in hot["flags"]
    assert throttle_reasons(hot["info"]) == {"power", "thermal"}
    calm = QueueDevice(device_s=1e-3, host_s=1e-5)
    cool = measured_result(measure(calm.kernel, "cuda", sim_cfg(min_samples=60, max_samples=60), clock=calm))
    assert "throttle_reasons_seen" not in cool["info"]
    merged = merge_trials([cool, hot], None)            # trial 1 cool, trial 2 hot
    assert "throttled" in merged["flags"] and throttle_reasons(merged["info"]) == {"power", "thermal"}


# -- steady state over windows ---------------------------------------------------------------
def test_windows_hold_whole_blocks_of_at_least_the_window():
    assert windows_of([1.0, 1.0, 2.0, 3.0, 1.0, 1.0], 2.0, 3) == [2.0, 3.0, 1.0]     # newest last
    assert windows_of([0.01] * 5, 0.1, 3) == []
    cfg = LoopConfig(steady_window_s=0.1, steady_blocks=3, steady_tol=0.02)
    assert steady([1e-3] * 300, cfg) and not steady([1e-3] * 200, cfg)


def test_warm_up_waits_for_100_ms_windows_to_agree_not_three_blocks():
    drift = [1.3e-3 - 0.3e-3 * i / 600 for i in range(600)]                     # clocks settling over 0.7 s
    short = QueueDevice(device_s=1e-3, host_s=1e-5, ramp=list(drift))
    m_short = measure(short.kernel, "cuda", sim_cfg(warmup_max_s=10.0, steady_window_s=0.0), clock=short)
    dev = QueueDevice(device_s=1e-3, host_s=1e-5, ramp=list(drift))
    m = measure(dev.kernel, "cuda", sim_cfg(warmup_max_s=10.0), clock=dev)
    assert LoopConfig().steady_window_s >= 0.1 and LoopConfig.for_suite("quick", "cuda").steady_window_s >= 0.1
    assert m_short.warmup_invocations < 100                  # three 1 ms blocks agree while the clock still moves
    assert m.steady and m.warmup_invocations > 400           # 100 ms windows see the drift
    assert np.median(m.samples) < np.median(m_short.samples)
    assert np.median(m.samples) == pytest.approx(1e-3, rel=0.01)


# -- the lead-in spin at the warmed-up clock -------------------------------------------------
class CalibratedDevice(QueueDevice):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.calibrated_at: list[int] = []

    def calibrate(self) -> None:
        self.calibrated_at.append(self.calls)


def test_the_loop_calibrates_the_spin_once_after_the_warm_up():
    dev = CalibratedDevice(device_s=1e-3, host_s=1e-5)
    m = measure(dev.kernel, "cuda", sim_cfg(min_samples=30, max_samples=30), clock=dev)
    (at,) = dev.calibrated_at
    assert at >= m.warmup_invocations and dev.calls - at == len(m.samples) * m.reps_per_sample


class FakeCuda:
    """torch.cuda as the spin calibration sees it: events on a device clock, a spin of N cycles."""

    def __init__(self):
        self.now, self.hz = 0.0, 1.0e9

    class Event:
        def __init__(self, cuda, **_):
            self.cuda, self.t = cuda, None

        def record(self):
            self.t = self.cuda.now

        def elapsed_time(self, other) -> float:
            return (other.t - self.t) * 1e3

    def _sleep(self, cycles: int) -> None:
        self.now += cycles / self.hz

    def synchronize(self, *_):
        pass


def test_torch_clock_recalibrates_the_spin_at_the_warm_clock():
    cuda = FakeCuda()
    fake_torch = type("T", (), {"cuda": type("C", (), {
        "Event": lambda self=None, **kw: FakeCuda.Event(cuda, **kw), "_sleep": staticmethod(cuda._sleep),
        "synchronize": staticmethod(cuda.synchronize)})()})()
    clock = TorchGpuClock.__new__(TorchGpuClock)
    clock.torch, clock.device, clock._cycles_per_s = fake_torch, "cuda", None
    assert clock.cycles_per_s() == pytest.approx(1.0e9)           # timed at an idle clock
    cuda.hz = 1.8e9                                                # the warm-up brought the SM clock up
    clock.calibrate()
    assert clock.cycles_per_s() == pytest.approx(1.8e9)
    t0 = cuda.now
    clock.lead_in(0.01)
    assert cuda.now - t0 == pytest.approx(0.01, rel=1e-6)          # the spin lasts what was asked


# -- the grouped-GEMM probe --------------------------------------------------------------------
def moe_case():
    from gpuparity.measure.loop import LoopConfig as Cfg
    from gpuparity.platform.detect import fingerprint
    from gpuparity.workloads.base import Context

    ctx = Context(fingerprint=fingerprint(), device="cpu", loop=Cfg(warmup_s=0.01, warmup_max_s=0.05, min_samples=3,
                                                                    max_samples=5, min_time_s=0.01, max_time_s=0.3,
                                                                    min_block_s=0.0, steady_window_s=0.0))
    params = {"preset": "deepseek-v3", "tokens": 32, "experts": 16, "top_k": 4, "hidden": 64, "ffn": 32,
              "shared": 1, "dtype": "fp32"}
    return params, ctx


def test_a_grouped_gemm_that_syncs_is_labelled_a_fallback_and_never_graphed(monkeypatch):
    from gpuparity.workloads import moe

    real = torch._grouped_mm
    checking = []

    @contextmanager
    def sync_is_an_error(device):          # what set_sync_debug_mode("error") does to a syncing call
        checking.append(True)
        try:
            yield
        finally:
            checking.pop()

    def syncing_grouped_mm(*args, **kwargs):   # a per-expert fallback: reads the group sizes on the host
        if checking:
            raise RuntimeError("called a synchronizing CUDA operation")
        return real(*args, **kwargs)

    monkeypatch.setattr(moe, "sync_checked", sync_is_an_error)
    monkeypatch.setattr(torch, "_grouped_mm", syncing_grouped_mm)
    params, ctx = moe_case()
    prepared = moe.prepare_moe(params, ctx)
    assert prepared.capturable is False
    assert prepared.info["expert_gemm"].startswith("torch._grouped_mm (host-synchronising fallback: called a "
                                                   "synchronizing")
    result = moe.MoE().execute(params, ctx)
    assert result["status"] == "ok", result["reason"]
    assert "fallback" in result["info"]["expert_gemm"]


def test_a_grouped_gemm_that_cannot_be_captured_says_so(monkeypatch):
    from gpuparity.workloads import moe

    def refuse(fn, device):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(moe, "trial_capture", refuse)
    params, ctx = moe_case()
    prepared = moe.prepare_moe(params, ctx)
    assert prepared.capturable is False and "not capturable" in prepared.info["expert_gemm"]
    clean = copy.deepcopy(params)
    monkeypatch.undo()
    ok = moe.prepare_moe(clean, ctx)
    assert ok.capturable is True and ok.info["expert_gemm"] == "torch._grouped_mm"
