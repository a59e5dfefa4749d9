"""GEMM operand sets: the tensors one GEMM case multiplies, made per dtype, with the fp64 row
readers the correctness gate checks them by.

Low precision: int8 through torch._int_mm (int32 out); fp8 (e4m3fn, or e4m3fnuz on gfx942)
through torch._scaled_mm with per-tensor or row-wise scales, with and without cuBLAS fast
accumulation on NVIDIA (`fast_accum`, recorded); fp4 = MXFP4 through F.scaled_mm with block-32
e8m0 scales. Scaled outputs are bf16; the readers of scaled operands dequantise them, so the
reference of a scaled dtype is its quantised inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from gpuparity.measure.gates import Rows, rows_of
from gpuparity.workloads.dtypes import fp8_dtype_name, torch_dtype

# fp4 e2m1 code -> value (sign bit 3); all 16 codes are finite.
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def _operand(rows: int, cols: int, transposed: bool, make):
    """A rows x cols operand; stored as its transpose (column-major) when `transposed`."""
    return make(cols, rows).t() if transposed else make(rows, cols)


@dataclass
class OperandSet:
    """One set of GEMM operands: `call` computes C = A @ B into this set's output; the readers
    give fp64 rows of A, B (dequantised: the reference of scaled dtypes is their quantised
    inputs) and C for the gate."""
    call: Callable[[], Any]
    a_rows: Rows
    b_rows: Rows
    c_rows: Rows
    nbytes: int
    poison: Callable[[], Any] = lambda: None
    tensors: dict = field(default_factory=dict)


def _nbytes(*tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def float_set(m, n, k, dt, layout, dev, gen) -> OperandSet:
    import torch

    tdt = torch_dtype(dt)

    def make(r, c):
        return torch.randn(r, c, generator=gen, device=dev, dtype=tdt)

    a = _operand(m, k, layout[0] == "t", make)
    b = _operand(k, n, layout[1] == "t", make)
    out = torch.empty(m, n, device=dev, dtype=tdt)
    return OperandSet(call=lambda: torch.mm(a, b, out=out), a_rows=rows_of(a), b_rows=rows_of(b),
                      c_rows=rows_of(out), nbytes=_nbytes(a, b, out), poison=lambda: out.fill_(float("nan")),
                      tensors={"a": a, "b": b, "out": out})


def int8_set(m, n, k, dev, gen) -> OperandSet:
    import torch

    def make(r, c):
        return torch.randint(-8, 8, (r, c), generator=gen, device=dev, dtype=torch.int8)

    a = _operand(m, k, False, make)
    b = _operand(k, n, True, make)
    out = torch.empty(m, n, device=dev, dtype=torch.int32)
    return OperandSet(call=lambda: torch._int_mm(a, b, out=out), a_rows=rows_of(a), b_rows=rows_of(b),
                      c_rows=rows_of(out), nbytes=_nbytes(a, b, out), poison=lambda: out.fill_(-(2**31)),
                      tensors={"a": a, "b": b, "out": out})


def fp8_set(m, n, k, scaling, ctx, gen, fast_accum: bool = False) -> OperandSet:
    """A (m,k) row-major and B (k,n) column-major in fp8 with fp32 scales: per tensor, or per row
    of A and per column of B. torch._scaled_mm computes (A*sa) @ (B*sb) into bf16."""
    import torch

    fdt = getattr(torch, fp8_dtype_name(ctx))
    fmax = torch.finfo(fdt).max
    dev = ctx.device
    x = torch.randn(m, k, generator=gen, device=dev)
    y = torch.randn(n, k, generator=gen, device=dev)          # B stored transposed
    if scaling == "row":
        sa = x.abs().amax(dim=1, keepdim=True) / fmax          # (m, 1)
        sb = y.abs().amax(dim=1, keepdim=True) / fmax          # (n, 1) -> (1, n)
    elif scaling == "tensor":
        sa, sb = x.abs().max() / fmax, y.abs().max() / fmax
    else:
        raise ValueError(f"fp8 scaling must be tensor or row, got {scaling}")
    a = (x / sa).to(fdt)
    b = (y / sb).to(fdt).t()
    scale_a = sa.float()
    scale_b = (sb.t() if scaling == "row" else sb).float().contiguous()
    del x, y
    out = torch.empty(m, n, device=dev, dtype=torch.bfloat16)

    def call():
        torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16, out=out,
                         use_fast_accum=fast_accum)

    return OperandSet(call=call, a_rows=rows_of(a, row_scale=scale_a), b_rows=rows_of(b, col_scale=scale_b),
                      c_rows=rows_of(out), nbytes=_nbytes(a, b, out), poison=lambda: out.fill_(float("nan")),
                      tensors={"a": a, "b": b, "out": out, "scale_a": scale_a, "scale_b": scale_b})


def mxfp4_set(m, n, k, ctx, gen) -> OperandSet:
    """MXFP4: e2m1 values packed two per byte, one e8m0 scale per 32 values along K.

    Scales are uniform (2^0): the scale layout (swizzled on NVIDIA) then cannot change the
    result, and only the scale count must match what the kernel expects. A's two nibbles per
    byte are equal, so the fp64 reference does not depend on the nibble order of the packing.
    """
    import torch
    import torch.nn.functional as F

    if k % 128 or m % 16 or n % 16:
        raise ValueError("MXFP4 GEMM needs K divisible by 128 and M, N by 16")
    dev = ctx.device
    nib = torch.randint(0, 16, (m, k // 2), generator=gen, device=dev, dtype=torch.uint8)
    a_bytes = nib | (nib << 4)
    b_bytes = torch.randint(0, 256, (n, k // 2), generator=gen, device=dev, dtype=torch.uint8)
    a = a_bytes.view(torch.float4_e2m1fn_x2)
    b = b_bytes.view(torch.float4_e2m1fn_x2).t()       # (k/2, n) column-major
    recipe = mx_recipe(ctx)
    count_a, count_b = mx_scale_counts(m, n, k, ctx.backend, recipe["padded"])
    swizzle = getattr(F.SwizzleType, recipe["swizzle"])

    def ones(count):  # e8m0 byte 127 = 2^0
        return torch.full((count,), 127, dtype=torch.uint8, device=dev).view(torch.float8_e8m0fnu)

    sa, sb = ones(count_a), ones(count_b)
    recipe = F.ScalingType.BlockWise1x32
    out = _Latest()

    def call():  # F.scaled_mm has no out=; keep the latest output rather than copy it (a copy is timed)
        out.tensor = F.scaled_mm(a, b, sa, recipe, sb, recipe, swizzle, swizzle, output_dtype=torch.bfloat16)

    def poison():
        out.tensor = None

    def b_rows(r0, r1):   # rows r0..r1 of B (along K) = columns of the decoded (n, k) bytes
        return decode_e2m1(b_bytes[:, r0 // 2:(r1 + 1) // 2]).t()[r0 % 2:r0 % 2 + r1 - r0]

    return OperandSet(call=call, a_rows=lambda r0, r1: decode_e2m1(a_bytes[r0:r1]), b_rows=b_rows,
                      c_rows=lambda r0, r1: out.tensor[r0:r1].double(), nbytes=_nbytes(a_bytes, b_bytes) + 2 * m * n,
                      poison=poison, tensors={"a_bytes": a_bytes, "b_bytes": b_bytes})


def mx_recipe(ctx) -> dict:
    """The scale recipe this build takes (models.scaled_mm probes it on the device); where it
    cannot be probed, the platform's first: plain on ROCm, padded and swizzled on cuBLAS."""
    from gpuparity.models.scaled_mm import MX_RECIPES, mxfp4_recipe

    if ctx.device != "cpu":
        try:
            import torch

            if torch.cuda.is_available():
                recipe, _ = mxfp4_recipe(ctx.device, ctx.backend)
                if recipe:
                    return recipe
        except Exception:  # noqa: BLE001 - no device: the platform's default
            pass
    swizzle, padded = MX_RECIPES.get(ctx.backend or "", MX_RECIPES["cuda"])[0]
    return {"swizzle": swizzle, "padded": padded}


