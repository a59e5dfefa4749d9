"""dtype names, torch dtypes, tolerances, and whether a device has units for them."""

from __future__ import annotations

# Relative Frobenius error allowed against an fp64 reference, per compute dtype.
TOLERANCE = {
    "fp64": 1e-10, "fp32": 1e-4, "tf32": 5e-3, "bf16": 2e-2, "fp16": 5e-3,
    "int8": 0.0, "fp8": 1e-1, "fp6": 2e-1, "fp4": 3e-1,
}
FLOAT_DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16")


def torch_dtype(name: str):
    import torch

    return {
        "fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32,
        "bf16": torch.bfloat16, "fp16": torch.float16, "int8": torch.int8,
    }[name]


def gpu_has_units(dtype: str, ctx) -> tuple[bool, str]:
    """Datasheet-based answer for a GPU: an empty peak cell means no such unit."""
    from gpuparity.platform.specs import peak_tflops

    spec = ctx.spec
    if spec is None:
        return True, ""  # unknown part: try it
    if peak_tflops(spec, dtype) is None:
        return False, f"{spec['product']} has no {dtype} units (empty datasheet cell)"
    return True, ""


def cpu_half_ok(dtype: str, ctx) -> tuple[bool, str]:
    """Half precision on a CPU without native units is emulated: slow but measurable when small."""
    cpu = ctx.fingerprint.get("cpu") or {}
    if dtype == "fp16" and not cpu.get("fp16_native"):
        return False, "no native fp16 units on this CPU (emulated: ~40 s per 2048^3); shrunk"
    if dtype == "bf16" and not cpu.get("bf16_native"):
        return False, "no native bf16 units on this CPU (emulated); shrunk"
    return True, ""
