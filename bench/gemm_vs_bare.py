"""gpuparity's max-achievable GEMM against a bare torch.mm loop at the same best shape, same run.

The search (gemm_search) picks the best shape and measures it through gpuparity's loop; then a
bare loop (torch.mm into a preallocated output, timed with CUDA events or perf_counter, median of
blocks) runs twice at that shape; their mean is the peer. The last line is the ratio
gpuparity / bare (target >= 0.99 on a GPU). Runs on a CPU at fp32.

    python bench/gemm_vs_bare.py [--dtype bf16] [--budget 30]
"""

from __future__ import annotations

import argparse
import statistics
import time


def bare_tflops(m: int, n: int, k: int, dtype, device: str, seconds: float) -> float:
    import torch

    a = torch.randn(m, k, device=device, dtype=dtype)
    b = torch.randn(k, n, device=device, dtype=dtype)
    out = torch.empty(m, n, device=device, dtype=dtype)
    gpu = device != "cpu"

    def sync():
        if gpu:
            torch.cuda.synchronize()

    for _ in range(3):
        torch.mm(a, b, out=out)
    sync()
    t0 = time.perf_counter()
    torch.mm(a, b, out=out)
    sync()
    reps = max(1, int(0.1 / max(time.perf_counter() - t0, 1e-6)))   # ~0.1 s blocks
    blocks = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(blocks) < 5:
        if gpu:
            start_ev, end_ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start_ev.record()
            for _ in range(reps):
                torch.mm(a, b, out=out)
            end_ev.record()
            end_ev.synchronize()
            blocks.append(start_ev.elapsed_time(end_ev) / 1e3 / reps)
        else:
            t0 = time.perf_counter()
            for _ in range(reps):
                torch.mm(a, b, out=out)
            blocks.append((time.perf_counter() - t0) / reps)
    return 2.0 * m * n * k / statistics.median(blocks) / 1e12


def main() -> None:
    from gpuparity.execute.runner import build_context, run_case
    from gpuparity.platform.detect import fingerprint, torch_device
    from gpuparity.workloads.dtypes import torch_dtype
    from gpuparity.workloads.gemm_search import GemmSearch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default=None, help="bf16 on a GPU, fp32 on a CPU by default")
    ap.add_argument("--budget", type=float, default=None, help="search budget in seconds (30 GPU / 3 CPU)")
    ap.add_argument("--bare-seconds", type=float, default=None, help="time for each bare measurement")
    args = ap.parse_args()

    gpu = torch_device(fingerprint()) != "cpu"
    dt = args.dtype or ("bf16" if gpu else "fp32")
    budget = args.budget if args.budget is not None else (30.0 if gpu else 3.0)
    suite = "standard" if gpu else "quick"
    ctx = build_context(suite, {"dtypes": [dt], "budget_s": budget})
    print(f"device: {ctx.fingerprint.get('product')} ({ctx.backend}); dtype {dt}; search budget {budget:.0f} s")

    w = GemmSearch()
    [params] = w.cases(suite, ctx)
    result = run_case(w, params, ctx)
    if result["status"] != "ok":
        raise SystemExit(f"gemm_search {result['status']}: {result['reason']}")
    best = result["info"]["best_shape"]
    m, n, k = best["m"], best["n"], best["k"]
    ours = result["derived"]["tflops"]
    seconds = args.bare_seconds or (3.0 if gpu else 1.5)
    tdt = torch_dtype(dt)
    bare = statistics.mean(bare_tflops(m, n, k, tdt, ctx.device, seconds) for _ in range(2))
    peak = result["derived"].get("pct_peak")
    print(f"best shape m={m} n={n} k={k} after {result['info']['search']['shapes_tried']} shapes")
    print(f"gpuparity gemm_search: {ours:.4g} TFLOP/s" + (f" ({peak:.1f}% of spec)" if peak else ""))
    print(f"bare torch.mm loop:    {bare:.4g} TFLOP/s (mean of two runs)")
    print(f"ratio gpuparity/bare: {ours / bare:.3f}")


if __name__ == "__main__":
    main()
