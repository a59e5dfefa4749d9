"""The self-contained HTML report (and its markdown twin).

Everything is inside one file: plotly.js inline once (the smallest bundle that draws the
charts, compressed: report/plotlyjs.py), figures as JSON in one script. Strings
from runs and users are escaped by Jinja2's autoescape in HTML, by `plots.t` inside figures,
and the figures' JSON has <, > and & as \\u escapes so nothing can close the script element.

A section without data is left out, and so is a table column that is empty in every row: the
reader sees what was measured, not a grid of dashes.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from importlib import resources

from markupsafe import Markup, escape

from gpuparity.comparison import compare as compare_mod
from gpuparity.comparison.headline import (
    category_name,
    counts_text,
    headline,
    mean_verdict,
    pair,
    runs_x_trials,
    side_pcts,
    spread_text,
)
from gpuparity.comparison.serving_compare import throughput_header
from gpuparity.comparison.side_summary import side_summary
from gpuparity.comparison.sides import side_from_runs
from gpuparity.report import fingerprint, onerun, plots, serving
from gpuparity.results import figure_text

MAX_TABLE_ROWS = 2000
METHOD = [
    "Each result's figure is the one number stored with it (work / median time per trial, combined over "
    "trials); every view shows that number.",
    "Ratio = figure(B) / figure(A), higher is better. Its 95% CI and the verdict come from `gpuparity compare`: "
    "faster or slower when the whole CI lies beyond the parity band 1/(1 + tolerance) to 1 + tolerance (the same "
    "factor either way: symmetric on the log scale), parity when it lies within, inconclusive otherwise (and for "
    "results whose verdict is held: flagged, throttled by heat or contended). The README's \"Trials and "
    "statistics\" section gives the estimator.",
    "Per spec peak: ratio × peak(A) / peak(B), the datasheet peak the result is measured against (compute for "
    "the dtype, memory, interconnect or host link); CPU peaks are estimates.",
    "Per dollar: ratio × price(A) / price(B) in $ per GPU-hour; its CI spans that price factor over the price "
    "book's bases (a price you set holds on all). Per watt: measured mean power where the telemetry is valid, "
    "else datasheet TDP; a verdict only where both sides measured power (TDP ratios are plain ratios).",
    "A category (or overall) mean whose results disagree beyond the band reads \"mixed: faster on X of N, slower "
    "on Y\", never parity; the overall mean weighs categories equally.",
    "Serving: throughput per GPU compared at equal interactivity (tokens/s per user) along each side's "
    "best-throughput (Pareto) curve; points with request errors are left out of the curves.",
    "Roofline: arithmetic intensity = FLOP / bytes per invocation; GEMM bytes are the minimum traffic "
    "(each of A, B, C moved once) where the workload did not report bytes.",
    "Failed and skipped results are never compared; they are listed with their reason.",
]


def _script_json(obj) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' survives, nor the JS line separators."""
    text = json.dumps(obj, separators=(",", ":"), default=str)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def _newest_results(docs: list[dict]) -> list[dict]:
    by_key = {}
    for d in sorted(docs, key=lambda d: d.get("started_at") or ""):
        for r in d.get("results") or []:
            if r.get("status") == "ok" or r["key"] not in by_key:
                by_key[r["key"]] = r
    return list(by_key.values())


def _name(summary: dict) -> str:
    """'aa-A1: MI300X (rocm 6.4.1)': the runs' label (when they share one), product and stack."""
    labels = summary.get("labels") or []
    name = f"{', '.join(summary['products']) or '?'} ({', '.join(summary['stacks']) or '?'})"
    return f"{labels[0]}: {name}" if len(labels) == 1 and labels[0] else name


def _short(summary: dict) -> str:
    labels = summary.get("labels") or []
    what = labels[0] if len(labels) == 1 and labels[0] else ', '.join(summary.get('spec_ids') or summary['products'])
    return f"{summary['label']} ({what or '?'})"


def evaluate_claims(store, claims_file: str | None = None) -> dict:
    """{"items": [...]} from gpuparity.evidence.claims, or {"error": reason}."""
    try:
        from gpuparity.evidence import claims as claims_mod
    except ImportError as exc:
        return {"error": f"gpuparity.evidence.claims is not available ({exc})"}
    if store is None:
        return {"error": "no store to evaluate claims against"}
    from gpuparity.errors import UserError

    try:
        return {"items": list(claims_mod.evaluate_claims(store, claims_file=claims_file))}
    except UserError:
        raise                   # a bad claims file is the user's to fix: one line, as `claims check` says it
    except Exception as exc:  # the claims checker is another module: its failure must not lose the report
        return {"error": f"{type(exc).__name__}: {exc}"}


