"""Markdown for pasting a comparison into an issue or a chat (GitHub-flavoured tables)."""

from __future__ import annotations

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
from gpuparity.results import figure_text
from gpuparity.validate import markdown_safe


class Markup(str):
    """Markdown this module wrote itself (a verdict in bold): `cell` keeps it as it is."""


def cell(value) -> str:
    """Text for a table cell, heading or line: numbers formatted, everything else literal
    (validate.markdown_safe: no HTML, links, headings or table breaks from data)."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return figure_text.figure(value) or "-"
    if isinstance(value, Markup):
        return str(value)
    return markdown_safe(value)


def table(headers: list[str], rows: list[list], drop_empty: bool = False) -> str:
    """A GitHub table; drop_empty leaves out the columns that are empty in every row."""
    if drop_empty and rows:
        keep = [j for j in range(len(headers)) if any(row[j] not in (None, "") for row in rows)]
        headers, rows = [headers[j] for j in keep], [[row[j] for j in keep] for row in rows]
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _params(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in (params or {}).items() if k != "dtype")


def _ci(ratio, lo, hi) -> str | None:
    return figure_text.ratio_ci(ratio, lo, hi) or None


def _ratio(x) -> str | None:
    return figure_text.ratio(x) or None


def _pct(x) -> str | None:
    return figure_text.percent(x) or None


def sides_markdown(result: dict) -> str:
    rows = []
    for s in result["sides"].values():
        rows.append([s["label"], ", ".join(s.get("labels") or []), ", ".join(s["products"]), ", ".join(s["stacks"]),
                     ", ".join(s["torch"]), ", ".join(s["hosts"]), ", ".join(s.get("jobs") or []),
                     ", ".join(s.get("nodes") or []), len(s["run_ids"]),
                     f"${s['usd_per_hour']:.2f}" if s.get("usd_per_hour") else "unknown", s["power"],
                     spread_text(s), (s.get("load") or {}).get("text") if isinstance(s.get("load"), dict) else None])
    return table(["side", "label", "product", "stack", "torch", "host", "SLURM job", "nodes", "runs", "$/GPU-h",
                  "power", "run-to-run spread", "CPU load"], rows, drop_empty=True)




def answer_markdown(result: dict) -> list[str]:
    """The headline sentence, then the A/A note, warnings and the regression gate where present."""
    from gpuparity.comparison.server_checks import server_check_lines, servers_block

    h = headline(result)
    out = [f"- {cell(line)}" for line in servers_block(result)]     # who served, before any verdict
    out += [""] if out else []
    out += [f"**{cell(h['text'])}**", "", cell(counts_text(h)), ""]
    if h["scope"]:
        out += [cell(h["scope"]), ""]
    if h["aa_line"]:
        out += ["A/A: both sides have identical fingerprints; any difference is run-to-run noise.", ""]
    out += [f"> note: {cell(n)}" for n in result.get("notes") or [] if n not in server_check_lines(result)]
    if result.get("notes"):
        out.append("")
    gate = result.get("gate")
    if gate:
        failed = "; ".join(f"{f.get('workload')} {_params(f.get('params'))} {f.get('dtype') or ''}".strip()
                           for f in gate.get("failed") or [])
        out += [f"Regression gate ({gate.get('threshold', 0):.0%}): "
                + ("passed" if gate.get("passed") else f"**failed** on {cell(failed)}"), ""]
    return out


def compare_markdown(result: dict, title: str = "gpuparity comparison", max_rows: int = 0) -> str:
    """The comparison as GitHub markdown; max_rows > 0 keeps the per-result table that short."""
    from gpuparity.comparison.verdict import band_text

    tol = result["tolerance"]
    out = [f"## {cell(title)}", "", *answer_markdown(result), sides_markdown(result), "",
           f"Ratio = B / A of throughput (higher is better); 95% CI; {band_text(tol)}.", ""]
    if result["geomean"]:
        out += ["### Geometric means", "", table(
            ["category", "n", "B/A [95% CI]", "verdict", "trials A/B", "per peak", "per $", "per W"],
            [[category_name(cat, g), g["n"], _ci(g["ratio"], g["ci_low"], g["ci_high"]),
              Markup(f"**{cell(mean_verdict(g))}**"),
              pair(g.get("a_trials"), g.get("b_trials")), _ratio(g.get("ratio_per_peak")),
              _ratio(g.get("ratio_per_dollar")), _ratio(g.get("ratio_per_watt"))]
             for cat, g in result["geomean"].items()], drop_empty=True), ""]
    rows = result["rows"][:max_rows] if max_rows else result["rows"]
    out += ["### Per result", "", table(
        ["workload", "params", "dtype", "A", "B", "unit", "B/A [95% CI]", "verdict", "flags", "runs x trials A/B",
         "spread assumed A/B", "CPU load A/B", "%peak A", "%peak B", "per $", "per W"],
        [[r["workload"], _params(r["params"]), r["dtype"], r["a_value"], r["b_value"], r["unit"],
          _ci(r["ratio"], r["ci_low"], r["ci_high"]), r["verdict"], ", ".join(r.get("flags") or []) or None,
          f"{runs_x_trials(r, 'a')} / {runs_x_trials(r, 'b')}", side_pcts(r, "spread"), side_pcts(r, "load"),
          _pct(r.get("a_pct_peak")), _pct(r.get("b_pct_peak")),
          _ratio(r.get("ratio_per_dollar")), _ratio(r.get("ratio_per_watt"))] for r in rows], drop_empty=True), ""]
    if len(rows) < len(result["rows"]):
        out += [f"... {len(result['rows']) - len(rows):,} more results (`gpuparity compare --format csv` or `json`"
                " lists all).", ""]
    if result["serving"]:
        out += ["### Serving at equal interactivity", "", table(
            ["curve", "tok/s per user", throughput_header(result["serving"], "a"),
             throughput_header(result["serving"], "b"), "A config", "B config", "B/A [95% CI]", "verdict"],
            [[p["curve_key"], p.get("interactivity"), p.get("a_throughput"), p.get("b_throughput"),
              p.get("a_config"), p.get("b_config"),
              _ci(p["ratio"], p.get("ci_low"), p.get("ci_high")) if p.get("ratio") else None,
              p.get("verdict") or p.get("note")] for p in result["serving"]], drop_empty=True), ""]
    for name, label in (("only_a", "Only in A"), ("only_b", "Only in B")):
        if result[name]:
            named = result[name][:max_rows] if max_rows else result[name]
            more = f" ... and {len(result[name]) - len(named):,} more" if len(named) < len(result[name]) else ""
            out += [f"**{label}** ({len(result[name])}): " + cell(", ".join(
                f"{r['workload']} {_params(r['params'])} {r['dtype'] or ''}".strip() for r in named)) + more, ""]
    if result["not_compared"]:
        failed = result["not_compared"][:max_rows] if max_rows else result["not_compared"]
        out += ["### Not compared (failed, skipped, or per GPU against per server)", "", table(
            ["side", "workload", "params", "dtype", "status", "reason", "other side"],
            [[r["side"], r["workload"], _params(r["params"]), r["dtype"], r["status"], r["reason"], r["other_side"]]
             for r in failed]), ""]
        if len(failed) < len(result["not_compared"]):
            out += [f"... {len(result['not_compared']) - len(failed):,} more not compared.", ""]
    return "\n".join(out)


def one_run_markdown(one: dict, title: str, summary: dict) -> str:
    """One platform: what it reached against its datasheet, a table per workload, the skipped
    cases with reasons and the machine's state (the HTML report's sections, without charts)."""
    out = [f"## {cell(title)}", "", "**What this machine reached against its datasheet:**", ""]
    out += [f"- {cell(h['text'])}" for h in one["highlights"]] or ["- no result has a figure"]
    c = one["counts"]
    out += ["", cell(f"{c['ok']} of {sum(c.values())} results ok"
                     + "".join(f", {n} {k}" for k, n in c.items() if n and k != "ok") + "."), ""]
    out += [f"> warning: {cell(w)}" for w in one["busy"]]
    if one["busy"]:
        out.append("")
    out += [table(["label", "product", "spec", "stack", "torch", "hosts", "SLURM job", "nodes", "runs"], [[
        ", ".join(summary.get("labels") or []), ", ".join(summary["products"]), ", ".join(summary.get("spec_ids") or []),
        ", ".join(summary["stacks"]), ", ".join(summary["torch"]), ", ".join(summary.get("hosts") or []),
        ", ".join(summary.get("jobs") or []), ", ".join(summary.get("nodes") or []),
        len(summary["run_ids"])]], drop_empty=True), ""]
    for sec in one["sections"]:
        out += [f"### {cell(sec['title'])}", ""]
        if sec["constant"]:
            out += [f"Same in every row: {cell(sec['constant'])}.", ""]
        out += [table(["case", "dtype", "figure", "unit", "95% CI", "% of peak", "best shape", "trials", "flags",
                       *sec["extra_headers"]],
                      [[r["case"], r["dtype"], r["value"], r["unit"],
                        f"{figure_text.figure(r['ci_low'])} – {figure_text.figure(r['ci_high'])}" if r["ci_low"] is not None
                        and r["ci_high"] is not None else None, r["of_peak"], r["shape"], r["trials"], r["flags"],
                        *[r["extra"].get(h) for h in sec["extra_headers"]]] for r in sec["rows"]],
                      drop_empty=True), ""]
    if one["not_ok"]:
        out += [f"### Skipped and failed ({len(one['not_ok'])})", "", table(
            ["workload", "params", "dtype", "status", "reason"],
            [[r["workload"], r["params"], r["dtype"], r["status"], r["reason"]] for r in one["not_ok"]]), ""]
    if one["machine"]:
        out += ["### Machine state", "", table(
            ["run", "when", "time", "plan", "load average", "other processes' CPU share", "governor", "GPU",
             "warning"],
            [[m["run"], m["when"], m["time"], m["plan"], m["loadavg"], m["other"], m["governors"], m["gpu"],
              m["warnings"]] for m in one["machine"]], drop_empty=True), ""]
    fp = summary.get("fingerprint") or {}
    keys = ("product", "arch_target", "device_count", "driver_version", "cuda_version", "hip_version",
            "torch_version", "cpu_blas", "backend")
    out += ["### Fingerprint", "", table(["field", "value"], [[k, fp.get(k)] for k in keys if fp.get(k) is not None]),
            "", "The HTML report (`-f html`) lists every fingerprint field.", ""]
    return "\n".join(out)


def serving_markdown(sides: list[tuple[str, str, dict]]) -> str:
    """Per side and curve: each sweep point's summary with the median and p99 latencies."""
    from gpuparity.report import serving

    out = []
    for _, short, per_curve in sides:
        for ckey, points in per_curve.items():
            def lat(p, name, stat):
                return p["latency"].get(name, {}).get(stat)

            per = serving.per_text(points).replace("per ", "/")
            out += [f"### Serving: {cell(short)}, {cell(ckey)}", "", table(
                ["load", "completed", "failed", "invalid", f"output tok/s{per}", "tok/s/user", "TTFT ms median", "TTFT ms p99",
                 "TPOT ms median", "TPOT ms p99", "E2EL ms median", "goodput"],
                [[p["load"], p["completed"], p["failed"], p.get("invalid") or None, p["output_per_gpu"], p["interactivity"],
                  lat(p, "TTFT", "median"), lat(p, "TTFT", "p99"), lat(p, "TPOT", "median"), lat(p, "TPOT", "p99"),
                  lat(p, "E2EL", "median"), p["goodput"]] for p in points], drop_empty=True), ""]
    return "\n".join(out)


