"""Dense matrix multiply C = A @ B at every dtype the device has: FLOP = 2*M*N*K.

`gemm`: fixed shapes (square, transposed operands, LLM-typical skinny shapes); `prepare_gemm`
prepares one shape, for this workload and for the shape search (workloads.gemm_search). The
operands of each dtype (int8, fp8 with per-tensor or row-wise scales, MXFP4) are made in
workloads.gemm_operands.

Operands: square shapes reuse one set ("warm"); skinny (decode-like) shapes rotate through copies
totalling > 2x the last-level cache ("rotate", measure.operands), so a large cache cannot hold a
weight that a real decode step streams from memory; `operands=warm|rotate` sets either.
Correctness: the whole output of every operand set, poisoned first, against fp64 by Freivalds'
check (measure.gates); scaled dtypes against the reference of their quantised inputs. TF32 must
prove it ran: its error must exceed fp32's, else the case is skipped with the reason.
"""
from __future__ import annotations

import os
from typing import Callable

from gpuparity.measure.gates import GateSkip, freivalds, freivalds_gate, rows_of
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
    scaled_runs,
    torch_has_scaled,
)
from gpuparity.workloads.gemm_operands import OperandSet, float_set, fp8_set, int8_set, mx_recipe, mxfp4_set

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


def _case(m, n, k, dt, layout="nn", scaling=None, operands=None, fast_accum=None) -> dict:
    p = {"m": m, "n": n, "k": k, "layout": layout, "dtype": dt}
    if scaling:
        p["scaling"] = scaling
    if fast_accum is not None:
        p["fast_accum"] = fast_accum
    if operands:
        p["operands"] = operands
    return p


def gemm_supports(dt: str, ctx: Context, scaling: str | None = None, fast_accum: bool = False) -> tuple[bool, str]:
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
        if dt == "fp8" and not ctx.planned:
            return scaled_runs(dt, ctx, scaling, fast_accum)
        return True, ""
    if dt in ("fp4", "fp6") and scaling not in (None, "mx"):
        return False, f"{dt} supports only mx scaling"
    ok, why = gpu_has_units(dt, ctx)
    if ok and dt in SCALED_DTYPES and not ctx.planned:     # the version floor, then a tiny call on the device
        return scaled_runs(dt, ctx, scaling, fast_accum)
    return ok, why


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
        fast = bool(params.get("fast_accum"))
        ok, why = gemm_supports(params["dtype"], ctx, params.get("scaling"), fast and ctx.backend == "cuda")
        if ok and fast and ctx.backend != "cuda":
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
            return float_set(m, n, k, dt, layout, dev, gen)
    elif dt == "int8":
        info["layout"] = "nt"   # int8 GEMMs want B column-major (TN)

        def make_set():
            return int8_set(m, n, k, dev, gen)
    elif dt == "fp8":
        scaling = scaling or "tensor"
        info.update(fp8_type=fp8_dtype_name(ctx), scaling=scaling, use_fast_accum=fast_accum)

        def make_set():
            return fp8_set(m, n, k, scaling, ctx, gen, fast_accum)
    elif dt == "fp4":
        info.update(scaling="mx", fp4_type="float4_e2m1fn_x2", scale_type="float8_e8m0fnu",
                    mx_recipe=mx_recipe(ctx))

        def make_set():
            return mxfp4_set(m, n, k, ctx, gen)
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


WORKLOADS = [Gemm()]
