"""Dense matrix multiply C = A @ B at every dtype the device has: FLOP = 2*M*N*K.

Two workloads:
- `gemm`: fixed shapes (square, transposed operands, LLM-typical skinny shapes);
- `gemm_search`: max-achievable TFLOP/s, mamf-finder style: sweep shapes within a time budget,
  then measure the best shape with the full loop (re-measuring removes the winner's-curse bias
  of picking the maximum of noisy quick timings).

Low precision: int8 through torch._int_mm (int32 out); fp8 (e4m3fn, or e4m3fnuz on gfx942)
through torch._scaled_mm with per-tensor or row-wise scales; fp4 = MXFP4 through
F.scaled_mm with block-32 e8m0 scales. Scaled outputs are bf16.
"""

from __future__ import annotations

import random
import sys
import time

from gpuparity.workloads.base import Context, Prepared, Workload
from gpuparity.workloads.dtypes import (
    FLOAT_DTYPES,
    GEMM_DTYPES,
    SCALED_DTYPES,
    TOLERANCE,
    cpu_half_ok,
    fp8_dtype_name,
    gpu_has_units,
    rel_error,
    torch_dtype,
    torch_has_scaled,
)

SIZES = {"quick": 1024, "standard": 8192, "full": 8192}
CPU_SIZES = {"quick": 512, "standard": 2048, "full": 4096}
CPU_SMALL = 128   # emulated half precision and int8 on a CPU: milliseconds, not minutes
CPU_FP8 = 256
# (K, N) of Llama-3.1-8B projections: gate/up 4096->14336, down 14336->4096, q/o 4096->4096.
LLAMA_KN = [(4096, 14336), (14336, 4096), (4096, 4096)]
FULL_SWEEP = (256, 512, 1024, 2048, 4096, 16384)
SKINNY_M = {"quick": (), "standard": (16, 128), "full": (16, 32, 64, 128, 256)}   # quick: one square per dtype
DEFAULT_SCALING = {"fp8": ("tensor", "row"), "fp4": ("mx",), "fp6": ("mx",)}
CHECK_ROWS = 64
# fp4 e2m1 code -> value (sign bit 3); all 16 codes are finite.
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def _case(m, n, k, dt, layout="nn", scaling=None) -> dict:
    p = {"m": m, "n": n, "k": k, "layout": layout, "dtype": dt}
    if scaling:
        p["scaling"] = scaling
    return p


def gemm_supports(dt: str, ctx: Context, scaling: str | None = None) -> tuple[bool, str]:
    if dt not in GEMM_DTYPES:
        return False, f"unknown dtype {dt}; known: {', '.join(GEMM_DTYPES)}"
    if dt in SCALED_DTYPES:
        ok, why = torch_has_scaled(dt)
        if not ok:
            return ok, why
    if ctx.device == "cpu":
        if dt == "tf32":
            return False, "TF32 is a GPU tensor-core mode; a CPU has no TF32 units"
        if dt == "int8":
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
    }

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        cpu = ctx.device == "cpu"
        n = (CPU_SIZES if cpu else SIZES)[suite]
        dtypes = ctx.options.get("dtypes") or GEMM_DTYPES
        out = []
        for dt in dtypes:
            size = n
            if cpu and (dt == "int8" or (dt in ("bf16", "fp16") and not cpu_half_ok(dt, ctx)[0])):
                size = CPU_SMALL
            if cpu and dt == "fp8":
                size = CPU_FP8
            for scaling in DEFAULT_SCALING.get(dt, (None,)):
                out.append(_case(size, size, size, dt, scaling=scaling))
        # Transposed operands and skinny shapes at the dtype LLMs run in (fp32 on a CPU).
        main = "fp32" if cpu else "bf16"
        if main in dtypes:
            if suite != "quick":
                out += [_case(n, n, n, main, layout) for layout in ("tn", "nt")]
            out += [_case(m, nn, k, main) for m in SKINNY_M[suite] for k, nn in LLAMA_KN]
            if suite == "full":  # how throughput grows with size
                out += [_case(d, d, d, main) for d in FULL_SWEEP if d != n]
        if not cpu and "fp8" in dtypes and suite != "quick":
            out += [_case(m, nn, k, "fp8", scaling="row") for m in SKINNY_M[suite] for k, nn in LLAMA_KN]
        return out

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        return gemm_supports(params["dtype"], ctx, params.get("scaling"))

    def prepare(self, params: dict, ctx: Context) -> Prepared:
        return prepare_gemm(params["m"], params["n"], params["k"], params["dtype"], ctx,
                            params.get("layout", "nn"), params.get("scaling"))


