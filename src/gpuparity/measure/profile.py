"""Where the time went: a torch.profiler trace per result and its top kernels.

`gpuparity run --profile DIR` runs each workload's invocation a few more times under
torch.profiler after the measurement (so the profiler never distorts the measured samples),
writes a Chrome/Perfetto JSON trace to DIR, and stores the top kernels by total time in
result["info"]["top_kernels"]. On a GPU (CUDA and ROCm alike: torch names both CUDA
activity) the device kernels are ranked; on a CPU, the operators by self CPU time.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable

PROFILED_CALLS = 3
TOP_N = 10


def trace_path(result: dict, directory: str) -> str:
    params = "-".join(f"{v}" for v in result["params"].values())
    stem = re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{result['workload']}-{params}")[:120]
    return os.path.join(directory, f"{stem}-{result['key']}.json")


def profile_result(result: dict, fn: Callable[[], Any], ctx) -> None:
    """Profile `fn`, write the trace, and record the top kernels (never fails the result)."""
    try:
        top, path = profile_fn(fn, ctx.device, ctx.profile_dir, trace_path(result, ctx.profile_dir))
        result["info"]["top_kernels"] = top
        result["info"]["trace"] = path
    except Exception as exc:  # noqa: BLE001 - a profiler problem must not cost the measurement
        result["info"]["profile_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"


def profile_fn(fn: Callable[[], Any], device: str, directory: str, path: str,
               calls: int = PROFILED_CALLS) -> tuple[list[dict], str]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    gpu = device != "cpu"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    os.makedirs(directory, exist_ok=True)
    fn()  # warm: the trace shows steady state, not first-call setup
    if gpu:
        torch.cuda.synchronize()
    with profile(activities=activities) as prof:
        for _ in range(calls):
            fn()
        if gpu:
            torch.cuda.synchronize()
    prof.export_chrome_trace(path)
    return top_kernels(prof.key_averages(), gpu, calls), path


def top_kernels(averages, gpu: bool, calls: int, n: int = TOP_N) -> list[dict]:
    """Rank events by self time on the device (GPU) or the CPU; times per profiled call."""
    def self_us(e) -> float:
        if gpu:
            return float(getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0) or 0)
        return float(e.self_cpu_time_total or 0)

    events = [e for e in averages if self_us(e) > 0]
    if gpu:  # device rows only (kernels, memcpy, memset), not the CPU-side operators that launch them
        events = [e for e in events if "CUDA" in str(getattr(e, "device_type", ""))] or events
    total = sum(self_us(e) for e in events) or 1.0
    ranked = sorted(events, key=self_us, reverse=True)[:n]
    return [{"name": e.key[:200], "calls": int(e.count) // calls or int(e.count),
             "time_us_per_call": round(self_us(e) / calls, 3), "share": round(self_us(e) / total, 4)}
            for e in ranked]
