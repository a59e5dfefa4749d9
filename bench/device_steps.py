"""The steps of bench/device_check.py, one per GPU path; each runs in its own process:

    python bench/device_steps.py STEP --out DIR [--full]

and prints its rows as one JSON line ("ROWS [...]") last: {"row", "figure", "target", "verdict"
(PASS | FAIL | SKIP), "reason"}. A step that needs a GPU says SKIP with the reason where there is
none. A rehearsal (DEVICE_CHECK_REHEARSE=1, set by device_check.py --rehearse where torch sees no
GPU) runs every step's own code on the CPU at small sizes instead, so that a step that would crash
is found before a borrowed GPU's minutes are spent on it: a step that ran says SKIP with what it
measured (a CPU's figures judge nothing), one that crashed or could not run its path says FAIL. STEPS holds each step's time cap and, where it measures through gpuparity's loop, the cases
it plans, so that the project's own planner can check a step fits its cap (tests/test_device_check.py).
Sizes are small on purpose: one borrowed H100 or H200 runs every step in about five minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
REHEARSAL = os.environ.get("DEVICE_CHECK_REHEARSE") == "1"
DEV = "cpu" if REHEARSAL else "cuda"       # where the steps put their tensors


def size(gpu, cpu):
    """A step's size on the GPU, or the small one a CPU rehearsal runs the same code at."""
    return cpu if REHEARSAL else gpu


def gpu_count() -> int:
    """The GPUs here (a rehearsal stands in one)."""
    import torch

    return 1 if REHEARSAL else torch.cuda.device_count()


@dataclass
class Step:
    name: str
    cap_s: float                       # this step's own timeout
    full_only: bool = False
    planned: Callable | None = None    # ctx -> [(workload, params)] measured with the quick loop
    extra_s: float = 0.0               # what the planner does not count (a process start, a model build)
    run: Callable | None = field(default=None, repr=False)


def row(name: str, figure: str, target: str, verdict: str, reason: str | None = None) -> dict:
    return {"row": name, "figure": figure, "target": target, "verdict": verdict, "reason": reason}


def skip(name: str, target: str, reason: str) -> list[dict]:
    return [row(name, "-", target, "SKIP", reason)]


def gpu_or_reason() -> str | None:
    """None where torch sees a GPU, else why not (a GPU-only step then skips). The check's own
    probe, made once before the steps, is passed in DEVICE_CHECK_NO_GPU ("" where there is one)."""
    said = os.environ.get("DEVICE_CHECK_NO_GPU")
    if said is not None:
        return said or None
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - no torch at all
        return f"torch not importable: {type(exc).__name__}: {exc}"
    if not torch.cuda.is_available():
        return f"no GPU: torch {torch.__version__} sees none"
    return None


def context(suite: str = "quick", **kw):
    from gpuparity.execute.runner import build_context

    return build_context(suite, {}, **kw)


def quick(ctx):
    from gpuparity.measure.loop import LoopConfig

    return replace(ctx, loop=LoopConfig.for_suite("quick", ctx.device))


def run_cases(ctx, cases) -> list[dict]:
    from gpuparity.execute.runner import run_case
    from gpuparity.workloads.base import get

    out = []
    for name, params in cases:
        r = run_case(get(name), params, ctx)
        info = r.get("info") or {}
        print(f"   {name} {params}: {r['status']} {r.get('reason') or ''} method={info.get('method')}", flush=True)
        out.append(r)
    return out


def value(result: dict, key: str = "tflops") -> float:
    return (result.get("derived") or {}).get(key) or float("nan")


def verdict_of(results: list[dict]) -> tuple[str, str | None]:
    """PASS when every result is ok; SKIP (with the first reason) when all were skipped; else FAIL."""
    if all(r["status"] == "ok" for r in results):
        return "PASS", None
    bad = [r for r in results if r["status"] != "ok"]
    if all(r["status"] == "skipped" for r in bad) and len(bad) == len(results):
        return "SKIP", bad[0].get("reason")
    return "FAIL", "; ".join(f"{r['workload']} {r['status']}: {str(r.get('reason'))[:120]}" for r in bad)