def claims_markdown(claims: dict) -> str:
    if claims.get("error"):
        return f"### Claims\n\nclaims not evaluated: {cell(claims['error'])}\n"
    rows = [[c.get("id"), c.get("text"), c.get("verdict"), c.get("reasoning"),
             "; ".join(str(e.get("summary", "")) for e in c.get("evidence") or [] if isinstance(e, dict)),
             c.get("command")]
            for c in claims.get("items") or []]
    return "### Claims\n\n" + table(["id", "claim", "verdict", "reasoning", "evidence", "to settle it"], rows,
                                      drop_empty=True) + "\n"


def trend_markdown(result: dict) -> str:
    out = [f"## gpuparity trend (by {cell(result['by'])})", ""]
    if result.get("note"):
        out += [f"> {cell(result['note'])}", ""]
    out += [table([result["by"] if result["by"] != "all" else "version", "runs", "first run"],
                  [[v["label"], len(v["runs"]), v["first"]] for v in result["versions"]]), ""]
    steps = result["steps"] + ([{**result["overall"], "from": "FIRST: " + result["overall"]["from"]}]
                               if result.get("overall") else [])
    rows = [[s["from"], s["to"], cat, g["n"], _ci(g["ratio"], g["ci_low"], g["ci_high"]), g["verdict"],
             s["counts"]["faster"], s["counts"]["slower"]] for s in steps for cat, g in s["geomean"].items()]
    out += [table(["from", "to", "category", "n", "new/old [95% CI]", "verdict", "faster", "slower"], rows), ""]
    if rows and steps[0].get("counts_method"):          # the counts are adjusted: say how
        out += [f"faster / slower: results per step, {cell(steps[0]['counts_method'])}", ""]
    changes = [[s["from"], s["to"], c["workload"], _params(c["params"]), c["dtype"],
                _ci(c["ratio"], c["ci_low"], c["ci_high"]), c["verdict"]]
               for s in result["steps"] for c in s["changes"]]
    if changes:
        out += ["### Change points", "", table(["from", "to", "workload", "params", "dtype", "new/old", "verdict"],
                                               changes), ""]
    return "\n".join(out)


def render_markdown(ctx: dict) -> str:
    """The markdown twin of the HTML report of a report context (report/context.build)."""
    from gpuparity.report.context import MAX_TABLE_ROWS  # read when called (tests lower it)

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
