"""The report's tables (report/grid.py grids): results, category means, per dollar and per watt,
the platforms, one workload's section, what was not run or not compared, the machine's state,
serving at equal interactivity and per curve, and the rows behind each claim."""

from __future__ import annotations

from gpuparity.comparison.headline import (
    category_name,
    mean_verdict,
    pair,
    runs_x_trials,
    side_pcts,
    spread_text,
)
from gpuparity.comparison.serving_compare import throughput_header
from gpuparity.report import plots, serving
from gpuparity.report.grid import grid
from gpuparity.results import figure_text


def _num(x) -> str:
    return figure_text.figure(x)        # every view's spelling (results/figure_text.py)


def _ci(ratio, lo, hi) -> str:
    return figure_text.ratio_ci(ratio, lo, hi)


def _params(r: dict) -> str:
    return plots._params(r.get("params"))


def _verdict(r: dict, suffix: str = "") -> str | None:
    return r.get(f"verdict{suffix}")


def _verdict_flags(r: dict) -> str | None:
    """'inconclusive (unstable, max_samples)': the verdict with the flags that bound it."""
    flags = ", ".join(r.get("flags") or [])
    return f"{r['verdict']} ({flags})" if flags else r.get("verdict")


def _pcts(a, b) -> str | None:
    pct = figure_text.percent
    return None if a is None and b is None else f"{pct(a) or '?'} / {pct(b) or '?'}"


def results_table(rows: list[dict]) -> dict:
    return grid(rows, [
        ("workload", lambda r: r["workload"], "text"), ("params", _params, "text"),
        ("dtype", lambda r: r.get("dtype"), "text"), ("A", lambda r: r.get("a_value"), "num"),
        ("B", lambda r: r.get("b_value"), "num"), ("unit", lambda r: r.get("unit"), "text"),
        ("B/A [95% CI]", lambda r: _ci(r["ratio"], r.get("ci_low"), r.get("ci_high")), "text"),
        ("verdict", _verdict_flags, "verdict"),
        ("runs x trials A/B", lambda r: f"{runs_x_trials(r, 'a')} / {runs_x_trials(r, 'b')}", "text"),
        ("spread assumed A/B", lambda r: side_pcts(r, "spread"), "text"),
        ("CPU load A/B", lambda r: side_pcts(r, "load"), "text"),
        ("% peak A/B", lambda r: _pcts(r.get("a_pct_peak"), r.get("b_pct_peak")), "text"),
        ("per peak", lambda r: r.get("ratio_per_peak"), "ratio"), ("note", lambda r: r.get("note"), "text"),
    ])


def geomean_table(result: dict) -> dict:
    geo = result.get("geomean") or {}
    items = [{"category": c, **g} for c, g in geo.items()]
    return grid(items, [
        ("category", lambda g: category_name(g["category"], g), "text"), ("results", lambda g: g.get("n"), "text"),
        ("B/A [95% CI]", lambda g: _ci(g["ratio"], g.get("ci_low"), g.get("ci_high")), "text"),
        ("verdict", mean_verdict, "verdict"), ("trials A/B", lambda g: pair(g.get("a_trials"), g.get("b_trials")), "text"),
        ("per spec peak", lambda g: g.get("ratio_per_peak"), "ratio"),
        ("per $", lambda g: g.get("ratio_per_dollar"), "ratio"), ("per W", lambda g: g.get("ratio_per_watt"), "ratio"),
    ])


def _power(r: dict, side: str):
    w, src = r.get(f"{side}_watts"), r.get(f"{side}_power_source")
    return f"{w:.0f} W ({src})" if w else None


