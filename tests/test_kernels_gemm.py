"""GEMM workloads: dtype support per platform (fake GPU fingerprints), real CPU execution of every
dtype that runs here (fp8 included), the correctness gate, and the max-achievable search."""

from __future__ import annotations

import os

import pytest
import torch

from gpuparity.measure.gates import GateSkip, freivalds, freivalds_gate
from gpuparity.measure.loop import LoopConfig
from gpuparity.measure.operands import rotation_copies
from gpuparity.platform.detect import fingerprint
from gpuparity.platform.specs import lookup
from gpuparity.workloads import gemm, gemm_operands, gemm_search
from gpuparity.workloads.base import Context
from gpuparity.workloads.dtypes import fp8_dtype_name, fp8_torch_dtype

TINY_LOOP = LoopConfig(warmup_s=0.01, warmup_max_s=0.05, min_samples=3, max_samples=5, min_time_s=0.01,
                       max_time_s=0.3, min_block_s=0.0)


def gpu_ctx(spec_id: str | None, target: str, backend: str = "cuda") -> Context:
    """A context as a GPU host would build it; supports() and dtype choice never touch the device."""
    spec = lookup(spec_id) if spec_id else None
    fp = {"backend": backend, "arch_target": target, "spec": spec, "tunableop": backend == "rocm"}
    return Context(fingerprint=fp, device="cuda")


def cpu_ctx(**kw) -> Context:
    return Context(fingerprint=fingerprint(), device="cpu", loop=TINY_LOOP, **kw)


@pytest.mark.parametrize("spec_id,target,backend,fp8_ok,fp8_type", [
    ("h100-sxm", "sm_90", "cuda", True, "float8_e4m3fn"),
    ("h200-sxm", "sm_90", "cuda", True, "float8_e4m3fn"),
    ("b200", "sm_100", "cuda", True, "float8_e4m3fn"),
    ("mi300x", "gfx942", "rocm", True, "float8_e4m3fnuz"),
    ("mi355x", "gfx950", "rocm", True, "float8_e4m3fn"),
    ("a100-sxm-80gb", "sm_80", "cuda", False, None),
    ("mi250x", "gfx90a", "rocm", False, None),
])
def test_fp8_support_and_variant(spec_id, target, backend, fp8_ok, fp8_type):
    ctx = gpu_ctx(spec_id, target, backend)
    ok, reason = gemm.Gemm().supports({"dtype": "fp8", "scaling": "row"}, ctx)
    assert ok is fp8_ok
    if ok:
        assert fp8_dtype_name(ctx) == fp8_type
        assert fp8_torch_dtype(ctx) == getattr(torch, fp8_type)
    else:
        assert "fp8" in reason and "empty datasheet cell" in reason


@pytest.mark.parametrize("spec_id,target,backend,fp4_ok", [
    ("b200", "sm_100", "cuda", True), ("mi355x", "gfx950", "rocm", True),
    ("h100-sxm", "sm_90", "cuda", False), ("mi300x", "gfx942", "rocm", False),
])
def test_fp4_support(spec_id, target, backend, fp4_ok):
    ok, reason = gemm.Gemm().supports({"dtype": "fp4", "scaling": "mx"}, gpu_ctx(spec_id, target, backend))
    assert ok is fp4_ok, reason
    if not ok:
        assert "fp4" in reason


def test_fp6_and_tf32_reasons():
    ok, reason = gemm.Gemm().supports({"dtype": "fp6"}, gpu_ctx("b200", "sm_100"))
    assert not ok and "fp6" in reason                    # torch has no fp6 tensor type
    ok, reason = gemm.Gemm().supports({"dtype": "tf32"}, gpu_ctx("mi355x", "gfx950", "rocm"))
    assert not ok and "tf32" in reason and "empty datasheet cell" in reason


def test_unknown_gpu_uses_architecture_rule():
    assert gemm.gemm_supports("fp8", gpu_ctx(None, "sm_89"))[0]
    ok, reason = gemm.gemm_supports("fp8", gpu_ctx(None, "sm_80"))
    assert not ok and "sm_80" in reason
    assert gemm.gemm_supports("fp4", gpu_ctx(None, "gfx950", "rocm"))[0]


