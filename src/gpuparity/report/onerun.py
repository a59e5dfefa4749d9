"""What one platform's runs say on their own: per workload, what the box reached against its
datasheet (the headline, mamf-finder style: "bf16 GEMM 812 TFLOP/s = 82% of peak"), a section
per workload with every ok result, the skipped and failed cases with their reasons, and the
machine's state during the runs. Shared by the HTML report and its markdown twin.
"""

from __future__ import annotations

from gpuparity.report.labels import case_texts, params_text
from gpuparity.results import figure_text
from gpuparity.results.figure import UNVERIFIED_TOKENS, unverified

# Section order and titles; a workload not listed (a user's own) gets a section after these.
TITLES = {
    "gemm": "GEMM", "gemm_search": "Max-achievable GEMM (shape search)", "memory": "Memory bandwidth",
    "attention": "Attention", "moe": "Mixture of experts", "conv": "Convolution", "llm": "LLM inference",
    "training": "Training", "serving": "Serving", "collectives": "Collectives", "scaling": "Multi-GPU scaling",
}
# The headline names the best result per group: per dtype for GEMM, per pass for attention and conv.
GROUP_BY = {"gemm": "dtype", "gemm_search": "dtype", "attention": "pass", "conv": "pass", "collectives": "op"}
HEADLINE_NAME = {"gemm": "GEMM", "gemm_search": "max-achievable GEMM", "memory": "memory", "attention": "attention",
                 "moe": "MoE", "conv": "conv", "llm": "LLM decode", "training": "training", "serving": "serving",
                 "collectives": "collective", "scaling": "scaling"}
GEMM_DTYPE_ORDER = ("bf16", "fp8", "fp16", "fp4", "fp6", "tf32", "fp32", "fp64", "int8")
HEADLINE_GEMM_DTYPES = 3       # the headline names at most this many GEMM dtypes (the section has all)
# Workload figures beyond the headline one: (column, derived field, scale).
EXTRA_COLUMNS = {
    "llm": [("prefill tok/s", "prefill_tokens_per_s", 1.0), ("TTFT ms", "ttft_s", 1e3), ("TPOT ms", "tpot_s", 1e3),
            ("end-to-end s", "e2e_s", 1.0), ("output tok/s", "output_tokens_per_s", 1.0)],
    "training": [("TFLOP/s", "tflops", 1.0), ("MFU %", "mfu", 100.0), ("memory GB", "memory_high_water_bytes", 1e-9)],
    "moe": [("TFLOP/s", "tflops", 1.0)],
    "collectives": [("bus GB/s", "busbw_gbs", 1.0), ("alg GB/s", "algbw_gbs", 1.0), ("latency us", "latency_us", 1.0)],
    "scaling": [("tok/s per rank", "tokens_per_s_per_rank", 1.0), ("weak-scaling efficiency %",
                                                                   "weak_scaling_efficiency", 100.0)],
    "serving": [("tok/s per user", "interactivity", 1.0), ("TTFT ms", "ttft_ms", 1.0), ("TPOT ms", "tpot_ms", 1.0)],
}
LATENCY_CHART = {"llm": [("TTFT ms", "ttft_s", 1e3), ("TPOT ms", "tpot_s", 1e3)]}


def figure(r: dict) -> float | None:
    v = (r.get("metric") or {}).get("value")
    return v if isinstance(v, (int, float)) and v > 0 else None


def pct_peak(r: dict) -> float | None:
    v = (r.get("derived") or {}).get("pct_peak")
    return v if isinstance(v, (int, float)) else None


def peak_text(r: dict) -> str | None:
    """'31.8% of 0.538 TFLOP/s (estimated)': the % and the datasheet figure it is a share of."""
    pct, peak = pct_peak(r), (r.get("derived") or {}).get("peak") or {}
    if pct is None:
        return None
    of = f" of {figure_text.figure(peak['value'])} {peak.get('unit', '')}".rstrip() \
        if isinstance(peak.get("value"), (int, float)) else ""
    return f"{figure_text.percent(pct)}%{of}" + (" (estimated)" if peak.get("estimated") else "")


UNVERIFIED_NOTE = "unverified: the server's token counts, no tokenizer checked them; no claim"


def claimable(r: dict) -> bool:
    """An ok result whose figure the headline may state (not one resting on unchecked counts)."""
    return r.get("status") == "ok" and figure(r) is not None and not unverified(r)


def _ordered(workloads) -> list[str]:
    names = list(dict.fromkeys(workloads))
    return [w for w in TITLES if w in names] + sorted(w for w in names if w not in TITLES)


def _best(results: list[dict]) -> dict:
    return max(results, key=lambda r: figure(r) or 0)


