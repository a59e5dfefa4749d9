"""The timing, gate and telemetry paths on a GPU in one short run (about 4-5 minutes on an H200),
a table last. Run by bench/device_check.sh; on a CPU it runs the same rows at small sizes.

    python bench/device_check.py [--out DIR] [--budget 20]

Rows (target in brackets):
  bare        max-achievable bf16 GEMM: gpuparity / a bare torch.mm event loop at the same shape [>= 0.99]
  graph       1024^3 bf16 GEMM: graph replay, eager queue and a bare eager loop; the method auto picks
  skinny      M=16 bf16 GEMM (K=4096 -> N=14336 and N=4096): warm vs rotated operands (weights GB/s)
  copy        device copy, 1 GiB arrays [>= 85% of the datasheet bandwidth]
  energy      NVML energy counter vs integrated power over an 8 s bf16 GEMM window [within 5%]
  paths       first GPU runs of fp8 (tensor/row x fast accumulation), the TF32 proof, MoE grouped GEMMs,
              attention and conv under graph capture, fp8 linear layers: status, method, gate
Every result goes to DIR/device_check.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROWS: list[tuple[str, str, str, str]] = []      # (check, figure, target, verdict)
RESULTS: list[dict] = []


def row(check: str, figure: str, target: str = "", ok: bool | None = None) -> None:
    ROWS.append((check, figure, target, "" if ok is None else ("PASS" if ok else "FAIL")))
    print(f"-- {check}: {figure} {target} {ROWS[-1][3]}", flush=True)


def run(workload: str, params: dict, ctx) -> dict:
    from gpuparity.execute.runner import run_case
    from gpuparity.workloads.base import get

    result = run_case(get(workload), params, ctx)
    RESULTS.append(result)
    info = result.get("info") or {}
    print(f"   {workload} {params}: {result['status']} {result.get('reason') or ''} method={info.get('method')} "
          f"reps={info.get('reps_per_sample')} steady={info.get('steady')} {info.get('method_note', '')}", flush=True)
    return result


def value(result: dict, key: str = "tflops") -> float:
    return (result.get("derived") or {}).get(key) or float("nan")


def check_bare(ctx, budget: float) -> None:
    from gemm_vs_bare import bare_tflops

    from gpuparity.workloads.dtypes import torch_dtype

    dt = "bf16" if ctx.device != "cpu" else "fp32"
    r = run("gemm_search", {"budget_s": budget, "dtype": dt}, ctx)
    if r["status"] != "ok":
        return row("bare", f"gemm_search {r['status']}: {r.get('reason')}", ">= 0.99", False)
    best = r["info"]["best_shape"]
    m, n, k = best["m"], best["n"], best["k"]
    bare = statistics.mean(bare_tflops(m, n, k, torch_dtype(dt), ctx.device, 3.0) for _ in range(2))
    ratio = value(r) / bare
    row("bare", f"{dt} {m}x{n}x{k}: {value(r):.4g} vs bare {bare:.4g} TFLOP/s = {ratio:.3f} "
        f"({r['info']['method']}; clocks {state(r)})", ">= 0.99", ratio >= 0.99 if ctx.device != "cpu" else None)


def state(result: dict) -> str:
    info = result.get("info") or {}
    a, b = (info.get("state_start") or [{}])[0], (info.get("state_end") or [{}])[0]
    return f"{a.get('sm_mhz')}->{b.get('sm_mhz')} MHz, {a.get('temp_c')}->{b.get('temp_c')} C"


def check_graph(ctx) -> None:
    from gemm_vs_bare import bare_tflops

    from gpuparity.workloads.dtypes import torch_dtype

    gpu = ctx.device != "cpu"
    size, dt = (1024, "bf16") if gpu else (256, "fp32")
    params = {"m": size, "n": size, "k": size, "layout": "nn", "dtype": dt}
    figures = {}
    for method in ("graph", "queue", "auto"):
        sub = replace(ctx, loop=replace(ctx.loop, method=method))
        r = run("gemm", params, sub)
        figures[method] = (value(r), r["info"].get("method"), r["info"].get("host_bound_batches", 0))
    bare = bare_tflops(size, size, size, torch_dtype(dt), ctx.device, 2.0)
    g, q, a = figures["graph"], figures["queue"], figures["auto"]
    row("graph", f"{dt} {size}^3: graph {g[0]:.4g}, queue {q[0]:.4g} (host-bound batches {q[2]}), "
        f"bare eager {bare:.4g} TFLOP/s; auto chose {a[1]}", "graph >= queue", g[0] >= 0.98 * q[0] if gpu else None)


def check_skinny(ctx) -> None:
    gpu = ctx.device != "cpu"
    dt = "bf16" if gpu else "fp32"
    k = 4096 if gpu else 1024
    for n in ((14336, 4096) if gpu else (2048,)):
        out = {}
        for mode in ("warm", "rotate"):
            r = run("gemm", {"m": 16, "n": n, "k": k, "layout": "nn", "dtype": dt, "operands": mode}, ctx)
            weights = k * n * (2 if dt == "bf16" else 4)
            med = (r.get("summary") or {}).get("median") or float("nan")
            out[mode] = (value(r), weights / med / 1e9, (r["info"].get("operands") or {}).get("copies"))
        w, rot = out["warm"], out["rotate"]
        row("skinny", f"M=16 K={k} N={n}: warm {w[0]:.4g} TFLOP/s ({w[1]:.4g} GB/s of weights), rotated x{rot[2]} "
            f"{rot[0]:.4g} TFLOP/s ({rot[1]:.4g} GB/s)", "rotated <= warm", rot[0] <= w[0] * 1.02 if gpu else None)


def check_copy(ctx) -> None:
    from gpuparity.workloads.memory import array_elems

    r = run("memory", {"op": "copy", "elements": array_elems(ctx, "standard"), "dtype": "fp32"}, ctx)
    pct = value(r, "pct_peak")
    spec = (ctx.spec or {}).get("memory_bw_tbs")
    row("copy", f"{value(r, 'gbs'):.0f} GB/s = {pct:.1f}% of {spec} TB/s ({r['info'].get('method')})",
        ">= 85%", pct >= 85 if ctx.device != "cpu" else None)


def check_energy() -> None:
    from power_check import power_run

    _, r = power_run(8.0)
    RESULTS.append(r)
    t = r.get("telemetry") or {}
    agree = t.get("counter_agreement")
    if agree is None:
        return row("energy", f"no counter to compare ({t.get('method')}: {t.get('energy') or t.get('reasons')})",
                   "within 5%")
    row("energy", f"integrated {t['energy_j']:.1f} J vs counter {t['energy_counter_j']:.1f} J = {100 * agree:+.2f}% "
        f"over {t['busy_s']:.2f} s busy, {t['mean_power_w']:.0f} W, throttled {t.get('throttle_reasons')}",
        "within 5%", abs(agree) <= 0.05 and bool(t.get("valid")))


def check_paths(ctx) -> None:
    """First GPU runs of the paths only CPU tests have driven: status, method and gate."""
    from gpuparity.measure.loop import LoopConfig

    quick = replace(ctx, loop=LoopConfig.for_suite("quick", ctx.device))
    gpu = ctx.device != "cpu"
    n = 1024 if gpu else 256
    cases = [("gemm", {"m": n, "n": n, "k": n, "layout": "nn", "dtype": "fp8", "scaling": s, "fast_accum": f})
             for s in ("tensor", "row") for f in ((False, True) if ctx.backend == "cuda" else (False,))]
    cases += [("gemm", {"m": n, "n": n, "k": n, "layout": "nn", "dtype": "tf32"}),
              ("gemm", {"m": n, "n": n, "k": n, "layout": "nn", "dtype": "int8"})]
    from gpuparity.workloads.base import get

    for name in ("moe", "attention", "conv"):
        cases += [(name, c) for c in get(name).cases("quick", quick)[:2]]
    for name, params in cases:
        r = run(name, params, quick)
        label = " ".join(f"{k}={v}" for k, v in params.items() if k in ("dtype", "scaling", "fast_accum", "preset",
                                                                         "seq", "pass", "layer"))
        detail = r.get("reason") if r["status"] != "ok" else (r["info"].get("check") or "")
        row("paths", f"{name} {label}: {r['status']} ({r['info'].get('method')}) {str(detail)[:90]}", "ok",
            None if r["status"] == "skipped" else r["status"] == "ok")
    check_fp8_linear(ctx)


def check_fp8_linear(ctx) -> None:
    """models.fp8 on the GPU: a synthetic tiny Llama in bf16, then quantised, gated against itself."""
    import torch

    from gpuparity.measure.gates import tokens_agree
    from gpuparity.models import fp8, synthetic
    from gpuparity.workloads.dtypes import fp8_dtype_name

    if ctx.device == "cpu":
        return row("paths", "fp8 linear layers: GPU only here (CPU covered by tests/test_llm.py)")
    model = synthetic.build(synthetic.make_config("tiny-llama"), ctx.device, torch.bfloat16)
    ids = torch.arange(1, 9, device=ctx.device).unsqueeze(0)
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=8, do_sample=False,
                             pad_token_id=0)
    ref = [int(t) for t in out[0, ids.shape[1]:]]
    info = fp8.quantise(model, fp8_dtype_name(ctx))
    ok, detail, _ = tokens_agree(model, ids, ref)
    row("paths", f"fp8 linear ({info['format']}, {info['scaling']}, {info['layers_fp8']} layers): {detail[:80]}",
        "agree", None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/gpuparity-device"))
    ap.add_argument("--budget", type=float, default=None, help="shape search budget (20 s GPU, 2 s CPU)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    from gpuparity.execute.runner import build_context

    t0 = time.perf_counter()
    ctx = build_context("standard", {})
    gpu = ctx.device != "cpu"
    fp = ctx.fingerprint
    print(f"device: {fp.get('product')} ({ctx.backend}, {fp.get('arch_target')}), torch {fp.get('torch_version')}, "
          f"llc {((fp.get('devices') or [{}])[0]).get('llc_bytes')}, telemetry {fp.get('telemetry', {}).get('method')}")
    steps = [("bare", lambda: check_bare(ctx, args.budget or (20.0 if gpu else 2.0))), ("graph", lambda: check_graph(ctx)),
             ("skinny", lambda: check_skinny(ctx)), ("copy", lambda: check_copy(ctx)), ("energy", check_energy),
             ("paths", lambda: check_paths(ctx))]
    for name, step in steps:
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - one broken row must not cost the others
            row(name, f"crashed: {type(exc).__name__}: {str(exc).strip()[:200]}", "", False)
    with open(os.path.join(args.out, "device_check.json"), "w") as fh:
        json.dump({"fingerprint": fp, "rows": ROWS, "results": RESULTS}, fh, default=str)
    width = max(len(r[0]) for r in ROWS)
    print(f"\n{'check':{width}s}  verdict  target           figure")
    for check, figure, target, verdict in ROWS:
        print(f"{check:{width}s}  {verdict or '-':7s}  {target:15s}  {figure}")
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 1 if any(r[3] == "FAIL" for r in ROWS) else 0


if __name__ == "__main__":
    sys.exit(main())