# -- tables: columns that are empty in every row are dropped ----------------------------------
def _num(x) -> str:
    return figure_text.figure(x)        # every view's spelling (results/figure_text.py)


def _ci(ratio, lo, hi) -> str:
    return figure_text.ratio_ci(ratio, lo, hi)


SOFT_AFTER = re.compile(r"([/_.,=:;&|+\-])")      # split keeps the marks: pieces and marks alternate
LONG_RUN = re.compile(r"\S{13,}")


def soft(text) -> Markup:
    """Escaped text with break opportunities (<wbr>) inside long unbroken runs (paths, URLs,
    field names, library lists), after punctuation and at least every 16 characters: a narrow
    screen wraps the cell instead of scrolling, and short words never break mid-word."""
    text = str(text)
    out, at = [], 0
    for m in LONG_RUN.finditer(text):
        out.append(str(escape(text[at:m.start()])))
        pieces = [p[i:i + 16] for p in SOFT_AFTER.split(m.group(0)) for i in range(0, len(p), 16)]
        out.append("<wbr>".join(str(escape(p)) for p in _glue(pieces)))
        at = m.end()
    out.append(str(escape(text[at:])))
    return Markup("".join(out))


def _glue(pieces: list[str]) -> list[str]:
    """Each punctuation mark back onto the piece before it (a break comes after it, not before)."""
    out: list[str] = []
    for p in pieces:
        if out and SOFT_AFTER.fullmatch(p):
            out[-1] += p
        elif p:
            out.append(p)
    return out


def grid(rows: list, columns: list[tuple]) -> dict:
    """A table: columns are (header, getter, kind) with kind "text" | "num" (a figure) | "ratio" |
    "verdict" (coloured by its first word); a column whose every cell is empty is left out. Cells
    are (text, css class)."""
    cells = []
    for row in rows:
        line = []
        for _, get, kind in columns:
            v = get(row)
            text = _num(v) if kind == "num" else figure_text.ratio(v) if kind == "ratio" else \
                "" if v is None else soft(v)
            cls = "num" if kind in ("num", "ratio") else str(v).split(" ")[0].rstrip(":") if kind == "verdict" and v else ""
            line.append((text, cls))
        cells.append(line)
    keep = [j for j in range(len(columns)) if any(line[j][0] for line in cells)]
    return {"headers": [columns[j][0] for j in keep], "rows": [[line[j] for j in keep] for line in cells]}


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


def _one_run(docs: list[dict], results: list[dict], charts: list[dict]) -> dict:
    """The one-platform view (report.onerun) and its charts, appended to `charts`."""
    secs = onerun.sections(results)
    for sec in secs:
        if sec["workload"] == "serving":         # serving has its throughput-interactivity curves
            continue
        units = [r["unit"] for r in sec["rows"]]
        unit = max(set(units), key=units.count)
        rows = [r for r in sec["rows"] if r["unit"] == unit]
        caption = (f"{unit or 'figure'} per case with its 95% CI (cut at 3x the figure; light: flagged results); "
                   "the label is the share of the datasheet peak, the red tick the peak itself.")
        if len(rows) > plots.MAX_BARS or len(rows) < len(sec["rows"]):
            caption += f" {min(len(rows), plots.MAX_BARS)} of {len(sec['rows'])} results drawn; the table has all."
        sec["chart"] = {"anchor": f"{sec['anchor']}-chart", "section": sec["workload"], "caption": caption,
                        "fig": plots.workload_chart(rows, unit)}
        charts.append(sec["chart"])
        if sec["workload"] in onerun.LATENCY_CHART:
            sec["latency"] = {"anchor": f"{sec['anchor']}-latency", "section": sec["workload"],
                              "caption": "Latency per case: time to first token and time per output token.",
                              "fig": plots.latency_chart(sec["rows"], onerun.LATENCY_CHART[sec["workload"]])}
            charts.append(sec["latency"])
    return {"highlights": onerun.highlights(results), "headline": onerun.headline_text(results),
            "counts": onerun.status_counts(results), "sections": secs, "not_ok": onerun.not_ok(results),
            "machine": onerun.machine_rows(docs), "busy": onerun.busy(docs)}


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
        ("B/A [95% CI]", lambda p: _ci(p.get("ratio"), p.get("ci_low"), p.get("ci_high")), "text"),
        ("verdict", lambda p: p.get("verdict"), "verdict"), ("note", lambda p: p.get("note"), "text"),
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


