"""Dense matrix multiply C = A @ B at every dtype the device has: FLOP = 2*M*N*K.

Two workloads:
- `gemm`: fixed shapes (square, transposed operands, LLM-typical skinny shapes);
- `gemm_search`: max-achievable TFLOP/s, mamf-finder style: sweep shapes within a time budget,
  then measure the best shape with the full loop (re-measuring removes the winner's-curse bias
  of picking the maximum of noisy quick timings).

Low precision: int8 through torch._int_mm (int32 out); fp8 (e4m3fn, or e4m3fnuz on gfx942)
through torch._scaled_mm with per-tensor or row-wise scales, with and without cuBLAS fast
accumulation on NVIDIA (`fast_accum`, recorded); fp4 = MXFP4 through F.scaled_mm with block-32
e8m0 scales. Scaled outputs are bf16.

Operands: square shapes reuse one set ("warm"); skinny (decode-like) shapes rotate through copies
totalling > 2x the last-level cache ("rotate", measure.operands), so a large cache cannot hold a
weight that a real decode step streams from memory; `operands=warm|rotate` sets either.
Correctness: the whole output of every operand set, poisoned first, against fp64 by Freivalds'
check (measure.gates); scaled dtypes against the reference of their quantised inputs. TF32 must
prove it ran: its error must exceed fp32's, else the case is skipped with the reason.
"""

from __future__ import annotations

import os
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from gpuparity.measure.gates import GateSkip, Rows, freivalds, freivalds_gate, rows_of
from gpuparity.measure.operands import describe, device_budget, llc_bytes, rotating, rotation_copies
from gpuparity.results.work import gemm_flop
from gpuparity.workloads.base import Context, Prepared, Workload
from gpuparity.workloads.dtypes import (
    FLOAT_DTYPES,
    GEMM_DTYPES,
    SCALED_DTYPES,
    TOLERANCE,
    fp8_dtype_name,
    gpu_has_units,
    torch_dtype,
    torch_has_scaled,
)

# Square sizes per suite and device class (a key never depends on the device itself): GPUs run
# compute-bound sizes even in quick (a 1024^3 GEMM lasts microseconds on an H200: launch and tile
# effects, not GEMM throughput); CPUs small ones, smaller still for dtypes a CPU may emulate
# (bf16 / fp16 without native units take ~40 s per 2048^3), whatever units this CPU has.
SIZES = {"quick": 4096, "standard": 8192, "full": 8192, "comm": 4096}
CPU_SIZES = {"quick": 512, "standard": 2048, "full": 4096, "comm": 512}
CPU_HALF = {"quick": 256, "standard": 512, "full": 512, "comm": 256}   # bf16, fp16, fp8
CPU_INT8 = 128
# (K, N) of Llama-3.1-8B projections: gate/up 4096->14336, down 14336->4096, q/o 4096->4096.
LLAMA_KN = [(4096, 14336), (14336, 4096), (4096, 4096)]
FULL_SWEEP = (256, 512, 1024, 2048, 4096, 16384)
SKINNY_M = {"quick": (), "standard": (16, 128), "full": (16, 32, 64, 128, 256)}   # quick: one square per dtype
DEFAULT_SCALING = {"fp8": ("tensor", "row"), "fp4": ("mx",), "fp6": ("mx",)}
# Gate tolerances (worst row, measure.gates.freivalds). Scaled dtypes are checked against their
# quantised inputs, so only accumulation and the bf16 output rounding remain (~4e-3 worst row);
# fast accumulation keeps ~14 bits on Hopper, hence its wider bound.
GATE_TOLERANCE = dict(TOLERANCE, fp8=1e-2, fp6=1e-2, fp4=1e-2)
FAST_ACCUM_TOLERANCE = 3e-2
TF32_OVER_FP32 = 4.0     # TF32 engaged: its error is at least this many times fp32's
# fp4 e2m1 code -> value (sign bit 3); all 16 codes are finite.
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def _case(m, n, k, dt, layout="nn", scaling=None, operands=None, fast_accum=None) -> dict:
    p = {"m": m, "n": n, "k": k, "layout": layout, "dtype": dt}
    if scaling:
        p["scaling"] = scaling
    if fast_accum is not None:
        p["fast_accum"] = fast_accum
    if operands:
        p["operands"] = operands
    return p


