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


def test_suite_cases_cover_all_ops_at_the_suites_cpu_size():
    c = ctx()
    cases = memory.Memory().cases("quick", c)
    assert {p["op"] for p in cases} == {"copy", "scale", "add", "triad", "read", "h2d", "d2h"}
    assert {p["elements"] for p in cases} == {memory.CPU_ELEMENTS["quick"]}      # a constant, not this CPU's cache
    small = dict(c.fingerprint, cpu=dict(c.fingerprint["cpu"], llc_bytes=2**20))
    assert memory.Memory().cases("quick", Context(fingerprint=small, device="cpu")) == cases


@pytest.mark.parametrize("target,l2,llc", [("gfx942", 4 * 2**20, 256 * 2**20), ("sm_90", 50 * 2**20, 50 * 2**20),
                                           ("gfx950", 4 * 2**20, 256 * 2**20), ("sm_100", 126 * 2**20, 126 * 2**20)])
def test_gpu_arrays_are_one_size_four_times_the_largest_cache(target, l2, llc):
    from gpuparity.platform.detect import gpu_llc_bytes

    assert gpu_llc_bytes(target, l2) == llc                 # the Infinity Cache counts, not only the L2
    fp = {"backend": "cuda", "arch_target": target, "spec": None, "devices": [{"llc_bytes": llc}]}
    for suite in ("quick", "standard"):
        cases = memory.Memory().cases(suite, Context(fingerprint=fp, device="cuda"))
        assert all(p["elements"] * 4 >= 4 * 256 * 2**20 for p in cases)      # >= 4x an MI300X's Infinity Cache
        assert {p["elements"] for p in cases} == {memory.GPU_ELEMENTS[suite]}  # on every GPU: one key


def test_arrays_below_four_caches_say_so_in_info():
    fp = fingerprint()
    big = Context(fingerprint=dict(fp, cpu=dict(fp["cpu"], llc_bytes=2**26)), device="cpu", loop=TINY_LOOP)
    n = 1 << 16
    result = memory.Memory().execute({"op": "copy", "elements": n, "dtype": "fp32"}, big)
    assert result["status"] == "ok", result["reason"]
    info = result["info"]
    assert info["llc_bytes"] == 2**26 and info["array_over_llc"] == round(n * 4 / 2**26, 2)
    assert "last-level cache" in info["warning"]


def test_whole_buffer_gate_catches_one_wrong_element_past_any_head():
    import torch

    from gpuparity.measure.gates import elementwise

    n = 1 << 20
    a = torch.rand(n)
    out, ref = a * 3.0, (a.double() * 3.0).float()          # fp32 multiply = the fp64 product rounded once
    ok, detail = elementwise(out, ref, 0.0)
    assert ok and "identical" in detail, detail
    out[n - 1] = float(out[n - 1]) * (1 + 2**-22)           # the very last element, two ulps off
    ok, detail = elementwise(out, ref, memory.FP32_TOL)
    assert not ok and detail.startswith("1 of 1048576 elements"), detail
    out[n - 1] = float("nan")
    assert not elementwise(out, ref, 1.0)[0]


def test_triad_reference_allows_one_fused_rounding_only():
    import torch

    from gpuparity.measure.gates import elementwise

    b, c = torch.rand(1 << 16), torch.rand(1 << 16)
    fused = (b.double() + 3.0 * c.double()).float()         # what an FMA gives: one rounding
    ok, detail = elementwise(fused, b + c * 3.0, memory.FP32_TOL)
    assert ok, detail