def test_gpu_cases_cover_dtypes_shapes_and_scalings():
    cases = gemm.Gemm().cases("standard", gpu_ctx("h200-sxm", "sm_90"))
    assert {c["dtype"] for c in cases} == set(gemm.GEMM_DTYPES)
    assert {c.get("scaling") for c in cases if c["dtype"] == "fp8"} == {"tensor", "row"}
    assert {c["layout"] for c in cases} == {"nn", "tn", "nt"}
    skinny = [c for c in cases if c["m"] == 16]
    assert {(c["k"], c["n"]) for c in skinny} >= {(4096, 14336), (14336, 4096)}


def test_cpu_skips_carry_reasons():
    ctx = cpu_ctx()
    for dt, word in (("tf32", "TF32"), ("fp4", "Blackwell"), ("fp6", "fp6")):
        ok, reason = gemm.Gemm().supports({"dtype": dt}, ctx)
        assert not ok and word in reason


@pytest.mark.parametrize("params", [
    {"m": 64, "n": 96, "k": 128, "layout": "nn", "dtype": "fp64"},
    {"m": 64, "n": 96, "k": 128, "layout": "tn", "dtype": "fp32"},
    {"m": 64, "n": 96, "k": 128, "layout": "nt", "dtype": "bf16"},
    {"m": 32, "n": 64, "k": 128, "layout": "nn", "dtype": "int8"},
    {"m": 64, "n": 64, "k": 128, "layout": "nn", "dtype": "fp8", "scaling": "tensor"},
    {"m": 64, "n": 64, "k": 128, "layout": "nn", "dtype": "fp8", "scaling": "row"},
])
def test_cpu_execution_runs_and_checks(params):
    result = gemm.Gemm().execute(params, cpu_ctx())
    assert result["status"] == "ok", result["reason"]
    assert "relative error" in result["info"]["check"]
    assert result["work"]["flop"] == 2.0 * params["m"] * params["n"] * params["k"]
    assert result["derived"]["tflops"] > 0
    if params["dtype"] == "fp8":
        assert result["info"]["fp8_type"] == "float8_e4m3fn"
        assert result["info"]["scaling"] == params["scaling"]


def test_fast_wrong_result_is_failed_and_not_measured(monkeypatch):
    def wrong_mm(a, b, out=None):  # fast and wrong
        return out.zero_()

    monkeypatch.setattr(torch, "mm", wrong_mm)
    result = gemm.Gemm().execute({"m": 64, "n": 64, "k": 64, "layout": "nn", "dtype": "fp32"}, cpu_ctx())
    assert result["status"] == "failed" and "wrong result" in result["reason"]
    assert result["samples"] == [] and result["metric"] is None


def test_mxfp4_reference_does_not_depend_on_nibble_order():
    gen = torch.Generator().manual_seed(1)
    nib = torch.randint(0, 16, (8, 32), generator=gen, dtype=torch.uint8)
    a = nib | (nib << 4)                      # as the workload builds A: equal nibbles
    b = torch.randint(0, 256, (16, 32), generator=gen, dtype=torch.uint8)
    low = gemm_operands.decode_e2m1(a) @ gemm_operands.decode_e2m1(b).T
    high = gemm_operands.decode_e2m1(a, low_first=False) @ gemm_operands.decode_e2m1(b, low_first=False).T
    mixed = gemm_operands.decode_e2m1(a) @ gemm_operands.decode_e2m1(b, low_first=False).T
    assert torch.equal(low, high) and torch.equal(low, mixed)
    assert set(gemm_operands.decode_e2m1(torch.arange(16, dtype=torch.uint8)[None]).flatten().tolist()) == set(gemm_operands.E2M1)