def cli(args: list[str], out_json: str, timeout: float) -> tuple[dict | None, str]:
    """`python -m gpuparity ARGS -f json -o OUT` with the interpreter this step was given."""
    cmd = [sys.executable, "-m", "gpuparity", *args, "--no-store", "-f", "json", "-o", out_json]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    tail = (p.stderr or p.stdout)[-400:].strip()
    if not os.path.exists(out_json):
        return None, f"exit {p.returncode}: {tail}"
    with open(out_json) as fh:
        return json.load(fh), tail


# -- the steps ------------------------------------------------------------------------------
GEMM_1K = {"m": 1024, "n": 1024, "k": 1024, "layout": "nn", "dtype": "bf16"}


def event_timing(args) -> list[dict]:
    """Device events against the host's clock around one synchronised burst of GEMMs."""
    import torch

    from gpuparity.measure.clocks import clock_for

    n = size(4096, 256)
    a = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    clock = clock_for(DEV)
    for _ in range(20):
        a @ b
    clock.sync()
    ratios = []
    for _ in range(5):
        t0 = time.perf_counter()
        s = clock.marker()
        for _ in range(size(200, 20)):
            a @ b
        e = clock.marker()
        clock.sync()
        wall = time.perf_counter() - t0
        ratios.append(clock.elapsed(s, e) / wall)
    best = max(ratios)
    return [row("event timing", f"events / host wall over ~{wall * 1e3:.0f} ms bursts: {best:.4f} (of 5: "
                f"{min(ratios):.4f}..{best:.4f})", "0.97..1.0", "PASS" if 0.97 <= best <= 1.0 + 1e-3 else "FAIL")]


def _graph_cases(ctx):
    return [("gemm", GEMM_1K)] * 3


def graphs(args) -> list[dict]:
    import torch
    from gemm_vs_bare import bare_tflops

    ctx = quick(context())
    figures = {}
    for method in ("graph", "queue", "auto"):
        sub = replace(ctx, loop=replace(ctx.loop, method=method))
        (r,) = run_cases(sub, [("gemm", GEMM_1K)])
        figures[method] = (value(r), (r.get("info") or {}).get("method"), r["status"])
    bare = bare_tflops(1024, 1024, 1024, torch.bfloat16, ctx.device, 1.0)
    g, q, a = figures["graph"], figures["queue"], figures["auto"]
    ok = g[2] == q[2] == "ok" and g[0] >= 0.98 * q[0]
    return [row("graphs", f"bf16 1024^3: graph {g[0]:.4g}, queue {q[0]:.4g}, bare eager {bare:.4g} TFLOP/s; auto chose "
                f"{a[1]}", "graph >= queue", "PASS" if ok else "FAIL")]


def _rotation_cases(ctx):
    return [("gemm", {"m": 16, "n": 14336, "k": 4096, "layout": "nn", "dtype": "bf16", "operands": op})
            for op in ("warm", "rotate")]


def rotation(args) -> list[dict]:
    ctx = quick(context())
    w, r = run_cases(ctx, _rotation_cases(ctx))
    copies = ((r.get("info") or {}).get("operands") or {}).get("copies")
    ok = w["status"] == r["status"] == "ok" and value(r) <= value(w) * 1.02 and (copies or 0) > 1
    return [row("rotation", f"M=16 K=4096 N=14336: warm {value(w):.4g}, rotated x{copies} {value(r):.4g} TFLOP/s",
                "rotated <= warm", "PASS" if ok else "FAIL")]


def _copy_cases(ctx):
    from gpuparity.workloads.memory import array_elems

    n = array_elems(ctx, "standard")
    return [("memory", {"op": op, "elements": n, "dtype": "fp32"}) for op in ("copy", "h2d", "d2h")]


def copies(args) -> list[dict]:
    ctx = quick(context())
    out = []
    for r in run_cases(ctx, _copy_cases(ctx)):
        op = r["params"]["op"]
        pct = value(r, "pct_peak")
        target = 85 if op == "copy" else 60
        v = "PASS" if r["status"] == "ok" and pct >= target else "SKIP" if r["status"] == "skipped" else "FAIL"
        peak = ((r.get("derived") or {}).get("peak") or {}).get("value")
        out.append(row(f"copy {op}", f"{value(r, 'gbs'):.0f} GB/s = {pct:.1f}% of {peak} GB/s", f">= {target}% of spec",
                       v, r.get("reason")))
    return out