def cost_tables(rows: list[dict]) -> tuple[dict | None, dict | None]:
    """Per-dollar and per-watt tables, each only over the rows where both sides have the figure."""
    ident = [("workload", lambda r: r["workload"], "text"), ("params", _params, "text"),
             ("dtype", lambda r: r.get("dtype"), "text"), ("unit", lambda r: r.get("unit"), "text")]
    dollar = [r for r in rows if r.get("a_per_dollar") is not None and r.get("b_per_dollar") is not None]
    watt = [r for r in rows if r.get("a_per_watt") is not None and r.get("b_per_watt") is not None]
    per_dollar = grid(dollar, ident + [
        ("A per $/h", lambda r: r.get("a_per_dollar"), "num"), ("B per $/h", lambda r: r.get("b_per_dollar"), "num"),
        ("B/A per $", lambda r: _ci(r.get("ratio_per_dollar"), r.get("ci_low_per_dollar"),
                                    r.get("ci_high_per_dollar")), "text"),
        ("verdict", lambda r: _verdict(r, "_per_dollar"), "verdict"),
        ("A $/M tokens", lambda r: r.get("a_usd_per_mtok"), "num"),
        ("B $/M tokens", lambda r: r.get("b_usd_per_mtok"), "num")]) if dollar else None
    per_watt = grid(watt, ident + [
        ("A per W", lambda r: r.get("a_per_watt"), "num"), ("power A", lambda r: _power(r, "a"), "text"),
        ("B per W", lambda r: r.get("b_per_watt"), "num"), ("power B", lambda r: _power(r, "b"), "text"),
        ("B/A per W", lambda r: _ci(r.get("ratio_per_watt"), r.get("ci_low_per_watt"),
                                    r.get("ci_high_per_watt")), "text"),
        ("verdict", lambda r: _verdict(r, "_per_watt"), "verdict"),
        ("A tok/s per kW", lambda r: r.get("a_tokens_per_kw"), "num"),
        ("B tok/s per kW", lambda r: r.get("b_tokens_per_kw"), "num")]) if watt else None
    return per_dollar, per_watt


def platforms_table(summaries: list[dict]) -> dict:
    return grid(summaries, [
        ("side", lambda s: s["label"], "text"), ("label", lambda s: ", ".join(s.get("labels") or []), "text"),
        ("product", lambda s: ", ".join(s["products"]), "text"),
        ("spec", lambda s: ", ".join(s.get("spec_ids") or []) + (" (estimated)" if s.get("spec_estimated") else ""),
         "text"),
        ("stack", lambda s: ", ".join(s["stacks"]), "text"), ("torch", lambda s: ", ".join(s.get("torch") or []),
                                                              "text"),
        ("driver", lambda s: ", ".join(s.get("drivers") or []), "text"),
        ("hosts", lambda s: ", ".join(s.get("hosts") or []), "text"),
        ("SLURM job", lambda s: ", ".join(s.get("jobs") or []), "text"),
        ("nodes", lambda s: ", ".join(s.get("nodes") or []), "text"), ("runs", lambda s: len(s["run_ids"]), "text"),
        ("trials", lambda s: s.get("trials"), "text"),
        ("$/GPU-hour", lambda s: f"${s['usd_per_hour']:.2f}" if s.get("usd_per_hour") else None, "text"),
        ("power basis", lambda s: s.get("power"), "text"),
        ("run-to-run spread", spread_text, "text"),
        ("CPU load", lambda s: (s.get("load") or {}).get("text") if isinstance(s.get("load"), dict) else None, "text"),
    ])


def section_table(section: dict) -> dict:
    """A workload's results: case, figure with CI, % of the datasheet peak, trials, flags and the
    workload's own figures (LLM latencies, training MFU, bus bandwidth ...)."""
    return grid(section["rows"], [
        ("case", lambda r: r["case"], "text"), ("dtype", lambda r: r["dtype"], "text"),
        ("figure", lambda r: r["value"], "num"), ("unit", lambda r: r["unit"], "text"),
        ("95% CI", lambda r: f"{_num(r['ci_low'])} – {_num(r['ci_high'])}"
         if r["ci_low"] is not None and r["ci_high"] is not None else None, "text"),
        ("% of peak", lambda r: r["of_peak"], "text"), ("best shape", lambda r: r["shape"], "text"),
        ("trials", lambda r: r["trials"], "num"), ("flags", lambda r: r["flags"], "verdict"),
    ] + [(name, lambda r, name=name: r["extra"].get(name), "num") for name in section["extra_headers"]])


def not_ok_table(items: list[dict]) -> dict:
    return grid(items, [
        ("workload", lambda r: r["workload"], "text"), ("params", lambda r: r["params"], "text"),
        ("dtype", lambda r: r["dtype"], "text"), ("status", lambda r: r["status"], "verdict"),
        ("reason", lambda r: r["reason"], "text")])


def machine_table(rows: list[dict]) -> dict:
    return grid(rows, [
        ("run", lambda r: r["run"] if r["when"] == "start" else "", "text"),
        ("label", lambda r: r["label"] if r["when"] == "start" else "", "text"),
        ("when", lambda r: r["when"], "text"), ("time", lambda r: r["time"], "text"),
        ("plan", lambda r: r["plan"], "text"), ("duration", lambda r: r["duration"], "text"),
        ("load average", lambda r: r["loadavg"], "text"), ("CPUs", lambda r: r["cpus"], "num"),
        ("other processes' CPU share", lambda r: r["other"], "text"), ("governor", lambda r: r["governors"], "text"),
        ("GPU", lambda r: r["gpu"], "text"), ("warning", lambda r: r["warnings"], "text")])