def highlights(results: list[dict]) -> list[dict]:
    """Per workload (and group), the best claimable result: {"workload", "anchor", "text", "pct",
    "flags"}; a workload whose ok results all rest on unverified counts gets a line saying that
    nothing is claimed (pct None), never their figure."""
    ok = [r for r in results if r.get("status") == "ok" and figure(r)]
    out = []
    for w in _ordered(r["workload"] for r in ok):
        rows = [r for r in ok if r["workload"] == w and claimable(r)]
        if not rows:
            n = sum(1 for r in ok if r["workload"] == w)
            out.append({"workload": w, "anchor": f"w-{w}", "pct": None, "flags": [UNVERIFIED_TOKENS],
                        "text": f"{HEADLINE_NAME.get(w, w)}: no figure claimed ({n} point{'s' if n > 1 else ''} "
                                "with token counts no tokenizer checked)"})
            continue
        key = GROUP_BY.get(w)
        groups: dict = {}
        for r in rows:
            groups.setdefault((r.get("params") or {}).get(key, r.get("dtype")) if key and key != "dtype"
                              else r.get("dtype") if key else None, []).append(r)
        names = list(groups)
        if w in ("gemm", "gemm_search"):          # the usual headline dtypes first, a few of them
            names.sort(key=lambda d: GEMM_DTYPE_ORDER.index(d) if d in GEMM_DTYPE_ORDER else 99)
            names = names[:HEADLINE_GEMM_DTYPES]
        for g in names:
            r = _best(groups[g])
            out.append({"workload": w, "anchor": f"w-{w}", "text": _clause(w, g, r), "pct": pct_peak(r),
                        "flags": list(r.get("flags") or [])})
    return out


def _clause(w: str, group, r: dict) -> str:
    """'bf16 GEMM 812 TFLOP/s = 82% of peak', 'memory copy 4,300 GB/s = 90% of peak'."""
    d = r.get("derived") or {}
    name = HEADLINE_NAME.get(w, w)
    if w in ("gemm", "gemm_search"):
        name = f"{group} {name}" if group else name
    elif w == "memory":
        name = f"memory {(r.get('params') or {}).get('op', '')}".strip()
    elif group is not None:
        name = f"{name} {group}"
    text = f"{name} {figure_text.figure(figure(r))} {(r.get('metric') or {}).get('unit', '')}".rstrip()
    pct = pct_peak(r)
    if w == "training" and isinstance(d.get("mfu"), (int, float)):
        text += f", MFU {figure_text.percent(100 * d['mfu'])}%" + (" (estimated peak)" if d.get("mfu_estimated") else "")
    elif pct is not None:
        text += f" = {figure_text.percent(pct)}% of peak" + (" (estimated)" if (d.get("peak") or {}).get("estimated") else "")
    if w == "llm" and isinstance(d.get("ttft_s"), (int, float)):
        text += f", TTFT {figure_text.figure(1e3 * d['ttft_s'])} ms"
    if "unstable" in (r.get("flags") or []):
        text += " (unstable)"
    return text


def headline_text(results: list[dict]) -> str:
    items = highlights(results)
    return "; ".join(h["text"] for h in items) + "." if items else "No result has a figure."


def status_counts(results: list[dict]) -> dict:
    out = {"ok": 0, "skipped": 0, "failed": 0}
    for r in results:
        out[r.get("status", "failed")] = out.get(r.get("status", "failed"), 0) + 1
    return out


def _num(x, scale: float = 1.0):
    return x * scale if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def bar_text(r: dict) -> str:
    """A chart bar's label: training's MFU, else the share of the datasheet peak ('' without one).
    Short, as the chart leaves room for a few characters past the longest bar (an estimated peak is
    said in the headline and the table: "MFU 14.4% (est. peak)" ran off an 800 px page)."""
    d = r.get("derived") or {}
    if r.get("workload") == "training" and _num(d.get("mfu")) is not None:
        return f"MFU {figure_text.percent(100 * d['mfu'])}%"
    pct = pct_peak(r)
    return f"{figure_text.percent(pct)}%" if pct is not None else ""


def section_rows(rows: list[dict]) -> list[dict]:
    """One row per ok result of a workload: the case, its figure with CI, % of peak and extras."""
    cases = case_texts(rows)
    out = []
    for r, case in zip(rows, cases, strict=True):
        m, d = r.get("metric") or {}, r.get("derived") or {}
        extra = {name: _num(d.get(field), scale) for name, field, scale in EXTRA_COLUMNS.get(r["workload"], [])}
        best = (r.get("info") or {}).get("best_shape")
        flags = [UNVERIFIED_NOTE if f == UNVERIFIED_TOKENS else f for f in r.get("flags") or []]
        out.append({
            "case": case or params_text(r.get("params")) or "-", "dtype": r.get("dtype"), "value": figure(r),
            "unit": f"{m.get('unit')} (unverified)" if unverified(r) else m.get("unit"),
            "ci_low": m.get("ci_low"), "ci_high": m.get("ci_high"), "pct": pct_peak(r),
            "of_peak": peak_text(r), "trials": m.get("trials"), "flags": ", ".join(flags) or None,
            "shape": " ".join(f"{k}={v}" for k, v in best.items()) if isinstance(best, dict) else None,
            "extra": extra, "bar_text": bar_text(r), "result": r})
    return out


