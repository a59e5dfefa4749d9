"""The self-contained HTML report (and its markdown twin).

Everything is inside one file: plotly.js inline once, figures as JSON in one script. Strings
from runs and users are escaped by Jinja2's autoescape in HTML, by `plots.t` inside figures,
and the figures' JSON has <, > and & as \\u escapes so nothing can close the script element.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from importlib import resources

from gpuparity.analysis.compare import compare_sides, side_summary
from gpuparity.analysis.serving_compare import serving_curves
from gpuparity.analysis.sides import side_from_runs
from gpuparity.report import plots

MAX_TABLE_ROWS = 2000
METHOD = [
    "Each result is timed with device-synchronised events (perf_counter on a CPU) after a warm-up; every raw "
    "sample is kept. Throughput per sample = work per invocation / seconds.",
    "A side with several runs pools the samples of each result key; spec, power and serving info come from "
    "the newest run.",
    "Ratio = median(B) / median(A) of throughput. 95% CI: bootstrap of the ratio of medians (each side "
    "resampled independently; normal interval in log space from the exact order-statistic bootstrap variance).",
    "Verdict: faster or slower when the whole CI lies beyond 1 ± tolerance, parity when it lies within, "
    "inconclusive when it straddles a boundary or a side has fewer than 2 samples.",
    "Category geometric means combine the keys' bootstrap variances (results measured independently).",
    "Per spec peak: ratio × peak(A) / peak(B), dense datasheet peaks for the dtype (TFLOP/s) or memory "
    "bandwidth (GB/s); CPU peaks are estimates.",
    "Per dollar: ratio × price(A) / price(B) in $ per GPU-hour (price book basis, config file or --price). "
    "Per watt: measured mean power where valid telemetry exists, else datasheet TDP.",
    "Serving: throughput per GPU compared at equal interactivity (tokens/s per user) by linear interpolation "
    "along each side's Pareto curve; points with request errors are left out.",
    "Roofline: arithmetic intensity = FLOP / bytes per invocation; GEMM bytes are the minimum traffic "
    "(each of A, B, C moved once) where the workload did not report bytes.",
    "Prices are per GPU-hour and figures are taken as one GPU's throughput (serving figures are per GPU by "
    "definition); multi-GPU results are not divided by the device count.",
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
    return f"{summary['label']}: {', '.join(summary['products']) or '?'} ({', '.join(summary['stacks']) or '?'})"


def evaluate_claims(store, claims_file: str | None = None) -> dict:
    """{"items": [...]} from gpuparity.analysis.claims, or {"error": reason}."""
    try:
        from gpuparity.analysis import claims as claims_mod
    except ImportError as exc:
        return {"error": f"gpuparity.analysis.claims is not available ({exc})"}
    if store is None:
        return {"error": "no store to evaluate claims against"}
    try:
        return {"items": list(claims_mod.evaluate_claims(store, claims_file=claims_file))}
    except Exception as exc:  # the claims checker is another module: its failure must not lose the report
        return {"error": f"{type(exc).__name__}: {exc}"}


def build(docs_a: list[dict], docs_b: list[dict] | None = None, tolerance: float = 0.05, prices=None,
          claims: dict | None = None, title: str | None = None) -> dict:
    """Everything the HTML and markdown renderers need."""
    if prices is None:
        from gpuparity.analysis.prices import PriceBook

        prices = PriceBook(use_config=False)
    side_objs = [side_from_runs(docs_a, "A")] + ([side_from_runs(docs_b, "B")] if docs_b else [])
    summaries = [side_summary(s, prices) for s in side_objs]
    result = compare_sides(side_objs[0], side_objs[1], tolerance, prices) if docs_b else None
    names = {s["label"].lower(): _name(s) for s in summaries}
    plot_sides = []
    for s, docs in zip(summaries, [docs_a] + ([docs_b] if docs_b else []), strict=True):
        spec = (s.get("fingerprint") or {}).get("spec") or {}
        plot_sides.append({"label": s["label"], "name": _name(s), "results": _newest_results(docs), "spec": spec})
    charts = []
    if result and result["rows"]:
        charts.append(("Ratio per result", plots.ratio_chart(result)))
        if result["geomean"]:
            charts.append(("Raw, per peak, per dollar, per watt", plots.normalised_chart(result)))
    if plots.has_roofline(plot_sides):
        charts.append(("Roofline", plots.roofline_chart(plot_sides)))
    if plots.has_gemm(plot_sides):
        charts.append(("GEMM TFLOP/s by dtype", plots.gemm_chart(plot_sides)))
    curves = [(s.label, _name(sm), serving_curves(s)) for s, sm in zip(side_objs, summaries, strict=True)]
    if any(c[2] for c in curves):
        charts.append(("Serving throughput vs interactivity", plots.serving_chart(curves)))
    if title is None:
        title = "gpuparity: " + (f"{names['b']} vs {names['a']}" if docs_b else names["a"])
    return {"title": title, "summaries": summaries, "result": result, "names": names, "charts": charts,
            "claims": claims or {"error": "not requested"}, "tolerance": tolerance,
            "price_note": f"basis {prices.basis}; " + "; ".join(
                f"{s['label']}: {s['price_source']}" for s in summaries)}


def _num(x) -> str:
    if x is None or not isinstance(x, (int, float)) or x != x:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _ci(ratio, lo, hi) -> str:
    if ratio is None:
        return "-"
    return f"{ratio:.3f} [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else f"{ratio:.3f}"


def render_html(ctx: dict) -> str:
    import plotly.offline
    from jinja2 import Environment

    from gpuparity import __version__

    env = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
    template = env.from_string(
        resources.files("gpuparity.report").joinpath("templates/report.html.j2").read_text(encoding="utf-8"))
    figures = [{"id": f"chart-{i}", "figure": json.loads(fig.to_json())} for i, (_, fig) in enumerate(ctx["charts"])]
    result = ctx["result"]
    sides = []
    for s in ctx["summaries"]:
        sides.append({**s, "price_text": f"${s['usd_per_hour']:.2f}" if s.get("usd_per_hour") else "unknown",
                      "fingerprint_json": json.dumps(s.get("fingerprint"), indent=1, default=str)})
    counts = {}
    if result:
        for r in result["rows"]:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return template.render(
        title=ctx["title"], generated=datetime.now(timezone.utc).isoformat(timespec="seconds"), version=__version__,
        sides=sides, result=result, rows=(result["rows"][:MAX_TABLE_ROWS] if result else []), names=ctx["names"],
        counts=counts, tol_pct=f"{ctx['tolerance']:.0%}", charts=[{"id": f["id"], "title": c[0]}
                                                                  for f, c in zip(figures, ctx["charts"], strict=True)],
        claims=ctx["claims"], price_note=ctx["price_note"], method=METHOD,
        plotlyjs=plotly.offline.get_plotlyjs(), figures_json=_script_json(figures),
        num=_num, ci=_ci, params=plots._params,
        power=lambda w, src: f"{w:.0f} W ({src})" if w else "unknown",
    )


def render_markdown(ctx: dict) -> str:
    from gpuparity.report.markdown import claims_markdown, compare_markdown, table

    out = []
    if ctx["result"]:
        out.append(compare_markdown(ctx["result"], ctx["title"]))
    else:
        s = ctx["summaries"][0]
        out.append(f"## {ctx['title']}\n\n" + table(["product", "stack", "torch", "runs"], [[
            ", ".join(s["products"]), ", ".join(s["stacks"]), ", ".join(s["torch"]), len(s["run_ids"])]]) + "\n")
    out.append(claims_markdown(ctx["claims"]))
    return "\n".join(out)
