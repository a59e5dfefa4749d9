"""What the HTML and markdown reports show, built once from the sides (build): the comparison
(comparison/compare.py) or the one-platform view (report/onerun.py), each side's summary and
results, the charts (report/plots.py), the serving curves, the claims and the headline.

`compare_mod.compare_sides` is looked up when a report is built (tests wrap it)."""

from __future__ import annotations

from gpuparity.comparison import compare as compare_mod
from gpuparity.comparison.headline import headline
from gpuparity.comparison.side_summary import side_summary
from gpuparity.comparison.sides import side_from_runs
from gpuparity.report import onerun, plots, serving

MAX_TABLE_ROWS = 2000      # result rows a report's tables show, in HTML and markdown alike


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


SERVING_CAPTION = ("Every run (configuration) of a side, the envelope's points named by configuration (the "
                   "server's identity, else the run's label) and load (hover: every point), with 95% intervals on both axes (the total's: the output's relative "
                   "interval); lines: each side's envelope over all its runs, the best throughput reachable at "
                   "or above each interactivity, read straight between its points as the comparison reads it; "
                   "x: points with failed requests or unchecked token counts, left out of the envelope.")


def serving_charts(configs: list[tuple], prices: list) -> list[dict]:
    """The serving section's charts on InferenceX's axes: total and output tokens/s per GPU against
    tokens/s per user, and cost per million tokens from each side's price per GPU-hour."""
    if not any(pts for _, _, per in configs for pts in per.values()):
        return []
    out = [{"anchor": "serving-total", "title": "Total tokens/s per GPU vs interactivity", "serving": True,
            "fig": plots.serving_axes_chart(configs, "total"), "caption": SERVING_CAPTION},
           {"anchor": "serving-output", "title": "Output tokens/s per GPU vs interactivity", "serving": True,
            "fig": plots.serving_axes_chart(configs, "output"), "caption": SERVING_CAPTION}]
    priced = [(*c, usd) for c, usd in zip(configs, prices, strict=True)]
    if any(usd and any(p["per"] == "GPU" for pts in per.values() for p in pts) for _, _, per, usd in priced):
        out.append({"anchor": "serving-cost", "title": "Cost per million tokens vs interactivity", "serving": True,
                    "fig": plots.serving_cost_chart(priced),
                    "caption": "$ per million tokens (input + output) at each point's total tokens/s per GPU and "
                               "its side's price per GPU-hour (the price book; --price sets one); line: the "
                               "cheapest reachable at or above each interactivity. Points per server (no GPUs "
                               "given) have no per-GPU price and are left out, as is a side without a price."})
    return out


def side_input(source, label: str) -> tuple:
    """(Side, its newest result per key) of a report side: given as that pair when read from a
    store (the columns `compare` reads: cli/report.py; the Side knows its store), or made here
    from run documents."""
    if isinstance(source, tuple):
        return source
    return side_from_runs(source, label), _newest_results(source)


def build(docs_a, docs_b=None, tolerance: float = 0.05, prices=None,
          claims: dict | None = None, title: str | None = None, history: bool = False, stores=None,
          cross_config: bool = False) -> dict:
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
                                       history="auto" if history else None, stores=stores,
                                       **({"cross_config": True} if cross_config else {})) if docs_b else None
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
    configs = [(s["label"], s["short"], serving.config_curves(side)) for s, side in zip(plot_sides, side_objs,
                                                                                           strict=True)]
    charts += serving_charts(configs, [s.get("usd_per_hour") for s in summaries])
    if title is None:
        title = "gpuparity: " + (f"{names['b']} vs {names['a']}" if docs_b else names["a"])
    return {"title": title, "summaries": summaries, "result": result, "names": names, "charts": charts,
            "one": one, "docs": run_docs if not docs_b else None,
            "serving_sides": serving_sides, "plot_sides": plot_sides,
            "serving_servers": serving.server_rows(side_objs, configs),
            "claims": claims, "tolerance": tolerance,
            "headline": headline(result) if result else None,
            "price_note": f"basis {prices.basis}; " + "; ".join(
                f"{s['label']}: {s['price_source']}" for s in summaries if s.get("price_source"))}