def gemm_supports(dt: str, ctx: Context, scaling: str | None = None) -> tuple[bool, str]:
    if dt not in GEMM_DTYPES:
        return False, f"unknown dtype {dt}; known: {', '.join(GEMM_DTYPES)}"
    if dt in SCALED_DTYPES and not ctx.planned:     # this machine's torch; a plan asks the spec only
        ok, why = torch_has_scaled(dt)
        if not ok:
            return ok, why
    if ctx.device == "cpu":
        if dt == "tf32":
            return False, "TF32 is a GPU tensor-core mode; a CPU has no TF32 units"
        if dt == "int8" and not ctx.planned:
            import torch

            if not hasattr(torch, "_int_mm"):
                return False, f"torch {torch.__version__} has no torch._int_mm"
        if dt in ("fp4", "fp6"):
            return False, f"{dt} (MX block-scaled) GEMM needs Blackwell (sm_100+) or MI355X-class (gfx950) units"
        return True, ""
    if dt in ("fp4", "fp6") and scaling not in (None, "mx"):
        return False, f"{dt} supports only mx scaling"
    return gpu_has_units(dt, ctx)


class Gemm(Workload):
    name = "gemm"
    category = "kernel"
    description = "Dense GEMM at fixed shapes (square, transposed, LLM skinny); TFLOP/s vs the dense datasheet peak"
    axes = {
        "dtype": ", ".join(GEMM_DTYPES),
        "m,n,k": "square; skinny M=16..256 with Llama-3.1-8B (K,N)",
        "layout": "nn | tn | nt (A or B stored transposed)",
        "scaling": "fp8: tensor | row; fp4: mx (block-32 e8m0)",
        "fast_accum": "fp8: cuBLAS fast accumulation (both everywhere; true is skipped off NVIDIA)",
        "operands": "skinny shapes: rotate (copies > 2x the last-level cache, default) | warm (one set)",
    }
    choices = {"layout": ("nn", "tn", "nt"), "operands": ("rotate", "warm"), "scaling": ("tensor", "row", "mx")}

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        cpu = ctx.device == "cpu"
        n = (CPU_SIZES if cpu else SIZES)[suite]
        dtypes = ctx.options.get("dtypes") or GEMM_DTYPES
        out = []
        for dt in dtypes:
            size = n
            if cpu and dt in ("bf16", "fp16", "fp8"):
                size = CPU_HALF[suite]
            if cpu and dt == "int8":
                size = CPU_INT8
            for scaling in DEFAULT_SCALING.get(dt, (None,)):
                for fast in fast_accum_settings(dt):
                    out.append(_case(size, size, size, dt, scaling=scaling, fast_accum=fast))
        # Transposed operands and skinny shapes at the dtype LLMs run in (fp32 on a CPU); skinny
        # shapes rotate their operands (full: the M=16 shapes also warm, to show the difference).
        main = "fp32" if cpu else "bf16"
        if main in dtypes:
            if suite != "quick":
                out += [_case(n, n, n, main, layout) for layout in ("tn", "nt")]
            out += [_case(m, nn, k, main, operands="rotate") for m in SKINNY_M.get(suite, ()) for k, nn in LLAMA_KN]
            if suite == "full":  # how throughput grows with size
                out += [_case(16, nn, k, main, operands="warm") for k, nn in LLAMA_KN]
                out += [_case(d, d, d, main) for d in FULL_SWEEP if d != n]
        if not cpu and "fp8" in dtypes and suite != "quick":
            out += [_case(m, nn, k, "fp8", scaling="row", operands="rotate", fast_accum=fast)
                    for m in SKINNY_M.get(suite, ()) for k, nn in LLAMA_KN for fast in fast_accum_settings("fp8")]
        return out

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        ok, why = gemm_supports(params["dtype"], ctx, params.get("scaling"))
        if ok and params.get("fast_accum") and ctx.backend != "cuda":
            return False, "fast accumulation is a cuBLAS option of fp8 GEMMs; this platform has no such mode"
        return ok, why

    def prepare(self, params: dict, ctx: Context) -> Prepared:
        return prepare_gemm(params["m"], params["n"], params["k"], params["dtype"], ctx,
                            params.get("layout", "nn"), params.get("scaling"),
                            operands=params.get("operands", "warm"), fast_accum=bool(params.get("fast_accum")))


def fast_accum_settings(dt: str) -> tuple:
    """fp8 GEMMs: both accumulation modes (inference runs fast accumulation on NVIDIA; the exact
    mode is the conservative one), on every platform so that keys match: fast accumulation is
    skipped where there is no such mode; no axis for other dtypes."""
    return (False, True) if dt == "fp8" else (None,)


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