def _operand(rows: int, cols: int, transposed: bool, make):
    """A rows x cols operand; stored as its transpose (column-major) when `transposed`."""
    return make(cols, rows).t() if transposed else make(rows, cols)


def prepare_gemm(m: int, n: int, k: int, dt: str, ctx: Context, layout: str = "nn",
                 scaling: str | None = None) -> Prepared:
    import torch

    dev = ctx.device
    gen = torch.Generator(device=dev).manual_seed(0)   # generated where used: 8192^2 on a CPU takes seconds
    info: dict = {"layout": layout}
    if ctx.backend == "rocm":
        info["tunableop"] = bool(ctx.fingerprint.get("tunableop", False))
        if dt == "tf32":  # ROCm torch honours the TF32 (XF32) mode only with this set
            import os

            info["hipblaslt_allow_tf32"] = os.environ.get("HIPBLASLT_ALLOW_TF32", "unset")
    teardown = None

    if dt in FLOAT_DTYPES:
        tdt = torch_dtype(dt)

        def make(r, c):
            return torch.randn(r, c, generator=gen, device=dev, dtype=tdt)

        a = _operand(m, k, layout[0] == "t", make)
        b = _operand(k, n, layout[1] == "t", make)
        out = torch.empty(m, n, device=dev, dtype=tdt)
        if dev != "cpu":
            # TF32 is its own mode: fp32 runs at full precision, tf32 lets the tensor cores round.
            prev = torch.get_float32_matmul_precision()
            torch.set_float32_matmul_precision("high" if dt == "tf32" else "highest")

            def teardown():
                torch.set_float32_matmul_precision(prev)

        def fn():
            torch.mm(a, b, out=out)

        def reference(rows):
            return a[:rows].double() @ b.double()
    elif dt == "int8":
        def make(r, c):
            return torch.randint(-8, 8, (r, c), generator=gen, device=dev, dtype=torch.int8)

        a = _operand(m, k, False, make)
        b = _operand(k, n, True, make)   # int8 GEMMs want B column-major (TN)
        out = torch.empty(m, n, device=dev, dtype=torch.int32)
        info["layout"] = "nt"

        def fn():
            torch._int_mm(a, b, out=out)

        def reference(rows):  # exact in fp64: |sum| <= k * 64
            return a[:rows].double() @ b.double()
    elif dt == "fp8":
        fn, reference, out, extra = _fp8_gemm(m, n, k, scaling or "tensor", ctx, gen)
        info.update(extra)
    elif dt == "fp4":
        fn, reference, out, extra = _mxfp4_gemm(m, n, k, ctx, gen)
        info.update(extra)
    else:
        raise ValueError(f"no GEMM implementation for {dt}")

    def check():
        rows = min(m, CHECK_ROWS)
        fn()
        err = rel_error(out[:rows], reference(rows))
        tol = TOLERANCE[dt]
        return err <= tol, f"relative error {err:.2e} vs fp64 (tolerance {tol:.0e})"

    return Prepared(fn=fn, work={"flop": 2.0 * m * n * k}, peak=f"flop:{dt}", check=check, info=info,
                    teardown=teardown)


def _fp8_gemm(m, n, k, scaling, ctx, gen):
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

    def fn():
        torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16, out=out)

    def reference(rows):
        sa_rows = scale_a[:rows] if scaling == "row" else scale_a
        return (a[:rows].float().double() * sa_rows.double()) @ (b.float().double() * scale_b.double())

    return fn, reference, out, {"fp8_type": str(fdt).replace("torch.", ""), "scaling": scaling}


def _mxfp4_gemm(m, n, k, ctx, gen):
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

    def fn():  # F.scaled_mm has no out=; keep the latest output rather than copy it (a copy is timed)
        out.tensor = F.scaled_mm(a, b, sa, recipe, sb, recipe, swizzle, swizzle, output_dtype=torch.bfloat16)

    def reference(rows):
        return decode_e2m1(a_bytes[:rows]) @ decode_e2m1(b_bytes).t()

    return fn, reference, out, {"scaling": "mx", "fp4_type": "float4_e2m1fn_x2", "scale_type": "float8_e8m0fnu"}


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
    from gpuparity.runner import is_oom

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
