"""Memory bandwidth workload: every kernel runs and checks on CPU; host transfers skip with a reason."""

from __future__ import annotations

import pytest

from gpuparity.measure.loop import LoopConfig
from gpuparity.platform.detect import fingerprint
from gpuparity.workloads import memory
from gpuparity.workloads.base import Context

TINY_LOOP = LoopConfig(warmup_s=0.01, min_samples=3, max_samples=5, min_time_s=0.01, max_time_s=0.3)


def ctx() -> Context:
    return Context(fingerprint=fingerprint(), device="cpu", loop=TINY_LOOP)


@pytest.mark.parametrize("op", list(memory.KERNELS))
def test_kernels_run_check_and_count_bytes(op):
    n = 1 << 16
    result = memory.Memory().execute({"op": op, "elements": n, "dtype": "fp32"}, ctx())
    assert result["status"] == "ok", result["reason"]
    assert result["work"]["bytes"] == memory.KERNELS[op] * n * 4
    assert result["derived"]["gbs"] > 0
    assert "error" in result["info"]["check"]


def test_suite_cases_cover_all_ops_above_llc():
    c = ctx()
    cases = memory.Memory().cases("quick", c)
    assert {p["op"] for p in cases} == {"copy", "scale", "add", "triad", "read", "h2d", "d2h"}
    llc = c.fingerprint["cpu"].get("llc_bytes") or 32 * 2**20
    assert all(p["elements"] * 4 >= 2 * llc for p in cases)


@pytest.mark.parametrize("op", memory.TRANSFERS)
def test_host_transfers_skip_on_cpu(op):
    result = memory.Memory().execute({"op": op, "elements": 1024, "dtype": "fp32"}, ctx())
    assert result["status"] == "skipped" and "GPU" in result["reason"]


def test_wrong_copy_is_failed(monkeypatch):
    import torch

    real_copy = torch.Tensor.copy_
    monkeypatch.setattr(torch.Tensor, "copy_", lambda self, src, *a, **k: self.zero_())
    try:
        result = memory.Memory().execute({"op": "copy", "elements": 1 << 14, "dtype": "fp32"}, ctx())
    finally:
        monkeypatch.setattr(torch.Tensor, "copy_", real_copy)
    assert result["status"] == "failed" and result["samples"] == []