def prepare_gemm(m: int, n: int, k: int, dt: str, ctx: Context, layout: str = "nn",
                 scaling: str | None = None, operands: str = "warm", fast_accum: bool = False) -> Prepared:
    import torch

    if operands not in ("warm", "rotate"):
        raise ValueError(f"operands must be warm or rotate, got {operands!r}")
    dev = ctx.device
    gen = torch.Generator(device=dev).manual_seed(0)   # generated where used: 8192^2 on a CPU takes seconds
    info: dict = {"layout": layout}
    if ctx.backend == "rocm":
        info["tunableop"] = bool(ctx.fingerprint.get("tunableop", False))
    restore: list[Callable[[], None]] = []
    if dt == "tf32" and ctx.backend == "rocm":
        # torch >= 2.7 on ROCm lets hipBLASLt use XF32 only with this set; the gate proves it did.
        prev_env = os.environ.get("HIPBLASLT_ALLOW_TF32")
        os.environ["HIPBLASLT_ALLOW_TF32"] = "1"
        info["hipblaslt_allow_tf32"] = "1 (set for this case)"
        restore.append(lambda: _restore_env("HIPBLASLT_ALLOW_TF32", prev_env))
    if dt in ("fp32", "tf32") and dev != "cpu":
        # TF32 is its own mode: fp32 runs at full precision, tf32 lets the tensor cores round.
        prev = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("high" if dt == "tf32" else "highest")
        restore.append(lambda: torch.set_float32_matmul_precision(prev))

    if dt in FLOAT_DTYPES:
        def make_set():
            return _float_set(m, n, k, dt, layout, dev, gen)
    elif dt == "int8":
        info["layout"] = "nt"   # int8 GEMMs want B column-major (TN)

        def make_set():
            return _int8_set(m, n, k, dev, gen)
    elif dt == "fp8":
        scaling = scaling or "tensor"
        info.update(fp8_type=fp8_dtype_name(ctx), scaling=scaling, use_fast_accum=fast_accum)

        def make_set():
            return fp8_set(m, n, k, scaling, ctx, gen, fast_accum)
    elif dt == "fp4":
        info.update(scaling="mx", fp4_type="float4_e2m1fn_x2", scale_type="float8_e8m0fnu")

        def make_set():
            return _mxfp4_set(m, n, k, ctx, gen)
    else:
        raise ValueError(f"no GEMM implementation for {dt}")

    first = make_set()
    llc = llc_bytes(ctx.fingerprint, dev)
    copies = rotation_copies(first.nbytes, llc, device_budget(dev)) if operands == "rotate" else 1
    sets = [first] + [make_set() for _ in range(copies - 1)]
    fn, _ = rotating(sets, lambda s: s.call()) if copies > 1 else (first.call, None)
    info["operands"] = describe(operands, copies, first.nbytes, llc)
    tol = FAST_ACCUM_TOLERANCE if fast_accum else GATE_TOLERANCE[dt]

    def check():
        for s in sets:
            s.poison()
        for _ in sets:   # each set once, in the order the rotation takes them
            fn()
        worst = None
        for s in sets:
            ok, detail, fig = freivalds_gate(s.c_rows, s.a_rows, s.b_rows, m, n, k, dev, tol)
            if not ok:
                return False, detail + (f" (operand set {sets.index(s) + 1} of {len(sets)})" if len(sets) > 1 else "")
            if worst is None or fig["worst_row"] > worst[1]["worst_row"]:
                worst = (detail, fig)
        detail, fig = worst
        if dt == "tf32":
            detail += "; " + _tf32_engaged(first, fig["worst_row"], m, n, k, ctx)
        return True, detail + (f"; all {len(sets)} operand sets" if len(sets) > 1 else "")

    def teardown():
        for undo in reversed(restore):
            undo()

    return Prepared(fn=fn, work={"flop": gemm_flop(m, n, k)}, peak=f"flop:{dt}", check=check, info=info,
                    teardown=teardown, cycle=copies)