def test_search_finds_best_and_survives_oom(monkeypatch):
    monkeypatch.setattr(gemm_search, "CPU_DIMS", [64, 128, 192])
    monkeypatch.setattr(gemm_search, "BLOCK_S", {"cpu": 0.001, "gpu": 0.001})
    real = gemm.prepare_gemm

    def sometimes_oom(m, n, k, *args, **kw):
        if m == 192 and n == 192:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB")
        return real(m, n, k, *args, **kw)

    monkeypatch.setattr(gemm_search, "prepare_gemm", sometimes_oom)
    found = gemm_search.search_shapes("fp32", cpu_ctx(), budget_s=3.0)
    assert found["shapes_tried"] >= 27          # the whole grid, then neighbours of the best
    assert found["oom_shapes"] >= 1
    assert found["best"] is not None and found["best"][:2] != (192, 192)
    tops = [t["quick_tflops"] for t in found["top"]]
    assert tops == sorted(tops, reverse=True) and tops[0] > 0


def test_search_workload_reports_best_shape(monkeypatch):
    monkeypatch.setattr(gemm_search, "CPU_DIMS", [64, 128])
    ctx = cpu_ctx(options={"budget_s": 0.5})
    w = gemm_search.GemmSearch()
    [params] = w.cases("quick", ctx)
    assert params == {"budget_s": 0.5, "dtype": "fp32"}
    result = w.execute(params, ctx)
    assert result["status"] == "ok", result["reason"]
    best = result["info"]["best_shape"]
    assert result["work"]["flop"] == 2.0 * best["m"] * best["n"] * best["k"]
    assert result["info"]["search"]["shapes_tried"] >= 1
    assert w.supports({"dtype": "int8"}, ctx)[0] is False


def test_mx_scale_counts_per_backend():
    assert gemm_operands.mx_scale_counts(8192, 8192, 8192, "cuda") == (8192 * 256, 8192 * 256)
    assert gemm_operands.mx_scale_counts(8192, 8192, 8192, "rocm") == (8192 * 256, 8192 * 256)
    # cuBLAS pads rows to 128 and K blocks to 4; ROCm does not.
    assert gemm_operands.mx_scale_counts(16, 32, 128, "cuda") == (128 * 4, 128 * 4)
    assert gemm_operands.mx_scale_counts(16, 32, 128, "rocm") == (16 * 4, 32 * 4)


def test_search_budget_must_be_a_number():
    from gpuparity.errors import UserError

    with pytest.raises(UserError, match="budget_s"):
        gemm_search.GemmSearch().cases("quick", cpu_ctx(options={"budget_s": "soon"}))


# -- the whole-output gate (Freivalds), rotation, fp8 accumulation, TF32 proof -------------------
def _rel_frobenius(out, ref) -> float:
    return float((out.double() - ref).norm() / ref.norm())


def test_freivalds_catches_one_wrong_element_that_head_and_norm_checks_pass():
    s = gemm_operands.float_set(512, 512, 512, "fp32", "nn", "cpu", torch.Generator().manual_seed(3))
    s.call()
    ok, detail, _ = freivalds_gate(s.c_rows, s.a_rows, s.b_rows, 512, 512, 512, "cpu", gemm.GATE_TOLERANCE["fp32"])
    assert ok, detail
    out = s.tensors["out"]
    ref = s.tensors["a"].double() @ s.tensors["b"].double()
    out[400, 123] += 0.02 * float(out[400].norm()) / 512 ** 0.5   # 2% of the row's rms, one element, row 400
    assert _rel_frobenius(out[:64], ref[:64]) <= gemm.GATE_TOLERANCE["fp32"]   # the old 64-row head: passes
    assert _rel_frobenius(out, ref) <= gemm.GATE_TOLERANCE["fp32"]            # a whole-matrix norm: passes
    ok, detail, fig = freivalds_gate(s.c_rows, s.a_rows, s.b_rows, 512, 512, 512, "cpu", gemm.GATE_TOLERANCE["fp32"])
    assert not ok and fig["worst_row"] > 5 * gemm.GATE_TOLERANCE["fp32"], detail
    out[400, 123] = float("nan")
    ok, detail, _ = freivalds_gate(s.c_rows, s.a_rows, s.b_rows, 512, 512, 512, "cpu", 1.0)
    assert not ok and "NaN" in detail