def cache_flush(args) -> list[dict]:
    """A read that fits in the last-level cache, warm and with the cache flushed before each sample:
    the flush must make it slower (it reaches memory)."""
    import torch

    from gpuparity.measure.loop import LoopConfig, measure
    from gpuparity.workloads.base import flush_bytes

    ctx = context()
    llc = ((ctx.fingerprint.get("devices") or [{}])[0]).get("llc_bytes") or 2**25
    x = torch.randn(max(2**20, llc // 2) // 4, device=DEV)      # half the LLC: warm, it stays there
    cfg = LoopConfig.for_suite("quick", DEV)
    warm = measure(lambda: x.sum(), DEV, cfg)
    cold = measure(lambda: x.sum(), DEV, replace(cfg, cold=True, flush_bytes=flush_bytes(ctx)))
    tw, tc = warm.summary["median"], cold.summary["median"]
    return [row("cache flush", f"{x.numel() * 4 / 2**20:.0f} MiB read (LLC {llc / 2**20:.0f} MiB): warm "
                f"{tw * 1e6:.1f} us, flushed {tc * 1e6:.1f} us = {tc / tw:.2f}x", "flushed > 1.1x warm",
                "PASS" if tc > 1.1 * tw else "FAIL")]


def energy(args) -> list[dict]:
    from power_check import power_run

    _, r = power_run(size(5.0, 1.0))
    t = r.get("telemetry") or {}
    agree = t.get("counter_agreement")
    if agree is None:
        return skip("energy", "within 5%", f"no counter to compare ({t.get('method')}: {t.get('energy') or t.get('reasons')})")
    return [row("energy", f"integrated {t['energy_j']:.1f} J vs counter {t['energy_counter_j']:.1f} J = "
                f"{100 * agree:+.2f}% over {t['busy_s']:.2f} s busy, {t['mean_power_w']:.0f} W", "within 5%",
                "PASS" if abs(agree) <= 0.05 and t.get("valid") else "FAIL")]


def throttle(args) -> list[dict]:
    from gpuparity.measure.throttle import DRIVER_SOURCES

    ctx = context()
    tele = ctx.fingerprint.get("telemetry") or {}
    sources = tele.get("throttle_sources") or []
    snap = ctx.telemetry.snapshot() if ctx.telemetry is not None else None
    state = (snap or [{}])[0]
    ok = bool(sources) and sources[0] in DRIVER_SOURCES
    return [row("throttle reading", f"{tele.get('method')}: source {sources[0] if sources else None}; now SM "
                f"{state.get('sm_mhz')} MHz, reasons {state.get('throttle_reasons') or []}; mapped by "
                f"{(tele.get('mapped_by') or [None])[0]}", "a driver source", "PASS" if ok else "FAIL",
                None if ok else tele.get("reason"))]


def _fp8_cases(ctx):
    fast = (False, True) if ctx.backend == "cuda" else (False,)
    m = size(2048, 256)
    return [("gemm", {"m": m, "n": m, "k": m, "layout": "nn", "dtype": "fp8", "scaling": s, "fast_accum": f})
            for s in ("tensor", "row") for f in fast]


def fp8(args) -> list[dict]:
    ctx = quick(context())
    out = []
    for r in run_cases(ctx, _fp8_cases(ctx)):
        p = r["params"]
        v, why = verdict_of([r])
        out.append(row(f"fp8 {p['scaling']}{' fast' if p.get('fast_accum') else ''}",
                       f"{value(r):.4g} TFLOP/s = {value(r, 'pct_peak'):.1f}% of spec; {(r.get('info') or {}).get('check', '')}"[:160],
                       "ok, gate passes", v, why))
    return out


def mxfp4(args) -> list[dict]:
    from gpuparity.models.scaled_mm import mxfp4_recipe
    from gpuparity.workloads.base import get

    ctx = quick(context())
    recipe, why = mxfp4_recipe(ctx.device, ctx.backend)
    params = {"m": 4096, "n": 4096, "k": 4096, "layout": "nn", "dtype": "fp4", "scaling": "mx"}
    ok, reason = get("gemm").supports(params, ctx)
    if not ok:
        return skip("mxfp4 probe", "runs where the part has MX units", f"{reason} (probe: {recipe or why})"[:300])
    (r,) = run_cases(ctx, [("gemm", params)])
    v, bad = verdict_of([r])
    return [row("mxfp4 probe", f"recipe {recipe}; {value(r):.4g} TFLOP/s", "ok, gate passes", v, bad)]


def _tf32_cases(ctx):
    return [("gemm", {"m": 2048, "n": 2048, "k": 2048, "layout": "nn", "dtype": "tf32"})]


def tf32(args) -> list[dict]:
    ctx = quick(context())
    (r,) = run_cases(ctx, _tf32_cases(ctx))
    check = str((r.get("info") or {}).get("check") or "")
    v, why = verdict_of([r])
    if v == "PASS" and "TF32 engaged" not in check:
        v, why = "FAIL", f"no TF32 proof in the gate's detail: {check[:120]}"
    return [row("tf32 proof", f"{value(r):.4g} TFLOP/s; {check[-80:]}", "TF32 engaged", v, why)]


def _first_cases(name: str, count: int = 2):
    def planned(ctx):
        from gpuparity.workloads.base import get

        return [(name, c) for c in get(name).cases("quick", ctx)[:count]]
    return planned


def _kernel_step(name: str):
    def step(args) -> list[dict]:
        ctx = quick(context())
        results = run_cases(ctx, _first_cases(name)(ctx))
        v, why = verdict_of(results)
        figs = ", ".join(f"{value(r):.4g}" for r in results)
        return [row(name, f"{figs} TFLOP/s ({', '.join(str((r.get('info') or {}).get('method')) for r in results)})",
                    "ok", v, why)]
    return step


def _profile_cases(ctx):
    return [("gemm", GEMM_1K)]


def profiler(args) -> list[dict]:
    trace_dir = os.path.join(args.out, "trace")
    ctx = replace(quick(context()), profile_dir=trace_dir)
    (r,) = run_cases(ctx, _profile_cases(ctx))
    info = r.get("info") or {}
    path, top = info.get("trace"), info.get("top_kernels") or []
    ok = r["status"] == "ok" and path and os.path.exists(path) and top
    size = os.path.getsize(path) / 1e3 if path and os.path.exists(path) else 0
    return [row("profiler trace", f"{size:.0f} kB trace; top kernel {(top or [{}])[0].get('name', '-')[:60]}",
                "a trace with kernels", "PASS" if ok else "FAIL", info.get("profile_error") or r.get("reason"))]


def llm_decode(args) -> list[dict]:
    model = size("synthetic:llama-3.1-8b", "synthetic:tiny-llama")
    doc, tail = cli(["run", "llm", "--set", f"model={model}", "--set", "layers=4", "--set", "batch=1",
                     "--set", "input_len=128", "--set", "output_len=32", "--dtype", "bf16", "--trials", "1"],
                    os.path.join(args.out, "llm.json"), timeout=150)
    if doc is None:
        return [row("llm decode", "-", "ok", "FAIL", tail)]
    r = doc["results"][0]
    d = r.get("derived") or {}
    v, why = verdict_of([r])
    return [row("llm decode", f"4-layer {model.split(':')[1]} shapes: decode {d.get('decode_tokens_per_s', float('nan')):.1f} "
                f"tok/s, TTFT {1e3 * (d.get('ttft_s') or float('nan')):.1f} ms", "ok", v, why)]


def training(args) -> list[dict]:
    doc, tail = cli(["run", "training", "--suite", "quick", "--trials", "1"], os.path.join(args.out, "training.json"),
                    timeout=150)
    if doc is None:
        return [row("training step", "-", "ok", "FAIL", tail)]
    results = doc["results"]
    v, why = verdict_of(results)
    d = (results[0].get("derived") or {}) if results else {}
    return [row("training step", f"{d.get('tokens_per_s', float('nan')):.0f} tok/s, MFU "
                f"{100 * (d.get('mfu') or float('nan')):.1f}%", "ok", v, why)]


def collectives(args) -> list[dict]:
    n = size(None, 2) or gpu_count()          # a rehearsal: two CPU ranks on gloo
    out = os.path.join(args.out, "collectives.json")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n), "-m", "gpuparity",
           "run", "collectives", "--suite", "comm", "--set", "ops=all_reduce", "--set", "min_bytes=64K",
           "--set", "max_bytes=64M",
           "--no-store", "-f", "json", "-o", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=150, cwd=ROOT)
    if not os.path.exists(out):
        return [row("collectives", "-", "torchrun job ok", "FAIL", f"exit {p.returncode}: {(p.stderr or '')[-300:]}")]
    results = json.load(open(out))["results"]
    v, why = verdict_of(results)
    if n == 1:
        return skip("collectives", "torchrun job ok", f"one GPU (world size 1): torchrun ran and stored the job; "
                    f"{(results[0].get('reason') if results else '')}")
    big = max((r for r in results if r["status"] == "ok"), key=lambda r: r["params"]["bytes"], default=None)
    fig = f"world {n}: busbw {value(big, 'gbs'):.0f} GB/s at {big['params']['bytes'] >> 20} MiB" if big else "-"
    return [row("collectives", fig, "torchrun job ok", v, why)]


