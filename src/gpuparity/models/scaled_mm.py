"""Whether this torch's scaled matrix multiplies run here, decided by a tiny real call (cached per
device) or, where no device is at hand, by the documented version floors; the reason is the
library's own words.

- fp8 (torch._scaled_mm): before torch 2.4 it returned (out, amax) and took other arguments, so
  gpuparity's fp8 path needs 2.4; row-wise scales on ROCm need torch 2.6 with ROCm 6.3 (hipBLASLt).
- MXFP4 (F.scaled_mm, block-32 e8m0 scales): the scale recipe differs by build: plain (rows x K/32)
  scales on ROCm before 7.13, padded (rows to 128, K blocks to 4) and swizzled ones on ROCm 7.13+
  and cuBLAS; a CUDA build without the FBGEMM / MSLK kernels refuses. The probe tries this
  platform's recipes and keeps the first that gives the right answer.

    ok, why = fp8_runs(device, "float8_e4m3fn", "row", fast_accum=False, backend="rocm", versions=fp)
    recipe, why = mxfp4_recipe(device, backend)       # {"swizzle": ..., "padded": ...} or None
"""

from __future__ import annotations

import re

FP8_FLOOR = (2, 4)                  # torch._scaled_mm returns one tensor from 2.4
ROCM_ROWWISE_FLOOR = ((2, 6), (6, 3))   # (torch, ROCm) for row-wise fp8 scales on ROCm
MX_RECIPES = {"rocm": (("NO_SWIZZLE", False), ("SWIZZLE_32_4_4", True)), "cuda": (("SWIZZLE_32_4_4", True),)}
_probed: dict = {}


def version(text: str | None) -> tuple[int, int]:
    """(major, minor) of '2.3.1+cu121', '6.2.41133-...'; (0, 0) when unreadable."""
    m = re.match(r"\s*(\d+)\.(\d+)", str(text or ""))
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).strip().splitlines()[:1]) or type(exc).__name__
    return f"{type(exc).__name__}: {text[:240]}"


def fp8_floor(torch_version: str, backend: str | None, hip_version: str | None, scaling: str | None) -> tuple[bool, str]:
    """The documented floors, for a machine gpuparity cannot probe."""
    tv = version(torch_version)
    if tv < FP8_FLOOR:
        return False, (f"torch {torch_version}: torch._scaled_mm returns (out, amax) before torch 2.4; "
                       "gpuparity's fp8 GEMM needs torch >= 2.4")
    if backend == "rocm" and scaling == "row":
        (t_min, r_min), hv = ROCM_ROWWISE_FLOOR, version(hip_version)
        if tv < t_min or (hip_version and hv < r_min):
            return False, (f"row-wise fp8 scales on ROCm need torch >= 2.6 with ROCm >= 6.3 (hipBLASLt); "
                           f"this is torch {torch_version}, HIP {hip_version}")
    return True, ""


def fp8_runs(device: str, fp8_name: str, scaling: str, fast_accum: bool = False) -> tuple[bool, str]:
    """A 16 x 32 x 16 fp8 GEMM with this scaling, as gpuparity calls it, on the device: ok, or the
    library's reason (cached per device, format, scaling and accumulation)."""
    key = ("fp8", device, fp8_name, scaling, bool(fast_accum))
    if key not in _probed:
        _probed[key] = _fp8_call(device, fp8_name, scaling, fast_accum)
    return _probed[key]


def _fp8_call(device: str, fp8_name: str, scaling: str, fast_accum: bool) -> tuple[bool, str]:
    import torch

    where = f"torch {torch.__version__} on {device}"
    try:
        fdt = getattr(torch, fp8_name)
        a = torch.ones(16, 32, device=device).to(fdt)
        b = torch.ones(16, 32, device=device).to(fdt).t()
        if scaling == "row":
            sa, sb = torch.ones(16, 1, device=device), torch.ones(1, 16, device=device)
        else:
            sa, sb = torch.ones((), device=device), torch.ones((), device=device)
        out = torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)
    except Exception as exc:  # noqa: BLE001 - any refusal is the reason to skip
        return False, f"{where} refuses fp8 GEMMs with {scaling} scales: {_first_line(exc)}"
    if isinstance(out, tuple):
        return False, (f"{where}: torch._scaled_mm returns (out, amax) (torch < 2.4); gpuparity's fp8 GEMM "
                       "needs torch >= 2.4")
    got = float(out[0, 0])
    if got != 32.0:
        return False, f"{where}: a {scaling}-scaled fp8 GEMM of ones gave {got:g}, not 32"
    return True, ""


def mx_scale_count(rows: int, k: int, padded: bool) -> int:
    """e8m0 scales one operand needs: one per 32 values along K per row; padded recipes round
    rows up to 128 and K blocks up to 4."""
    blocks = -(-k // 32)
    if not padded:
        return rows * blocks
    return -(-rows // 128) * 128 * (-(-blocks // 4) * 4)


def mxfp4_recipe(device: str, backend: str | None) -> tuple[dict | None, str]:
    """The MXFP4 scale recipe this build takes ({"swizzle", "padded"}), found by a 32 x 32 x 128
    GEMM of ones per recipe; (None, the library's reason) when none runs right."""
    key = ("mxfp4", device, backend)
    if key not in _probed:
        _probed[key] = _mx_probe(device, backend)
    return _probed[key]


def _mx_probe(device: str, backend: str | None) -> tuple[dict | None, str]:
    import torch
    import torch.nn.functional as F

    m = n = 32
    k = 128
    tried = []
    for swizzle, padded in MX_RECIPES.get(backend or "", MX_RECIPES["cuda"]):
        try:
            ones = torch.full((m, k // 2), 0x22, dtype=torch.uint8, device=device)   # e2m1 1.0 in both nibbles
            a = ones.view(torch.float4_e2m1fn_x2)
            b = torch.full((n, k // 2), 0x22, dtype=torch.uint8, device=device).view(torch.float4_e2m1fn_x2).t()
            scales = [torch.full((mx_scale_count(r, k, padded),), 127, dtype=torch.uint8, device=device)
                      .view(torch.float8_e8m0fnu) for r in (m, n)]
            kind, recipe = getattr(F.SwizzleType, swizzle), F.ScalingType.BlockWise1x32
            out = F.scaled_mm(a, b, scales[0], recipe, scales[1], recipe, kind, kind, output_dtype=torch.bfloat16)
            got = float(out[0, 0])
            if got == float(k):
                return {"swizzle": swizzle, "padded": padded}, ""
            tried.append(f"{swizzle}: {got:g} for {k}")
        except Exception as exc:  # noqa: BLE001 - this recipe is not the build's
            tried.append(f"{swizzle}{' padded' if padded else ''}: {_first_line(exc)}")
    return None, f"torch {torch.__version__} on {device} runs no MXFP4 recipe ({'; '.join(tried)})"
