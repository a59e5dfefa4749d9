"""Memory bandwidth workload: every kernel runs and checks on CPU; host transfers skip with a reason."""

from __future__ import annotations

import pytest

from gpuparity.measure.loop import LoopConfig
from gpuparity.platform.detect import fingerprint
from gpuparity.workloads import memory
from gpuparity.workloads.base import Context

TINY_LOOP = LoopConfig(warmup_s=0.01, warmup_max_s=0.05, min_samples=3, max_samples=5, min_time_s=0.01,
                       max_time_s=0.3, min_block_s=0.0)


def ctx() -> Context:
    return Context(fingerprint=fingerprint(), device="cpu", loop=TINY_LOOP)


@pytest.mark.parametrize("op", list(memory.KERNELS))
def test_kernels_run_check_and_count_bytes(op):
    n = 1 << 16
    result = memory.Memory().execute({"op": op, "elements": n, "dtype": "fp32"}, ctx())
    assert result["status"] == "ok", result["reason"]
    assert result["work"]["bytes"] == memory.KERNELS[op] * n * 4
    assert result["derived"]["gbs"] > 0
    assert f"all {n} elements" in result["info"]["check"]


def test_suite_cases_cover_all_ops_above_llc():
    c = ctx()
    cases = memory.Memory().cases("quick", c)
    assert {p["op"] for p in cases} == {"copy", "scale", "add", "triad", "read", "h2d", "d2h"}
    llc = c.fingerprint["cpu"].get("llc_bytes") or 32 * 2**20
    assert all(p["elements"] * 4 >= 4 * llc for p in cases)


@pytest.mark.parametrize("target,l2,llc", [("gfx942", 4 * 2**20, 256 * 2**20), ("sm_90", 50 * 2**20, 50 * 2**20),
                                           ("gfx950", 4 * 2**20, 256 * 2**20), ("sm_100", 126 * 2**20, 126 * 2**20)])
def test_gpu_arrays_are_four_times_the_last_level_cache(target, l2, llc):
    from gpuparity.platform.detect import gpu_llc_bytes

    assert gpu_llc_bytes(target, l2) == llc                 # the Infinity Cache counts, not only the L2
    fp = {"backend": "cuda", "arch_target": target, "spec": None, "devices": [{"llc_bytes": llc}]}
    for suite in ("quick", "standard"):
        cases = memory.Memory().cases(suite, Context(fingerprint=fp, device="cuda"))
        assert all(p["elements"] * 4 >= 4 * llc for p in cases)
    unknown = {"backend": "cuda", "devices": [{}]}            # no cache size: the largest in use is assumed
    assert memory.array_elems(Context(fingerprint=unknown, device="cuda"), "quick") * 4 >= 4 * 256 * 2**20


def test_whole_buffer_gate_catches_one_wrong_element_past_any_head():
    import torch

    from gpuparity.measure.gates import elementwise

    n = 1 << 20
    a = torch.rand(n)
    out = a * 3.0
    ok, detail = elementwise(out, lambda i0, i1: 3.0 * a[i0:i1].double(), n, memory.FP32_TOL)
    assert ok, detail
    out[n - 1] *= 1.0 + 1e-5                                 # the very last element, slightly wrong
    ok, detail = elementwise(out, lambda i0, i1: 3.0 * a[i0:i1].double(), n, memory.FP32_TOL)
    assert not ok and "1 elements over" in detail
    out[n - 1] = float("nan")
    assert not elementwise(out, lambda i0, i1: 3.0 * a[i0:i1].double(), n, 1.0)[0]


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