def sections(results: list[dict]) -> list[dict]:
    """Per workload with an ok result: {"workload", "title", "anchor", "rows", "constant", "skipped"}."""
    ok = [r for r in results if r.get("status") == "ok" and figure(r)]
    out = []
    for w in _ordered(r["workload"] for r in ok):
        rows = [r for r in ok if r["workload"] == w]
        constant = {k: v for k, v in (rows[0].get("params") or {}).items()
                    if k != "dtype" and all((r.get("params") or {}).get(k) == v for r in rows)} if len(rows) > 1 else {}
        dtypes = {r.get("dtype") for r in rows}
        srows = section_rows(rows)
        for s in srows:
            s["label"] = " ".join(x for x in (s["case"] if s["case"] != "-" else "",
                                              s["dtype"] if len(dtypes) > 1 else "") if x) or w
        out.append({"workload": w, "title": TITLES.get(w, w), "anchor": f"w-{w}", "rows": srows,
                    "constant": params_text(constant) + (f" dtype={dtypes.pop()}" if len(dtypes) == 1
                                                          and len(rows) > 1 and None not in dtypes else ""),
                    "extra_headers": [name for name, _, _ in EXTRA_COLUMNS.get(w, [])],
                    "skipped": sum(1 for r in results if r["workload"] == w and r.get("status") != "ok")})
    return out


def not_ok(results: list[dict]) -> list[dict]:
    """Skipped and failed results with their reasons, workload order."""
    order = {w: i for i, w in enumerate(_ordered(r["workload"] for r in results))}
    rows = [r for r in results if r.get("status") != "ok"]
    rows.sort(key=lambda r: (order[r["workload"]], r.get("status") != "failed"))
    return [{"workload": r["workload"], "params": params_text(r.get("params")), "dtype": r.get("dtype"),
             "status": r.get("status"), "reason": r.get("reason")} for r in rows]


def machine_rows(docs: list[dict]) -> list[dict]:
    """Per run: its identity, trials, duration and the machine's state at start and end."""
    from gpuparity.platform.machine import busy_warnings

    out = []
    for d in sorted(docs, key=lambda d: d.get("started_at") or ""):
        plan, machine = d.get("plan") or {}, d.get("machine") or {}
        for when in ("start", "end"):
            st = machine.get(when) or {}
            share = st.get("other_cpu_share")
            gpu = st.get("gpu") if isinstance(st.get("gpu"), dict) else {}
            out.append({
                "run": d.get("run_id"), "label": d.get("label"), "when": when,
                "time": d.get("started_at") if when == "start" else d.get("finished_at"),
                "loadavg": " ".join(str(x) for x in st.get("loadavg") or []) or None,
                "cpus": st.get("cpus"), "other": f"{100 * share:.0f}%" if isinstance(share, (int, float)) else None,
                "governors": ", ".join(st.get("governors") or []) or None,
                "gpu": ", ".join(f"{k} {v}" for k, v in gpu.items() if not isinstance(v, (dict, list))) or None,
                "warnings": "; ".join(busy_warnings(st, when)) or None,
                "plan": (f"{plan.get('trials')} trial(s), {plan.get('mode')}" + _suite(d)
                         if when == "start" and plan else None),
                "duration": f"{d['duration_s']:.0f} s" if when == "start" and isinstance(d.get("duration_s"),
                                                                                         (int, float)) else None})
    return out


def _suite(doc: dict) -> str:
    """', suite NAME', except on a serving run (it measures the server at --set url=, whatever the suite)."""
    results = doc.get("results") or []
    if results and all(r.get("category") == "serving" for r in results):
        return ""
    return f", suite {doc.get('suite')}"


def busy(docs: list[dict]) -> list[str]:
    """The runs' busy-machine warnings and the load their results were timed beside, each with its
    run id."""
    from gpuparity.platform.machine import busy_warnings, contention_lines

    out = []
    for d in docs:
        for when in ("start", "end"):
            out += [f"run {d.get('run_id')}: {w}" for w in busy_warnings((d.get("machine") or {}).get(when), when)]
        out += [f"run {d.get('run_id')}: {w}" for w in contention_lines(d)]
    return out