def mx_scale_counts(m: int, n: int, k: int, backend: str, padded: bool | None = None) -> tuple[int, int]:
    """e8m0 scales A and B need: one per 32 values along K per row. Plain recipes (ROCm before
    7.13) take (rows, K/32) scales; padded ones (cuBLAS, ROCm 7.13+) round rows up to 128 and K
    blocks up to 4. `padded` None: the backend's first recipe."""
    from gpuparity.models.scaled_mm import mx_scale_count

    padded = backend != "rocm" if padded is None else padded
    return mx_scale_count(m, k, padded), mx_scale_count(n, k, padded)


class _Latest:
    """The most recent output of a call that allocates its result; sliced like that tensor."""

    tensor = None

    def __getitem__(self, index):
        return self.tensor[index]


def decode_e2m1(bytes_2d, low_first: bool = True):
    """(r, c) bytes of packed e2m1 pairs -> (r, 2c) fp64 values."""
    import torch

    lut = torch.tensor(E2M1, dtype=torch.float64, device=bytes_2d.device)
    lo, hi = lut[(bytes_2d & 15).long()], lut[(bytes_2d >> 4).long()]
    pair = [lo, hi] if low_first else [hi, lo]
    return torch.stack(pair, dim=-1).reshape(bytes_2d.shape[0], -1)
