"""`gemm_search`: max-achievable TFLOP/s, mamf-finder style: sweep shapes within a time budget,
then measure the best shape with the full loop (re-measuring removes the winner's-curse bias
of picking the maximum of noisy quick timings).
"""

from __future__ import annotations

import random
import sys
import time

from gpuparity.workloads.base import Context, Prepared, Workload
from gpuparity.workloads.gemm import gemm_supports, prepare_gemm

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



WORKLOADS = [GemmSearch()]