def _restore_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def _tf32_engaged(s: OperandSet, tf32_err: float, m: int, n: int, k: int, ctx: Context) -> str:
    """TF32 rounds inputs to 10 mantissa bits: its error must exceed a full-fp32 run's of the same
    operands, else TF32 did not run (hipBLASLt without HIPBLASLT_ALLOW_TF32, a GPU without the
    mode) and the case is skipped rather than scored against the TF32 peak."""
    import torch

    prev = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        full = torch.mm(s.tensors["a"], s.tensors["b"])
    finally:
        torch.set_float32_matmul_precision(prev)
    fp32 = freivalds(rows_of(full), s.a_rows, s.b_rows, m, n, k, ctx.device)["worst_row"]
    if tf32_err <= TF32_OVER_FP32 * fp32:
        how = ("hipBLASLt ran full fp32 although HIPBLASLT_ALLOW_TF32=1 was set" if ctx.backend == "rocm"
               else "the GEMM ran full fp32")
        raise GateSkip(f"TF32 not engaged: relative error {tf32_err:.1e} is no more than fp32's ({fp32:.1e}); {how}")
    return f"TF32 engaged (error {tf32_err:.1e} vs fp32's {fp32:.1e})"


def _float_set(m, n, k, dt, layout, dev, gen) -> OperandSet:
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


def _int8_set(m, n, k, dev, gen) -> OperandSet:
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


def _mxfp4_set(m, n, k, ctx, gen) -> OperandSet:
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
    count_a, count_b = mx_scale_counts(m, n, k, ctx.backend)
    swizzle = F.SwizzleType.NO_SWIZZLE if ctx.backend == "rocm" else F.SwizzleType.SWIZZLE_32_4_4

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


