"""Collectives: timing blocks sized by the loop's one rule on every vendor (never by the measured
event overhead, which differs: small messages would be timed in other regimes), and a job across
nodes scored against no peak (the NVLink / XGMI figure is within a node)."""

from __future__ import annotations

import math

import pytest

from gpuparity.comparison.normalise import peak_kind_of
from gpuparity.measure import loop
from gpuparity.platform.specs import lookup
from gpuparity.results.figure import derive
from gpuparity.workloads import collectives


def fake_timer(event_overhead_s: float, per_call_s: float):
    """A GPU timer as torch.cuda events behave: an empty timed block costs `event_overhead_s`
    (about 2 us on CUDA, more on ROCm); inside a block events add nothing."""
    class GpuClock:
        name, gpu = "torch.cuda.Event", True

        def overhead_s(self):
            return 0.0

    class Timer:
        def __init__(self, device):
            self.clock, self.gpu, self.name = GpuClock(), True, GpuClock.name
            self.blocks = []

        def sync(self):
            pass

        def time_block(self, fn, reps):
            self.blocks.append(reps)
            return event_overhead_s + reps * per_call_s

        def overhead_s(self):
            return event_overhead_s
    return Timer


@pytest.mark.parametrize("per_call_s", [3e-6, 40e-6])
def test_block_size_is_the_same_on_both_vendors(monkeypatch, per_call_s):
    cfg = loop.LoopConfig(warmup_s=10.0, min_samples=3, max_samples=3, min_time_s=0.0, max_time_s=5.0,
                          min_block_s=1e-3, target_noise=1.0)
    reps = {}
    for vendor, overhead in (("cuda", 2e-6), ("rocm", 15e-6)):
        monkeypatch.setattr(loop, "Timer", fake_timer(overhead, per_call_s))
        _, reps[vendor], _, _ = collectives.measure_synchronized(lambda: None, "cuda", cfg)
    want = math.ceil(cfg.min_block_s / per_call_s)     # the per-call estimate carries overhead / 1000
    assert reps["cuda"] == pytest.approx(want, rel=0.01) and reps["rocm"] == pytest.approx(want, rel=0.01)


def _result(nodes: int) -> dict:
    params = {"op": "all_reduce", "bytes": 2**26, "ranks": 16, "nodes": nodes, "dtype": "fp32"}
    return {"workload": "collectives", "params": params, "samples": [1e-3] * 5, "summary": {"n": 5},
            "work": collectives.work_of("collectives", params), "info": {}}


def test_a_job_across_nodes_is_scored_against_no_peak():
    spec = lookup("h100-sxm")
    one, two = _result(1), _result(2)
    derive(one, collectives.peak_kind(1), spec)
    derive(two, collectives.peak_kind(2), spec)
    assert one["info"]["peak_kind"] == "bytes:interconnect" and one["derived"]["pct_peak"] > 0
    assert two["info"]["peak_kind"] == "bytes:nic" and "pct_peak" not in two["derived"]
    assert "no peak" in collectives.MULTI_NODE_NOTE
    # results stored before kinds were recorded: the fabric only within one node
    assert peak_kind_of("collectives", "GB/s", "fp32", None, {"nodes": 1}) == "bytes:interconnect"
    assert peak_kind_of("collectives", "GB/s", "fp32", None, '{"nodes": 2, "op": "all_reduce"}') == "bytes:nic"