def not_compared_table(items: list[dict]) -> dict:
    return grid(items, [
        ("side", lambda r: r["side"], "text"), ("workload", lambda r: r["workload"], "text"),
        ("params", _params, "text"), ("dtype", lambda r: r.get("dtype"), "text"),
        ("status", lambda r: r["status"], "text"), ("reason", lambda r: r.get("reason"), "text"),
        ("other side", lambda r: r.get("other_side"), "text"),
    ])


def serving_equal_table(entries: list[dict]) -> dict:
    return grid(entries, [
        ("curve", lambda p: p["curve_key"], "text"), ("tok/s per user", lambda p: p.get("interactivity"), "num"),
        (throughput_header(entries, "a"), lambda p: p.get("a_throughput"), "num"),
        (throughput_header(entries, "b"), lambda p: p.get("b_throughput"), "num"),
        # which configuration gives each side's envelope there (empty, so left out, where none is named)
        ("A config", lambda p: p.get("a_config"), "text"), ("B config", lambda p: p.get("b_config"), "text"),
        ("B/A [95% CI]", lambda p: _ci(p.get("ratio"), p.get("ci_low"), p.get("ci_high")), "text"),
        ("verdict", lambda p: p.get("verdict"), "verdict"), ("note", lambda p: p.get("note"), "text"),
    ])


def serving_servers_table(rows: list[dict]) -> dict:
    """Each side's server and accuracy beside its throughput (report/serving.server_rows)."""
    per = serving.per_text(rows)
    return grid(rows, [
        ("side", lambda r: r["side"], "text"), ("server", lambda r: r["server"], "text"),
        ("accuracy", lambda r: r["accuracy"], "text"),
        (f"best output tok/s {per}", lambda r: r["best"], "num"), ("at tok/s per user", lambda r: r["best_at"], "num"),
        ("best point", lambda r: r["best_point"], "text"),
        ("highest tok/s per user", lambda r: r["top_interactivity"], "num"),
    ])


def serving_tables(points: list[dict]) -> tuple[dict, dict]:
    """(summary per sweep point, latency statistics per point and metric) of one curve."""
    per = serving.per_text(points)
    summary = grid(points, [
        ("load", lambda p: p["load"], "text"), ("completed", lambda p: p["completed"], "num"),
        ("failed", lambda p: p["failed"], "num"), ("invalid", lambda p: p.get("invalid") or None, "num"),
        ("duration s", lambda p: p["duration_s"], "num"),
        ("req/s", lambda p: p["request_throughput"], "num"),
        (f"output tok/s {per}", lambda p: p["output_per_gpu"], "num"),
        (f"total tok/s {per}", lambda p: p["total_per_gpu"], "num"),
        ("tok/s per user", lambda p: p["interactivity"], "num"), ("goodput", lambda p: p["goodput"], "text"),
        ("trials", lambda p: p["trials"], "num"),
    ])
    stats = serving.latency_stats(points)
    lines = [{"load": p["load"] if i == 0 else "", "metric": name, **values}
             for p in points for i, (name, values) in enumerate((n, v) for n, v in p["latency"].items() if v)]
    latency = grid(lines, [("load", lambda x: x["load"], "text"), ("ms", lambda x: x["metric"], "text")]
                   + [(s, lambda x, s=s: x.get(s), "num") for s in stats])
    return summary, latency


def claims_view(claims: dict | None) -> dict | None:
    """Claims with their reasoning and the rows behind each verdict (as a small table)."""
    if claims is None:
        return None
    if claims.get("error"):
        return {"error": claims["error"]}
    items = []
    for c in claims.get("items") or []:
        rows = [r for r in (c.get("rows") or []) if isinstance(r, dict)][:50]
        cols = list(dict.fromkeys(k for r in rows for k, v in r.items()
                                  if not isinstance(v, (dict, list)) and k != "key"))[:8]
        evidence = [str(e.get("summary", "")) for e in c.get("evidence") or [] if isinstance(e, dict)]
        items.append({**c, "evidence_text": evidence, "rows_table": grid(rows, [
            (k, lambda r, k=k: r.get(k), "verdict" if k == "verdict" else
             "num" if any(isinstance(r.get(k), float) for r in rows) else "text") for k in cols]) if rows else None})
    return {"items": items}
