"""The self-contained HTML report of a report context (report/context.py builds it; its markdown
twin is report/markdown.render_markdown).

Everything is inside one file: plotly.js inline once (the smallest bundle that draws the
charts, compressed: report/plotlyjs.py), figures as JSON in one script. Strings
from runs and users are escaped by Jinja2's autoescape in HTML, by `plots.t` inside figures,
and the figures' JSON has <, > and & as \\u escapes so nothing can close the script element.

A section without data is left out, and so is a table column that is empty in every row
(report/grid.py): the reader sees what was measured, not a grid of dashes.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from importlib import resources

from gpuparity.comparison.headline import counts_text
from gpuparity.report import context, fingerprint, onerun, plots
from gpuparity.report.grid import soft
from gpuparity.report.script_json import script_json as _script_json
from gpuparity.report.tables import (
    claims_view,
    cost_tables,
    geomean_table,
    machine_table,
    not_compared_table,
    not_ok_table,
    platforms_table,
    results_table,
    section_table,
    serving_equal_table,
    serving_servers_table,
    serving_tables,
)

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


def _single_side_line(side: dict) -> str:
    results = side["results"]
    c = onerun.status_counts(results)
    parts = ", ".join(f"{n} {s}" for s, n in c.items() if n and s != "ok")
    return (f"One platform, {side['name']}: {c['ok']} of {len(results)} results ok" + (f" ({parts})" if parts else "")
            + ". Name a second side (gpuparity report A B) to compare.")


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
    # report --claims: one small chart per claim (claimed band, measured ratios), as `claims check -f html`
    from gpuparity.report.claims_html import claim_figures

    claim_charts = claim_figures((ctx["claims"] or {}).get("items") or [])
    figures += [{"id": c["id"], "figure": c["figure"]} for c in claim_charts]
    result = ctx["result"]
    sides = ctx["summaries"]
    if result:
        rows = result["rows"][:context.MAX_TABLE_ROWS]
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
        serving_servers=serving_servers_table(ctx["serving_servers"]) if ctx.get("serving_servers") else None,
        charts=[c for c in charts if not c.get("serving") and not c.get("section")],
        section_charts={c["anchor"]: c for c in charts if c.get("section")},
        serving_charts=[c for c in charts if c.get("serving")],
        claims=claims_view(ctx["claims"]), claim_charts=[c["id"] for c in claim_charts], fp_diff=fp_diff, method=METHOD,
        plotlyjs=plotlyjs.script([f["figure"] for f in figures]), figures_json=_script_json(figures),
        params=plots._params,
    )
