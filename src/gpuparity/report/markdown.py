"""Markdown for pasting a comparison into an issue or a chat (GitHub-flavoured tables)."""

from __future__ import annotations

import html


def cell(value) -> str:
    """A table cell: no line breaks, pipes escaped, HTML neutralised."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    text = html.escape(str(value), quote=False).replace("|", "\\|")
    return " ".join(text.split())


def table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _params(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in (params or {}).items() if k != "dtype")


def _ci(ratio, lo, hi) -> str:
    if ratio is None:
        return "-"
    return f"{ratio:.3f} [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else f"{ratio:.3f}"


def sides_markdown(result: dict) -> str:
    rows = []
    for s in result["sides"].values():
        rows.append([s["label"], ", ".join(s["products"]), ", ".join(s["stacks"]), ", ".join(s["torch"]),
                     ", ".join(s["hosts"]), len(s["run_ids"]),
                     f"${s['usd_per_hour']:.2f}" if s.get("usd_per_hour") else "unknown", s["power"]])
    return table(["side", "product", "stack", "torch", "host", "runs", "$/GPU-h", "power"], rows)


def compare_markdown(result: dict, title: str = "gpuparity comparison", max_rows: int = 0) -> str:
    """The comparison as GitHub markdown; max_rows > 0 keeps the per-result table that short."""
    tol = result["tolerance"]
    out = [f"## {cell(title)}", "", sides_markdown(result), "",
           f"Ratio = B / A of throughput (higher is better); 95% bootstrap CI; parity band ±{tol:.0%}.", ""]
    if result["geomean"]:
        out += ["### Geometric means", "", table(
            ["category", "n", "B/A [95% CI]", "verdict", "per peak", "per $", "per W"],
            [[cat, g["n"], _ci(g["ratio"], g["ci_low"], g["ci_high"]), f"**{g['verdict']}**",
              g.get("ratio_per_peak"), g.get("ratio_per_dollar"), g.get("ratio_per_watt")]
             for cat, g in result["geomean"].items()]), ""]
    rows = result["rows"][:max_rows] if max_rows else result["rows"]
    out += ["### Per result", "", table(
        ["workload", "params", "dtype", "A", "B", "unit", "B/A [95% CI]", "verdict", "%peak A", "%peak B",
         "per $", "per W"],
        [[r["workload"], _params(r["params"]), r["dtype"], r["a_value"], r["b_value"], r["unit"],
          _ci(r["ratio"], r["ci_low"], r["ci_high"]), r["verdict"], r["a_pct_peak"], r["b_pct_peak"],
          r["ratio_per_dollar"], r["ratio_per_watt"]] for r in rows]), ""]
    if len(rows) < len(result["rows"]):
        out += [f"... {len(result['rows']) - len(rows):,} more results (`--format csv` or `json` lists all).", ""]
    if result["serving"]:
        out += ["### Serving at equal interactivity", "", table(
            ["curve", "tok/s per user", "A tok/s/GPU", "B tok/s/GPU", "B/A", "verdict"],
            [[p["curve_key"], p.get("interactivity"), p.get("a_throughput"), p.get("b_throughput"), p.get("ratio"),
              p.get("verdict") or p.get("note")] for p in result["serving"]]), ""]
    for name, label in (("only_a", "Only in A"), ("only_b", "Only in B")):
        if result[name]:
            out += [f"**{label}** ({len(result[name])}): " + cell(", ".join(
                f"{r['workload']} {_params(r['params'])} {r['dtype'] or ''}".strip() for r in result[name])), ""]
    if result["not_compared"]:
        out += ["### Not compared (failed or skipped)", "", table(
            ["side", "workload", "params", "dtype", "status", "reason", "other side"],
            [[r["side"], r["workload"], _params(r["params"]), r["dtype"], r["status"], r["reason"], r["other_side"]]
             for r in result["not_compared"]]), ""]
    return "\n".join(out)


def claims_markdown(claims: dict) -> str:
    if claims.get("error"):
        return f"### Claims\n\nclaims not evaluated: {cell(claims['error'])}\n"
    rows = [[c.get("id"), c.get("text"), c.get("verdict"),
             "; ".join(str(e.get("summary", "")) for e in c.get("evidence") or []), c.get("command")]
            for c in claims.get("items") or []]
    return "### Claims\n\n" + table(["id", "claim", "verdict", "evidence", "command"], rows) + "\n"


def trend_markdown(result: dict) -> str:
    out = [f"## gpuparity trend (by {cell(result['by'])})", ""]
    if result.get("note"):
        out += [f"> {cell(result['note'])}", ""]
    out += [table(["version", "runs", "first run"],
                  [[v["label"], len(v["runs"]), v["first"]] for v in result["versions"]]), ""]
    steps = result["steps"] + ([{**result["overall"], "from": "FIRST: " + result["overall"]["from"]}]
                               if result.get("overall") else [])
    rows = [[s["from"], s["to"], cat, g["n"], _ci(g["ratio"], g["ci_low"], g["ci_high"]), g["verdict"],
             s["counts"]["faster"], s["counts"]["slower"]] for s in steps for cat, g in s["geomean"].items()]
    out += [table(["from", "to", "category", "n", "new/old [95% CI]", "verdict", "faster", "slower"], rows), ""]
    changes = [[s["from"], s["to"], c["workload"], _params(c["params"]), c["dtype"],
                _ci(c["ratio"], c["ci_low"], c["ci_high"]), c["verdict"]]
               for s in result["steps"] for c in s["changes"]]
    if changes:
        out += ["### Change points", "", table(["from", "to", "workload", "params", "dtype", "new/old", "verdict"],
                                               changes), ""]
    return "\n".join(out)
