"""Runs workloads into a run document: progress, failures recorded, Ctrl-C keeps what finished."""

from __future__ import annotations

import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from gpuparity.errors import Terminated
from gpuparity.results.schema import mark, new_result, new_run, now_iso

OOM_MARKERS = ("out of memory", "CUDA out of memory", "HIP out of memory", "DefaultCPUAllocator: can't allocate")


@contextmanager
def sigterm_stops_the_run() -> Iterator[None]:
    """While the block runs, SIGTERM raises Terminated in the main thread (unless it is ignored)."""
    def terminate(signum, frame):
        raise Terminated()

    usable = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, terminate) if usable and signal.getsignal(signal.SIGTERM) != signal.SIG_IGN \
        else None
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


def is_oom(exc: BaseException) -> bool:
    name = type(exc).__name__
    return name == "OutOfMemoryError" or isinstance(exc, MemoryError) or any(
        m in str(exc) for m in OOM_MARKERS)


def run_case(workload, params: dict, ctx) -> dict:
    """One case, with every failure turned into a recorded status instead of an exception."""
    try:
        result = workload.execute(params, ctx)
        tele = result.get("telemetry") or {}
        if ctx.options.get("power_required") and result["status"] == "ok" and not tele.get("valid"):
            why = "; ".join(tele.get("reasons") or []) or tele.get("energy") or "no telemetry for this result"
            mark(result, "failed", f"power required: {why}")
        return result
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a workload must never end the run
        result = new_result(workload.name, workload.category, params, params.get("dtype"))
        msg = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        if is_oom(exc):
            _free_device_memory(ctx)
            return mark(result, "skipped", f"out of memory at {params}: {msg}")
        return mark(result, "failed", f"{type(exc).__name__}: {msg}")


def _free_device_memory(ctx) -> None:
    if ctx.device != "cpu":
        import gc

        import torch

        gc.collect()
        torch.cuda.empty_cache()


def plan(names: list[str], suite: str, ctx) -> list[tuple]:
    """(workload, params) pairs in order, each once: a run holds one result per key, so a workload
    named twice (or a case listed twice) is measured once."""
    from gpuparity.results.schema import canonical
    from gpuparity.workloads.base import get

    pairs, seen = [], set()
    for name in names:
        w = get(name)
        for params in w.cases(suite, ctx):
            ident = canonical([w.name, params])
            if ident not in seen:
                seen.add(ident)
                pairs.append((w, params))
    return pairs


def execute_plan(pairs: list[tuple], ctx, doc: dict,
                 on_result: Callable[[dict], None] | None = None,
                 on_start: Callable[[object, dict], None] | None = None) -> dict:
    """Fill doc['results']; on Ctrl-C stop, mark the run interrupted, keep finished results."""
    doc["status"] = "running"
    t0 = time.time()
    try:
        for workload, params in pairs:
            if on_start:
                on_start(workload, params)
            result = run_case(workload, params, ctx)
            doc["results"].append(result)
            if on_result:
                on_result(result)
        doc["status"] = "complete"
    except KeyboardInterrupt as exc:
        doc["status"] = "interrupted"
        doc["interrupted_by"] = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
        print(f"\ninterrupted ({doc['interrupted_by']}): keeping the results that finished", file=sys.stderr)
    doc["finished_at"] = now_iso()
    doc["duration_s"] = round(time.time() - t0, 3)
    return doc


def build_context(suite: str, options: dict, profile_dir: str | None = None):
    from gpuparity.measure.loop import LoopConfig
    from gpuparity.measure.telemetry import open_sampler
    from gpuparity.platform.detect import fingerprint, torch_device
    from gpuparity.workloads.base import Context

    fp = fingerprint()
    device = torch_device(fp)
    sampler = open_sampler(fp)
    fp = dict(fp, telemetry=sampler.describe())
    from gpuparity import dist

    if dist.is_distributed():  # torchrun job: its shape and this node's GPU links
        fp["distributed"] = dict(dist.describe(), topology=dist.topology(fp.get("backend", "cpu")))
    loop = LoopConfig.for_suite(suite, device)
    if options.get("power_required"):  # timed windows long enough for a valid power trace (~20 samples)
        loop.min_time_s = max(loop.min_time_s, 1.0)
    return Context(fingerprint=fp, device=device, suite=suite, loop=loop,
                   telemetry=sampler, profile_dir=profile_dir, options=options)


def start_run(ctx, argv: list[str]) -> dict:
    doc = new_run(ctx.fingerprint, argv)
    doc["suite"] = ctx.suite
    return doc