def mx_scale_counts(m: int, n: int, k: int, backend: str) -> tuple[int, int]:
    """e8m0 scales A and B need: one per 32 values along K per row. ROCm takes plain (rows, K/32)
    scales; cuBLAS takes them swizzled, rows padded to 128 and K blocks to 4."""
    blocks = -(-k // 32)
    if backend == "rocm":
        return m * blocks, n * blocks
    padded = -(-blocks // 4) * 4
    return -(-m // 128) * 128 * padded, -(-n // 128) * 128 * padded


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


# -- max-achievable search ---------------------------------------------------
SEARCH_BUDGET_S = {"quick": 2.0, "standard": 45.0, "full": 120.0}
SEARCH_DTYPES = {"quick": ("fp32",), "standard": ("bf16", "fp8"), "full": ("fp32", "tf32", "bf16", "fp16", "fp8")}
GPU_DIMS = list(range(1024, 16385, 1024))
CPU_DIMS = list(range(256, 1025, 128))   # below 256^3 a CPU GEMM is mostly threading overhead
GPU_SEEDS = [(8192, 8192, 8192), (4096, 4096, 4096), (6144, 16384, 2048), (16384, 8192, 4096)]
BLOCK_S = {"cpu": 0.05, "gpu": 0.02}   # time per quick-timing block


def quick_tflops(fn, flop: float, device: str, block_s: float) -> float:
    """Median of 3 short blocks after a warm-up call: enough to rank shapes, not to report them."""
    from gpuparity.measure.loop import Timer

    timer = Timer(device)
    timer.sync()
    t0 = time.perf_counter()
    fn()
    timer.sync()
    per_call = max(time.perf_counter() - t0, 1e-7)
    reps = max(1, min(1000, int(block_s / per_call)))
    times = sorted(timer.time_block(fn, reps) / reps for _ in range(3))
    return flop / times[1] / 1e12


def search_shapes(dt: str, ctx: Context, budget_s: float, scaling: str | None = None,
                  seed: int = 0) -> dict:
    """Sweep shapes until the budget is spent: seeds, then random grid points, then neighbours of the
    best (half a grid step either way). An out-of-memory shape is recorded and skipped."""
    from gpuparity.errors import is_oom

    cpu = ctx.device == "cpu"
    dims = CPU_DIMS if cpu else GPU_DIMS
    step = (dims[1] - dims[0]) // 2
    rng = random.Random(seed)
    grid = [(m, n, k) for m in dims for n in dims for k in dims]
    rng.shuffle(grid)
    seeds = [(d, d, d) for d in (dims[-2], dims[len(dims) // 2])] if cpu else GPU_SEEDS
    queue = seeds + grid
    tried: dict[tuple, float | str] = {}
    best: tuple | None = None
    t0 = time.perf_counter()
    explore_until = 0.7 * budget_s

    def next_shape():
        if time.perf_counter() - t0 < explore_until and queue:
            return queue.pop(0)
        if best is not None:  # refine: untried neighbours of the best, else keep exploring
            untried = [s for s in _neighbours(best, step, dims[0]) if s not in tried]
            if untried:
                return rng.choice(untried)
        return queue.pop(0) if queue else None

    try:
        while time.perf_counter() - t0 < budget_s:
            shape = next_shape()
            if shape is None:
                break
            if shape in tried:
                continue
            try:
                tried[shape] = _time_shape(shape, dt, ctx, scaling)
            except Exception as exc:  # noqa: BLE001 - one shape must not end the sweep
                if not is_oom(exc):
                    raise
                tried[shape] = "out of memory"
                if not cpu:
                    import torch

                    torch.cuda.empty_cache()
                continue
            if best is None or tried[shape] > tried[best]:
                best = shape
    except KeyboardInterrupt:  # as mamf-finder does: say the best so far, then stop
        if best is not None:
            print(f"\ngemm_search {dt}: best so far m={best[0]} n={best[1]} k={best[2]} "
                  f"~{tried[best]:.4g} TFLOP/s", file=sys.stderr)
        raise
    measured = {s: v for s, v in tried.items() if isinstance(v, float)}
    top = sorted(measured.items(), key=lambda kv: -kv[1])[:5]
    return {
        "best": best, "shapes_tried": len(tried), "search_s": round(time.perf_counter() - t0, 2),
        "oom_shapes": sum(1 for v in tried.values() if not isinstance(v, float)),
        "top": [{"m": s[0], "n": s[1], "k": s[2], "quick_tflops": round(v, 4)} for s, v in top],
    }


def _time_shape(shape, dt, ctx, scaling) -> float:
    prepared = prepare_gemm(*shape, dt, ctx, scaling=scaling)
    try:
        return quick_tflops(prepared.fn, prepared.work["flop"], ctx.device, BLOCK_S["cpu" if ctx.device == "cpu" else "gpu"])
    finally:
        if prepared.teardown:
            prepared.teardown()


def _neighbours(best, step, floor):
    return [tuple(max(floor, d + s) for d, s in zip(best, (a, b, c), strict=True))
            for a in (-step, 0, step) for b in (-step, 0, step) for c in (-step, 0, step)]


class GemmSearch(Workload):
    name = "gemm_search"
    category = "kernel"
    description = ("Max-achievable GEMM (mamf-finder style): sweep M,N,K within a time budget, "
                   "then measure the best shape; TFLOP/s vs the dense datasheet peak")
    axes = {"dtype": "quick: fp32 (CPU) or bf16; standard: bf16, fp8; full: + fp32, tf32, fp16",
            "budget_s": "search time budget per dtype (--set budget_s=N)"}

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        from gpuparity.errors import UserError

        gpu_quick = suite == "quick" and ctx.device != "cpu"
        dtypes = ctx.options.get("dtypes") or (("bf16",) if gpu_quick else SEARCH_DTYPES[suite])
        try:
            budget = float(ctx.options.get("budget_s") or (10.0 if gpu_quick else SEARCH_BUDGET_S[suite]))
        except ValueError:
            raise UserError(f"budget_s must be a number of seconds, got {ctx.options['budget_s']!r}") from None
        out = []
        for dt in dtypes:
            p = {"budget_s": budget, "dtype": dt}
            if dt == "fp8":
                p["scaling"] = "tensor"
            out.append(p)
        return out

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        ok, why = gemm_supports(params["dtype"], ctx, params.get("scaling"))
        if ok and params["dtype"] in ("fp4", "fp6", "int8"):
            return False, f"the shape search covers float and fp8 dtypes; {params['dtype']} runs in gemm"
        return ok, why

    def expected_s(self, params: dict, ctx: Context) -> tuple[float, float]:
        lo, hi = super().expected_s(params, ctx)
        return lo + float(params["budget_s"]), hi + float(params["budget_s"])

    def prepare(self, params: dict, ctx: Context) -> Prepared:
        dt = params["dtype"]
        found = search_shapes(dt, ctx, float(params["budget_s"]), params.get("scaling"))
        if found["best"] is None:
            raise MemoryError(f"out of memory at every shape tried ({found['shapes_tried']})")
        m, n, k = found["best"]
        prepared = prepare_gemm(m, n, k, dt, ctx, scaling=params.get("scaling"))
        prepared.info.update(best_shape={"m": m, "n": n, "k": k}, search=found)
        return prepared


WORKLOADS = [Gemm(), GemmSearch()]
