"""Data-parallel scaling: rank counts, and the 1-rank case in-process (the training workload's model).

1 vs 2 ranks under torchrun is checked in test_collectives.py, on the same job as the collectives.
"""

from __future__ import annotations

import pytest

from gpuparity.measure.loop import LoopConfig
from gpuparity.workloads.base import Context
from gpuparity.workloads.scaling import Scaling, rank_counts


def test_rank_counts():
    assert rank_counts(1) == [1]
    assert rank_counts(2) == [1, 2]
    assert rank_counts(6) == [1, 2, 4, 6]
    assert rank_counts(8) == [1, 2, 4, 8]


def test_one_rank_in_process(monkeypatch):
    for var in ("WORLD_SIZE", "RANK", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    loop = LoopConfig(warmup_s=0.05, min_samples=3, max_samples=5, min_time_s=0.05, max_time_s=0.5)
    ctx = Context(fingerprint={}, device="cpu", suite="comm", loop=loop, options={})
    w = Scaling()
    (case,) = w.cases("comm", ctx)
    assert case["ranks"] == 1 and case["nodes"] == 1
    r = w.merge_trials([w.execute(case, ctx)], ctx)
    assert r["status"] == "ok", r["reason"]
    w.finalize([r])              # efficiencies once every case ran (the order is shuffled)
    d = r["derived"]
    assert d["tokens_per_s"] == pytest.approx(case["batch"] * case["seq"] / r["summary"]["median"])
    assert r["info"]["ddp"] is False and r["work"]["flop"] > 0 and d["tflops"] > 0
    assert d["weak_scaling_efficiency"] == 1.0 and d["baseline_tokens_per_s"] == d["tokens_per_s_per_rank"]
    assert w.execute(dict(case, ranks=2), ctx)["status"] == "skipped"
