"""Scaled GEMMs decide supports() by a tiny real call on the device (or the documented version
floor where no device is at hand) and skip with the library's own words: torch < 2.4's fp8 GEMM
(it returned (out, amax)), row-wise fp8 on ROCm before torch 2.6 / ROCm 6.3, and MXFP4 builds
whose scale recipe differs (ROCm 7.13+ padded and swizzled) or that lack the kernels (a CUDA
build without FBGEMM / MSLK). Simulated on the CPU with torch's own shapes of those answers."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gpuparity.execute.runner import run_case
from gpuparity.measure.loop import LoopConfig
from gpuparity.models import scaled_mm
from gpuparity.platform.detect import fingerprint
from gpuparity.platform.specs import lookup
from gpuparity.workloads import dtypes, gemm
from gpuparity.workloads.base import Context

TINY = LoopConfig(warmup_s=0.01, warmup_max_s=0.05, min_samples=3, max_samples=5, min_time_s=0.01, max_time_s=0.3,
                  min_block_s=0.0)
FP8 = {"m": 64, "n": 64, "k": 128, "layout": "nn", "dtype": "fp8", "scaling": "tensor"}


@pytest.fixture(autouse=True)
def fresh_probes():
    scaled_mm._probed.clear()
    yield
    scaled_mm._probed.clear()


def cpu_ctx() -> Context:
    return Context(fingerprint=fingerprint(), device="cpu", loop=TINY)


def gpu_ctx(spec_id: str, target: str, backend: str, **fp) -> Context:
    return Context(fingerprint={"backend": backend, "arch_target": target, "spec": lookup(spec_id), **fp},
                   device="cuda")


def test_torch_before_2_4_fp8_is_skipped_with_the_reason(monkeypatch):
    real = torch._scaled_mm

    def old_scaled_mm(*args, **kwargs):          # torch 2.1-2.3: (out, amax)
        kwargs.pop("out", None)
        out = real(*args, **kwargs)
        return out, out.abs().amax()

    monkeypatch.setattr(torch, "_scaled_mm", old_scaled_mm)
    ok, why = gemm.Gemm().supports(FP8, cpu_ctx())
    assert not ok and "(out, amax)" in why and "torch >= 2.4" in why
    result = run_case(gemm.Gemm(), FP8, cpu_ctx())
    assert result["status"] == "skipped" and "(out, amax)" in result["reason"]


def test_version_floors_where_the_device_is_not_here():
    ok, why = gemm.gemm_supports("fp8", gpu_ctx("h100-sxm", "sm_90", "cuda", torch_version="2.3.1+cu121"), "tensor")
    assert not ok and "torch 2.3.1+cu121" in why and "(out, amax)" in why
    old_rocm = gpu_ctx("mi300x", "gfx942", "rocm", torch_version="2.5.1+rocm6.2", hip_version="6.2.41133")
    assert gemm.gemm_supports("fp8", old_rocm, "tensor")[0]
    ok, why = gemm.gemm_supports("fp8", old_rocm, "row")
    assert not ok and "torch >= 2.6 with ROCm >= 6.3" in why
    new_rocm = gpu_ctx("mi300x", "gfx942", "rocm", torch_version="2.7.0+rocm6.3", hip_version="6.3.42131")
    assert gemm.gemm_supports("fp8", new_rocm, "row")[0]


def test_a_refused_scaling_skips_with_the_library_words(monkeypatch):
    real = torch._scaled_mm

    def no_rowwise(a, b, scale_a=None, scale_b=None, **kw):
        if scale_a is not None and scale_a.numel() > 1:
            raise RuntimeError("Invalid scaling configuration.\nFor RowWise scaling, a and b must be ...")
        return real(a, b, scale_a=scale_a, scale_b=scale_b, **kw)

    monkeypatch.setattr(torch, "_scaled_mm", no_rowwise)
    ok, why = gemm.Gemm().supports(dict(FP8, scaling="row"), cpu_ctx())
    assert not ok and "RuntimeError: Invalid scaling configuration." in why and "row scales" in why
    assert gemm.Gemm().supports(FP8, cpu_ctx())[0]             # per-tensor still runs


def _mx_build(accepts: set, refusal: str):
    """F.scaled_mm of a build that takes only the recipes in `accepts` ((swizzle, padded))."""
    def scaled_mm_(a, b, scale_a, recipe_a, scale_b, recipe_b, swizzle_a, swizzle_b, output_dtype=None):
        k = a.shape[1] * 2
        for name, padded in accepts:
            if swizzle_a == getattr(F.SwizzleType, name) and scale_a.numel() == scaled_mm.mx_scale_count(
                    a.shape[0], k, padded):
                return torch.full((a.shape[0], b.shape[1]), float(k), dtype=output_dtype)
        raise RuntimeError(refusal)
    return scaled_mm_


def test_mxfp4_recipe_is_probed_and_a_build_without_kernels_skips(monkeypatch):
    monkeypatch.setattr(F, "scaled_mm", _mx_build({("SWIZZLE_32_4_4", True)}, "ROCm 7.13+ takes swizzled scales"))
    recipe, why = scaled_mm.mxfp4_recipe("cpu", "rocm")
    assert recipe == {"swizzle": "SWIZZLE_32_4_4", "padded": True}, why     # not the older ROCm recipe
    scaled_mm._probed.clear()
    monkeypatch.setattr(F, "scaled_mm", _mx_build(set(), "MXFP4 scaled_mm needs a build with FBGEMM / MSLK"))
    monkeypatch.setattr(dtypes, "device_present", lambda ctx: True)        # as on a B200 with this build ...
    real_probe = scaled_mm.mxfp4_recipe
    monkeypatch.setattr(scaled_mm, "mxfp4_recipe", lambda device, backend: real_probe("cpu", backend))  # ... here
    ok, why = gemm.Gemm().supports({"dtype": "fp4", "scaling": "mx"}, gpu_ctx("b200", "sm_100", "cuda"))
    assert not ok and "FBGEMM / MSLK" in why and "runs no MXFP4 recipe" in why


def test_fp8_linear_layers_refuse_an_old_scaled_mm(monkeypatch):
    from gpuparity.models import fp8

    monkeypatch.setattr(torch, "__version__", "2.3.1+cu121")
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Linear(32, 32))
    with pytest.raises(ValueError, match=r"\(out, amax\)"):
        fp8.quantise(model, "float8_e4m3fn")