# -- the report -------------------------------------------------------------------------------
def side_input(source, label: str) -> tuple:
    """(Side, its newest result per key) of a report side: given as that pair when read from a
    store (the columns `compare` reads: cli/report.py; the Side knows its store), or made here
    from run documents."""
    if isinstance(source, tuple):
        return source
    return side_from_runs(source, label), _newest_results(source)


def build(docs_a, docs_b=None, tolerance: float = 0.05, prices=None,
          claims: dict | None = None, title: str | None = None, history: bool = False, stores=None) -> dict:
    """Everything the HTML and markdown renderers need. docs_a, docs_b: a side's run documents or
    its (Side, newest results) pair (side_input). claims None: no claims section. history: learn
    one-run sides' spread from their stores' earlier runs (as compare), through `stores` (a
    StorePool) where given."""
    if prices is None:
        from gpuparity.platform.prices import PriceBook

        prices = PriceBook(use_config=False)
    inputs = [side_input(docs_a, "A")] + ([side_input(docs_b, "B")] if docs_b else [])
    side_objs = [side for side, _ in inputs]
    result = compare_mod.compare_sides(side_objs[0], side_objs[1], tolerance, prices,
                                       history="auto" if history else None, stores=stores) if docs_b else None
    if result:
        summaries = [result["sides"]["a"], result["sides"]["b"]]
    else:
        summaries = [side_summary(side_objs[0], prices)]
    names = {s["label"].lower(): _name(s) for s in summaries}
    plot_sides = []
    for s, (_, results) in zip(summaries, inputs, strict=True):
        spec = (s.get("fingerprint") or {}).get("spec") or {}
        plot_sides.append({"label": s["label"], "name": _name(s), "short": _short(s),
                           "results": results, "spec": spec})
    serving_sides = [(s["label"], s["short"], serving.curves(s["results"])) for s in plot_sides]
    charts = []
    if result and any(r.get("ratio") for r in result["rows"]):
        from gpuparity.comparison.verdict import band_text

        fig = plots.forest_chart(result)
        meta = fig.layout.meta
        caption = (f"B / A per result with its 95% CI on a log scale, grouped by category under the category's "
                   f"geometric mean (diamond); shaded: the {band_text(tolerance)}. Open markers: flagged results.")
        if meta["shown"] < meta["rows"]:
            caption += f" {meta['shown']} of {meta['rows']} results shown: the largest differences per category."
        charts.append({"anchor": "forest", "title": "Ratio per result", "caption": caption, "fig": fig})
        if len(plots.normalised_views(result)) > 1:
            charts.append({"anchor": "normalised", "title": "Raw, per spec peak, per dollar, per watt",
                           "caption": "Category geometric means B / A; a view appears where both sides have "
                                      "the figure (spec peak, price, power).", "fig": plots.normalised_chart(result)})
    # the machine's state is in run documents only (a one-platform report of many stored runs has none)
    run_docs = docs_a if isinstance(docs_a, list) else []
    one = _one_run(run_docs, plot_sides[0]["results"], charts) if not docs_b else None
    if plots.has_roofline(plot_sides):
        charts.append({"anchor": "roofline", "title": "Roofline", "fig": plots.roofline_chart(plot_sides),
                       "caption": "Achieved TFLOP/s against arithmetic intensity; dashed: each platform's spec "
                                  "roofs, dotted: its measured bandwidth roof (best memory result)."})
    if docs_b and plots.has_gemm(plot_sides):      # one platform: its GEMM section has the dtypes
        charts.append({"anchor": "gemm", "title": "GEMM TFLOP/s by dtype", "fig": plots.gemm_chart(plot_sides),
                       "caption": "Best shape per dtype (hover: the shape and % of peak)."})
    if any(pts for _, _, per in serving_sides for pts in per.values()):
        charts.append({"anchor": "serving-curves", "title": "Throughput vs interactivity",
                         "fig": plots.serving_chart(serving_sides),
                         "caption": "Each sweep point labelled with its load; lines: the best throughput "
                                    "reachable at or above each interactivity (what the comparison uses)."})
    if title is None:
        title = "gpuparity: " + (f"{names['b']} vs {names['a']}" if docs_b else names["a"])
    return {"title": title, "summaries": summaries, "result": result, "names": names, "charts": charts,
            "one": one, "docs": run_docs if not docs_b else None,
            "serving_sides": serving_sides, "plot_sides": plot_sides,
            "claims": claims, "tolerance": tolerance,
            "headline": headline(result) if result else None,
            "price_note": f"basis {prices.basis}; " + "; ".join(
                f"{s['label']}: {s['price_source']}" for s in summaries if s.get("price_source"))}