def test_fp8_gate_catches_mean_scales_and_passes_the_right_ones():
    ctx = cpu_ctx()
    s = gemm_operands.fp8_set(256, 256, 256, "row", ctx, torch.Generator().manual_seed(0))
    s.call()
    tol = gemm.GATE_TOLERANCE["fp8"]
    assert tol <= 1e-2
    ok, detail, fig = freivalds_gate(s.c_rows, s.a_rows, s.b_rows, 256, 256, 256, "cpu", tol)
    assert ok and fig["worst_row"] < tol / 2, detail
    t = s.tensors
    mean_b = t["scale_b"].mean().expand_as(t["scale_b"]).contiguous()          # per-column scales -> their mean
    torch._scaled_mm(t["a"], t["b"], scale_a=t["scale_a"], scale_b=mean_b, out_dtype=torch.bfloat16, out=t["out"])
    ok, detail, fig = freivalds_gate(s.c_rows, s.a_rows, s.b_rows, 256, 256, 256, "cpu", tol)
    assert not ok and fig["relative"] > 0.01, detail


def test_every_output_element_is_written_before_it_passes():
    result = gemm.Gemm().execute({"m": 64, "n": 64, "k": 64, "layout": "nn", "dtype": "fp32"}, cpu_ctx())
    assert result["status"] == "ok" and "Freivalds" in result["info"]["check"]
    # A kernel that skips the last row leaves the poison (NaN) there: the gate fails.
    s = gemm_operands.float_set(64, 64, 64, "fp32", "nn", "cpu", torch.Generator().manual_seed(0))
    s.poison()
    torch.mm(s.tensors["a"][:-1], s.tensors["b"], out=s.tensors["out"][:-1])
    ok, detail, _ = freivalds_gate(s.c_rows, s.a_rows, s.b_rows, 64, 64, 64, "cpu", 1e-4)
    assert not ok and "unwritten" in detail


def test_skinny_gemm_rotates_operands_over_twice_the_cache():
    fp = dict(fingerprint())
    fp["cpu"] = dict(fp["cpu"], llc_bytes=4 * 2**20)                            # a 4 MiB last-level cache
    ctx = Context(fingerprint=fp, device="cpu", loop=TINY_LOOP)
    params = {"m": 16, "n": 512, "k": 512, "layout": "nn", "dtype": "fp32", "operands": "rotate"}
    result = gemm.Gemm().execute(params, ctx)
    assert result["status"] == "ok", result["reason"]
    ops = result["info"]["operands"]
    set_bytes = (16 * 512 + 512 * 512 + 16 * 512) * 4
    assert ops["mode"] == "rotate" and ops["set_bytes"] == set_bytes
    assert ops["copies"] > 1 and ops["total_bytes"] > 2 * 4 * 2**20 >= (ops["copies"] - 1) * set_bytes
    assert result["info"]["reps_per_sample"] % ops["copies"] == 0                 # blocks hold whole rotations
    assert f"all {ops['copies']} operand sets" in result["info"]["check"]
    warm = gemm.Gemm().execute(dict(params, operands="warm"), ctx)
    assert warm["info"]["operands"]["copies"] == 1 and warm["info"]["operands"]["mode"] == "warm"


def test_rotation_calls_each_set_in_turn():
    prepared = gemm.prepare_gemm(16, 256, 256, "fp32", Context(
        fingerprint={"cpu": {"llc_bytes": 2**20}}, device="cpu"), operands="rotate")
    copies = prepared.cycle
    assert copies == rotation_copies((16 * 256 * 2 + 256 * 256) * 4, 2**20) > 1
    ok, detail = prepared.check()                                                # poisons, then fn x copies
    assert ok, detail


