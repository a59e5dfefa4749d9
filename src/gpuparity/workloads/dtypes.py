"""dtype names, torch dtypes, tolerances, and whether a device has units for them."""

from __future__ import annotations

import re

# Relative Frobenius error allowed against an fp64 reference, per compute dtype.
TOLERANCE = {
    "fp64": 1e-10, "fp32": 1e-4, "tf32": 5e-3, "bf16": 2e-2, "fp16": 5e-3,
    "int8": 0.0, "fp8": 1e-1, "fp6": 2e-1, "fp4": 3e-1,
}
FLOAT_DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16")
# Scaled low-precision GEMM dtypes: fp8 (e4m3, per-tensor or row-wise scales), fp4 = MXFP4 and
# fp6 = MXFP6 (block-32 e8m0 scales, OCP MX formats).
SCALED_DTYPES = ("fp8", "fp4", "fp6")
GEMM_DTYPES = FLOAT_DTYPES + ("int8",) + SCALED_DTYPES


def torch_dtype(name: str):
    import torch

    return {
        "fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32,
        "bf16": torch.bfloat16, "fp16": torch.float16, "int8": torch.int8,
    }[name]


def arch_target(ctx) -> str:
    """sm_90, gfx942, x86_64 ...: from the fingerprint, else the matched spec."""
    return ctx.fingerprint.get("arch_target") or (ctx.spec or {}).get("target") or ""


def sm_version(target: str) -> int | None:
    m = re.match(r"sm_(\d+)", target)
    return int(m.group(1)) if m else None


def fp8_dtype_name(ctx) -> str:
    """MI300-class gfx942 has the FNUZ fp8 variant; NVIDIA, gfx950 and RDNA4 use OCP e4m3fn."""
    return "float8_e4m3fnuz" if arch_target(ctx).startswith("gfx942") else "float8_e4m3fn"


def fp8_torch_dtype(ctx):
    import torch

    return getattr(torch, fp8_dtype_name(ctx))


def _arch_has(dtype: str, target: str) -> bool:
    """Architecture rule for parts without a datasheet row: fp8 from Ada/Hopper and CDNA3/RDNA4,
    MX fp4/fp6 from Blackwell and CDNA4."""
    sm = sm_version(target)
    if dtype == "fp8":
        return (sm is not None and sm >= 89) or target.startswith(("gfx942", "gfx950", "gfx12"))
    if dtype in ("fp4", "fp6"):  # MX fp4 in cuBLAS: B200/B300 (sm_100/103), not sm_120
        return (sm is not None and 100 <= sm < 120) or target.startswith("gfx950")
    return True


def gpu_has_units(dtype: str, ctx) -> tuple[bool, str]:
    """Datasheet-based answer for a GPU: an empty peak cell means no such unit."""
    from gpuparity.platform.specs import peak_tflops

    spec = ctx.spec
    if spec is None:
        target = arch_target(ctx)
        if not _arch_has(dtype, target):
            return False, f"{target or 'this GPU'} has no {dtype} tensor units"
        return True, ""  # unknown part: try it
    if peak_tflops(spec, dtype) is None:
        return False, f"{spec['product']} has no {dtype} units (empty datasheet cell)"
    return True, ""


def torch_has_scaled(dtype: str) -> tuple[bool, str]:
    """Whether this torch build has the tensor types and scaled-matmul entry point a dtype needs."""
    import torch
    import torch.nn.functional as F

    if dtype == "fp8":
        if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
            return False, f"torch {torch.__version__} has no torch._scaled_mm / float8 types"
        return True, ""
    if dtype == "fp4":
        if not hasattr(torch, "float4_e2m1fn_x2") or not hasattr(F, "scaled_mm"):
            return False, f"torch {torch.__version__} has no float4_e2m1fn_x2 / F.scaled_mm (MX recipes)"
        return True, ""
    if dtype == "fp6":
        if not any(name.startswith("float6_") for name in dir(torch)):
            return False, f"torch {torch.__version__} has no fp6 tensor type, so MXFP6 cannot be expressed"
        return False, "MXFP6 GEMM is not wired up in this version"
    return True, ""


def device_present(ctx) -> bool:
    """Whether ctx's device is on this machine (a plan or a test's GPU context on a CPU box is not)."""
    if ctx.device == "cpu":
        return True
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch: nothing to probe
        return False


def scaled_runs(dtype: str, ctx, scaling: str | None = None, fast_accum: bool = False) -> tuple[bool, str]:
    """Whether this torch runs a scaled GEMM (fp8, MXFP4) as gpuparity calls it: the documented
    version floors, then a tiny real call on the device where it is here (models.scaled_mm)."""
    import torch

    from gpuparity.models.scaled_mm import fp8_floor, fp8_runs, mxfp4_recipe

    fp = ctx.fingerprint or {}
    if dtype == "fp8":
        ok, why = fp8_floor(fp.get("torch_version") or torch.__version__, ctx.backend, fp.get("hip_version"), scaling)
        if ok and device_present(ctx):
            ok, why = fp8_runs(ctx.device, fp8_dtype_name(ctx), scaling or "tensor", fast_accum)
        return ok, why
    if dtype == "fp4" and device_present(ctx):
        recipe, why = mxfp4_recipe(ctx.device, ctx.backend)
        return recipe is not None, why
    return True, ""


def cpu_half_ok(dtype: str, ctx) -> tuple[bool, str]:
    """Half precision on a CPU without native units is emulated: slow but measurable when small."""
    cpu = ctx.fingerprint.get("cpu") or {}
    if dtype == "fp16" and not cpu.get("fp16_native"):
        return False, "no native fp16 units on this CPU (emulated: ~40 s per 2048^3); shrunk"
    if dtype == "bf16" and not cpu.get("bf16_native"):
        return False, "no native bf16 units on this CPU (emulated); shrunk"
    return True, ""


def compute_dtype(ctx, gpu: str = "bf16") -> str:
    """The dtype a model-like kernel (attention, MoE, conv) runs in: bf16 on a GPU; fp32 on a CPU
    without native bf16 units (emulated bf16 measures the emulation, not the part)."""
    if ctx.device == "cpu" and not cpu_half_ok("bf16", ctx)[0]:
        return "fp32"
    return gpu


def rel_error(out, ref) -> float:
    """Relative Frobenius error of out against an fp64 reference."""
    ref = ref.double()
    denom = float(ref.norm()) or 1.0
    return float((out.double() - ref).norm()) / denom