def _single_side_line(side: dict) -> str:
    results = side["results"]
    c = onerun.status_counts(results)
    parts = ", ".join(f"{n} {s}" for s, n in c.items() if n and s != "ok")
    return (f"One platform, {side['name']}: {c['ok']} of {len(results)} results ok" + (f" ({parts})" if parts else "")
            + ". Name a second side (gpuparity report A B) to compare.")


def _claims_view(claims: dict | None) -> dict | None:
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


def render_html(ctx: dict) -> str:
    from jinja2 import Environment

    from gpuparity.report import plotlyjs
    from gpuparity.version import __version__

    env = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["soft"] = soft
    template = env.from_string(
        resources.files("gpuparity.report").joinpath("templates/report.html.j2").read_text(encoding="utf-8"))
    charts = [{**c, "id": f"chart-{i}"} for i, c in enumerate(ctx["charts"])]
    figures = [{"id": c["id"], "figure": json.loads(c["fig"].to_json())} for c in charts]
    result = ctx["result"]
    sides = ctx["summaries"]
    if result:
        rows = result["rows"][:MAX_TABLE_ROWS]
        per_dollar, per_watt = cost_tables(rows)
        fp_diff = fingerprint.diff(sides[0].get("fingerprint"), sides[1].get("fingerprint"))
    else:
        rows, per_dollar, per_watt = [], None, None
        fp_diff = {"different": [], "datasheet": [],
                   "same": list(fingerprint.flatten(sides[0].get("fingerprint") or {}).items())}
    serving_blocks = []
    for _, short, per_curve in ctx["serving_sides"]:
        for ckey, points in per_curve.items():
            summ, lat = serving_tables(points)
            serving_blocks.append({"side": short, "curve": ckey, "summary": summ, "latency": lat})
    one = ctx.get("one")
    if one:
        for sec in one["sections"]:
            sec["table"] = section_table(sec)
    from gpuparity.comparison.verdict import band_range

    tol = ctx["tolerance"]
    return template.render(
        one=one, not_ok=not_ok_table(one["not_ok"]) if one and one["not_ok"] else None,
        machine=machine_table(one["machine"]) if one and one["machine"] else None,
        counts_line=counts_text(ctx["headline"]) if ctx["headline"] else None,
        title=ctx["title"], generated=datetime.now(timezone.utc).isoformat(timespec="seconds"), version=__version__,
        sides=sides, result=result, names=ctx["names"], headline=ctx["headline"],
        tol_pct=f"{100 * tol:g}% on the log scale ({band_range(tol)})",      # "parity band ±{{ tol_pct }}"
        single_line=None if result else _single_side_line(ctx["plot_sides"][0]),
        platforms=platforms_table(sides),
        geomeans=geomean_table(result) if result and result.get("geomean") else None,
        results=results_table(rows) if rows else None, rows_shown=len(rows),
        not_compared=not_compared_table(result["not_compared"]) if result and result["not_compared"] else None,
        per_dollar=per_dollar, per_watt=per_watt, price_note=ctx["price_note"],
        serving_equal=serving_equal_table(result["serving"]) if result and result.get("serving") else None,
        serving_blocks=serving_blocks,
        charts=[c for c in charts if c["anchor"] != "serving-curves" and not c.get("section")],
        section_charts={c["anchor"]: c for c in charts if c.get("section")},
        serving_chart=next((c for c in charts if c["anchor"] == "serving-curves"), None),
        claims=_claims_view(ctx["claims"]), fp_diff=fp_diff, method=METHOD,
        plotlyjs=plotlyjs.script([f["figure"] for f in figures]), figures_json=_script_json(figures),
        params=plots._params,
    )


def render_markdown(ctx: dict) -> str:
    from gpuparity.report.markdown import (
        claims_markdown,
        compare_markdown,
        one_run_markdown,
        serving_markdown,
    )

    out = []
    if ctx["result"]:
        out.append(compare_markdown(ctx["result"], ctx["title"], max_rows=MAX_TABLE_ROWS))     # as the HTML
    else:
        out.append(one_run_markdown(ctx["one"], ctx["title"], ctx["summaries"][0]))
    if any(per for _, _, per in ctx["serving_sides"]):
        out.append(serving_markdown(ctx["serving_sides"]))
    if ctx["claims"] is not None:
        out.append(claims_markdown(ctx["claims"]))
    return "\n".join(out)