def test_gpu_skinny_cases_rotate_and_fp8_has_both_accumulations_on_nvidia():
    cases = gemm.Gemm().cases("standard", gpu_ctx("h200-sxm", "sm_90"))
    skinny = [c for c in cases if c["m"] in (16, 128)]
    assert skinny and all(c["operands"] == "rotate" for c in skinny)
    fp8 = [c for c in cases if c["dtype"] == "fp8"]
    assert {(c.get("scaling"), c["fast_accum"]) for c in fp8 if c["m"] == c["n"]} == {
        ("tensor", False), ("tensor", True), ("row", False), ("row", True)}
    rocm_ctx = gpu_ctx("mi300x", "gfx942", "rocm")
    rocm = gemm.Gemm().cases("standard", rocm_ctx)
    assert [c for c in rocm if c["dtype"] == "fp8"] == fp8          # the same cases (keys) on every GPU ...
    for c in fp8:                                                   # ... fast accumulation skipped off NVIDIA
        ok, why = gemm.Gemm().supports(c, rocm_ctx)
        assert ok is (not c["fast_accum"]) and (ok or "cuBLAS option" in why)
    full = gemm.Gemm().cases("full", gpu_ctx("h200-sxm", "sm_90"))
    assert {c["operands"] for c in full if c["m"] == 16 and c["dtype"] == "bf16"} == {"warm", "rotate"}


def test_fp8_records_fast_accumulation():
    params = {"m": 64, "n": 64, "k": 128, "layout": "nn", "dtype": "fp8", "scaling": "row", "fast_accum": False}
    result = gemm.Gemm().execute(params, cpu_ctx())
    assert result["status"] == "ok", result["reason"]
    assert result["info"]["use_fast_accum"] is False
    fast = gemm.Gemm().execute(dict(params, fast_accum=True), cpu_ctx())      # a cuBLAS mode: skipped here
    assert fast["status"] == "skipped" and "cuBLAS" in fast["reason"]
    prepared = gemm.prepare_gemm(64, 64, 128, "fp8", cpu_ctx(), scaling="row", fast_accum=True)
    assert prepared.info["use_fast_accum"] is True and prepared.check()[0]


def _round_to_tf32(t):
    """fp32 -> the 10-bit-mantissa value a TF32 unit multiplies (round half away, as torch's emulation)."""
    bits = t.view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def test_tf32_must_prove_it_ran():
    s = gemm_operands.float_set(256, 256, 256, "tf32", "nn", "cpu", torch.Generator().manual_seed(0))
    ctx = Context(fingerprint={"backend": "rocm"}, device="cpu")
    s.call()                                                                     # full fp32 on this CPU
    fp32_err = freivalds(s.c_rows, s.a_rows, s.b_rows, 256, 256, 256, "cpu")["worst_row"]
    with pytest.raises(GateSkip, match="TF32 not engaged.*HIPBLASLT_ALLOW_TF32=1"):
        gemm._tf32_engaged(s, fp32_err, 256, 256, 256, ctx)
    a, b = s.tensors["a"], s.tensors["b"]
    torch.mm(_round_to_tf32(a.clone()), _round_to_tf32(b.clone()), out=s.tensors["out"])   # what TF32 computes
    tf32_err = freivalds(s.c_rows, s.a_rows, s.b_rows, 256, 256, 256, "cpu")["worst_row"]
    assert "TF32 engaged" in gemm._tf32_engaged(s, tf32_err, 256, 256, 256, ctx)
    assert tf32_err <= gemm.GATE_TOLERANCE["tf32"]


def test_rocm_tf32_sets_hipblaslt_allow_tf32_for_its_case_and_skips_when_not_engaged(monkeypatch):
    monkeypatch.delenv("HIPBLASLT_ALLOW_TF32", raising=False)
    ctx = Context(fingerprint={"backend": "rocm", "cpu": {"llc_bytes": 2**25}}, device="cpu")
    prepared = gemm.prepare_gemm(128, 128, 128, "tf32", ctx)
    assert os.environ["HIPBLASLT_ALLOW_TF32"] == "1"
    assert prepared.info["hipblaslt_allow_tf32"].startswith("1")
    with pytest.raises(GateSkip, match="not engaged"):
        prepared.check()                                                         # a CPU runs fp32: not TF32
    prepared.teardown()
    assert "HIPBLASLT_ALLOW_TF32" not in os.environ