def serving(args) -> list[dict]:
    """The demo server on the GPU (a synthetic tiny model: nothing to download), then the serving
    workload against it as a user would run it, with gpus=."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "gpuparity.demo.serving_server", "--model", "synthetic:tiny-llama",
                               "--device", DEV, "--port", str(port)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = server.stdout.readline()
        if not line.startswith("serving"):
            return [row("serving gpus=", "-", "ok", "FAIL", f"server did not start: {line!r}")]
        n = gpu_count()
        doc, tail = cli(["run", "serving", "--set", f"url=http://127.0.0.1:{port}/v1", "--set", f"gpus={n}",
                         "--set", "concurrency=1,4", "--set", "num_prompts=8", "--set", "input_len=64",
                         "--set", "output_len=32", "--set", "tokenizer=none", "--set", "warmup=1"],
                        os.path.join(args.out, "serving.json"), timeout=120)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    if doc is None:
        return [row("serving gpus=", "-", "ok", "FAIL", tail)]
    results = doc["results"]
    v, why = verdict_of(results)
    r = results[-1] if results else {}
    t = r.get("telemetry") or {}
    return [row("serving gpus=", f"{(r.get('metric') or {}).get('value', float('nan')):.1f} "
                f"{(r.get('metric') or {}).get('unit', '')}; power {t.get('mean_power_w')} W ({t.get('method')})",
                "ok", v, why)]


def contention(args) -> list[dict]:
    """A run beside another process that keeps the GPU busy must be graded contended."""
    hog = subprocess.Popen([sys.executable, "-c", "import torch, time\n"
                            f"a = torch.randn({size(8192, 512)}, {size(8192, 512)}, device='{DEV}', "
                            "dtype=torch.bfloat16)\n"
                            "t = time.time()\nprint('busy', flush=True)\n"
                            "while time.time() - t < 40:\n    a @ a\n"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        hog.stdout.readline()
        m = size(2048, 256)
        doc, tail = cli(["run", "gemm", "--set", f"m={m}", "--set", f"n={m}", "--set", f"k={m}", "--dtype", "bf16",
                         "--trials", "1"], os.path.join(args.out, "contention.json"), timeout=60)
    finally:
        hog.kill()
        hog.wait()
    if doc is None:
        return [row("contention grading", "-", "contended", "FAIL", tail)]
    found = (doc.get("machine") or {}).get("contention") or {}
    ok = bool(found.get("contended"))
    return [row("contention grading", f"contended={found.get('contended')}: {'; '.join(found.get('reasons') or [])[:140]}",
                "contended", "PASS" if ok else "FAIL")]


def bare(args) -> list[dict]:
    import statistics

    import torch
    from gemm_vs_bare import bare_tflops

    ctx = context("standard")
    (r,) = run_cases(ctx, [("gemm_search", {"budget_s": 20.0, "dtype": "bf16"})])
    if r["status"] != "ok":
        return [row("bare", "-", ">= 0.99", "FAIL", r.get("reason"))]
    best = r["info"]["best_shape"]
    m, n, k = best["m"], best["n"], best["k"]
    b = statistics.mean(bare_tflops(m, n, k, torch.bfloat16, ctx.device, 3.0) for _ in range(2))
    ratio = value(r) / b
    return [row("bare", f"bf16 {m}x{n}x{k}: {value(r):.4g} vs bare {b:.4g} TFLOP/s = {ratio:.3f}", ">= 0.99",
                "PASS" if ratio >= 0.99 else "FAIL")]


KERNEL_SUITE = ["gemm", "memory", "attention", "moe", "conv"]


def kernel_suite(args) -> list[dict]:
    doc, tail = cli(["run", *KERNEL_SUITE, "--suite", "quick", "--trials", "1"], os.path.join(args.out, "kernels.json"),
                    timeout=STEP["kernel suite"].cap_s - 10)
    if doc is None:
        return [row("kernel suite", "-", "no failed case", "FAIL", tail)]
    results = doc["results"]
    failed = [r for r in results if r["status"] == "failed"]
    fig = f"{sum(r['status'] == 'ok' for r in results)} ok, {sum(r['status'] == 'skipped' for r in results)} skipped"
    return [row("kernel suite", fig, "no failed case", "FAIL" if failed else "PASS",
                "; ".join(f"{r['workload']}: {str(r.get('reason'))[:80]}" for r in failed[:3]) or None)]


def _kernel_suite_cases(ctx):
    from gpuparity.execute.plan import cases_for

    return [(c.workload.name, c.params) for c in cases_for(KERNEL_SUITE, "quick", ctx) if not c.skip]


# extra_s: what a step spends beside the cases the planner counts (its process start, context,
# model build, a server or torchrun start), as seen on an H100; tests/test_device_check.py holds
# the planner's figures plus these within each cap and the whole within the check's budget.
STEPS = [
    Step("event timing", 30, run=event_timing, extra_s=6),
    Step("graphs", 45, planned=_graph_cases, extra_s=6, run=graphs),
    Step("rotation", 40, planned=_rotation_cases, extra_s=5, run=rotation),
    Step("copy", 40, planned=_copy_cases, extra_s=5, run=copies),
    Step("cache flush", 30, extra_s=8, run=cache_flush),
    Step("energy", 40, extra_s=14, run=energy),
    Step("throttle reading", 25, extra_s=5, run=throttle),
    Step("fp8", 45, planned=_fp8_cases, extra_s=5, run=fp8),
    Step("mxfp4 probe", 40, extra_s=6, run=mxfp4),
    Step("tf32 proof", 30, planned=_tf32_cases, extra_s=5, run=tf32),
    Step("moe", 40, planned=_first_cases("moe"), extra_s=5, run=_kernel_step("moe")),
    Step("attention", 40, planned=_first_cases("attention"), extra_s=5, run=_kernel_step("attention")),
    Step("conv", 40, planned=_first_cases("conv"), extra_s=5, run=_kernel_step("conv")),
    Step("profiler trace", 35, planned=_profile_cases, extra_s=8, run=profiler),
    Step("llm decode", 90, extra_s=35, run=llm_decode),
    Step("training step", 90, extra_s=40, run=training),
    Step("collectives", 90, extra_s=25, run=collectives),
    Step("serving gpus=", 90, extra_s=25, run=serving),
    Step("contention grading", 60, extra_s=25, run=contention),
    Step("bare", 80, full_only=True, extra_s=35, run=bare),
    Step("kernel suite", 170, full_only=True, planned=_kernel_suite_cases, extra_s=15, run=kernel_suite),
]
STEP = {s.name: s for s in STEPS}


def rehearsed(rows: list[dict], why: str) -> list[dict]:
    """A rehearsal's rows: a path that ran says SKIP with what it measured (a CPU's figure judges no
    GPU target); one that could not run its path (a FAIL with no figure) stays FAIL."""
    out = []
    for r in rows:
        if r["verdict"] == "FAIL" and r["figure"] == "-":
            out.append({**r, "reason": f"rehearsal on the CPU failed: {r.get('reason')}"})
        else:
            said = f": {r['reason']}" if r.get("reason") else ""
            out.append({**r, "verdict": "SKIP", "reason": f"{why}; rehearsed on the CPU{said}"[:400]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description="one device-check step")
    ap.add_argument("step", choices=list(STEP))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    step = STEP[args.step]
    why = gpu_or_reason()
    if why and not REHEARSAL:
        rows = skip(step.name, "-", why)
    else:
        try:
            rows = step.run(args)
        except Exception as exc:  # noqa: BLE001 - the row says what broke; the next step still runs
            rows = [row(step.name, "-", "-", "FAIL", f"crashed: {type(exc).__name__}: {str(exc).strip()[:240]}")]
        if REHEARSAL:
            rows = rehearsed(rows, why or "no GPU")
    print("ROWS " + json.dumps(rows, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
