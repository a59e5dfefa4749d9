"""`gpuparity compare A B`: B relative to A per result, with CIs, verdicts and normalised views.

A side is an exported JSON run file, a SQLite store file, a run id (or prefix, or 'latest') in
--db, or a filter such as 'gpu=mi300x,stack=rocm' (keys: gpu, stack, host, since, label, job, db); or leave
A/B out and use --gpu-a/--stack-a/--gpu-b/--stack-b.
"""

from __future__ import annotations

from typing import List, Optional

import click
import typer

from gpuparity.cli.common import console, db_option, escape, print_json
from gpuparity.cli.output import Output, format_option, json_option, output_option
from gpuparity.errors import UserError

FORMATS = ("table", "markdown", "csv", "json")


def parse_fraction(text: str, option: str) -> float:
    """'5%', '5' or '0.05' -> 0.05: a bare number of 1 or more is a percentage (no fraction is)."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UserError(f"{option} takes a fraction or a percentage (0.05 or 5%), got '{text}'") from None
    if not raw.endswith("%") and 1 <= value < 100:
        value /= 100
    if not 0 <= value < 1:
        raise UserError(f"{option} must be between 0 and 100%, got '{text}'")
    return value


def price_options(basis: str, prices: list[str] | None):
    from gpuparity.platform.prices import PriceBook, parse_price_args

    return PriceBook(basis, parse_price_args(prices))


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare(
        a: Optional[str] = typer.Argument(None, help="Side A (baseline): run file, store file, run id or filter."),
        b: Optional[str] = typer.Argument(None, help="Side B: compared against A (ratio = B / A)."),
        db: Optional[str] = db_option(),
        gpu_a: Optional[str] = typer.Option(None, "--gpu-a", help="Side A: spec id or product (exact; end with * for a prefix)."),
        stack_a: Optional[str] = typer.Option(None, "--stack-a", help="Side A: stack, whole version parts (rocm, cuda 12, rocm 6.2.4)."),
        gpu_b: Optional[str] = typer.Option(None, "--gpu-b"),
        stack_b: Optional[str] = typer.Option(None, "--stack-b"),
        since: Optional[str] = typer.Option(None, "--since", help="Only runs started at or after (ISO date)."),
        host: Optional[str] = typer.Option(None, "--host", help="Only runs from this host."),
        tolerance: str = typer.Option("5%", "--tolerance", "-t", help="Parity band around 1 (5% or 0.05)."),
        output_format: str = format_option(FORMATS, help="table for a terminal, markdown for chats, csv or json "
                                           "for tools."),
        output: Optional[str] = output_option(),
        as_json: bool = json_option(),
        spread: Optional[str] = typer.Option(
            None, "--run-spread", help="Run-to-run spread assumed for a side with one run (default: from the store's "
                                       "earlier runs of its product, stack, driver and torch on other occasions, "
                                       "else 8% for kernels and models, 10% serving, 12% comm, with 2 df; a "
                                       "spread set here is taken as known; or $GPUPARITY_RUN_SPREAD)."),
        history: bool = typer.Option(True, "--history/--no-history",
                                     help="Learn a one-run side's run-to-run spread from earlier runs in its store "
                                          "(file sides: the default store, if it exists)."),
        max_rows: int = typer.Option(200, "--rows", min=0,
                                     help="table, markdown: show at most this many result rows (0: all); csv, json: all."),
        price_basis: str = typer.Option("neocloud", "--price-basis",
                                        click_type=click.Choice(["hyperscaler", "neocloud", "3yr-rental",
                                                                 "on-demand-typical"]),
                                        help="Price book column for $ per GPU-hour."),
        price: Optional[List[str]] = typer.Option(None, "--price", help="GPU price override gpu=USD_per_hour."),
        fail_if_slower: Optional[str] = typer.Option(
            None, "--fail-if-slower",
            help="Exit 1 if any result or category mean is slower than this (5% or 5) with confidence "
                 "(Holm-adjusted over all of them, one-sided 2.5%), or if nothing can be judged (a contended "
                 "side; every result flagged). Flagged results are not judged."),
        wide: bool = typer.Option(False, "--wide", help="table: every column and every parameter, however wide."),
        cross_config: bool = typer.Option(False, "--cross-config",
                                          help="serving: give verdicts between servers configured differently (model, "
                                               "precision, quantisation, parallelism), labelled a cross-configuration "
                                               "comparison (default: no verdict where they differ)."),
    ) -> None:
        """Compare platform B with platform A: ratio B/A with 95% CI and a verdict per result.

        A side is an exported JSON run file, a SQLite store file, a run id (prefix or 'latest') in
        --db, or a filter 'gpu=mi300x,stack=rocm' (keys: gpu, stack, host, since, label, job, db). Several runs
        on a side are pooled by result key. Exit status: 0, 1 with --fail-if-slower when slower or
        when the gate cannot judge, 2 on bad input.
        """
        from gpuparity.comparison.compare import compare_sides
        from gpuparity.comparison.gate import regression_gate
        from gpuparity.comparison.sides import load_side

        if output_format not in FORMATS:
            raise UserError(f"--format must be one of {', '.join(FORMATS)}")
        from gpuparity.validate import iso_date

        since = iso_date(since)         # checked whatever the sides are (files ignore it, a typo must not pass)
        tol = parse_fraction(tolerance, "--tolerance")
        threshold = parse_fraction(fail_if_slower, "--fail-if-slower") if fail_if_slower else None
        floor = parse_fraction(spread, "--run-spread") if spread else None
        if not (a or gpu_a or stack_a) or not (b or gpu_b or stack_b):
            raise UserError("name two sides: gpuparity compare A B (run files, run ids, or gpu=..,stack=.. filters)"
                            " or --gpu-a/--stack-a and --gpu-b/--stack-b")
        prices = price_options(price_basis, price)
        from gpuparity.cli.common import side_files

        files, side_stores = side_files(a, b)
        sink = Output(output_format, output, as_json, db=db, inputs=tuple(files), stores=tuple(side_stores))
        from gpuparity.results.store import StorePool

        with StorePool() as stores:         # each store opened once for both sides
            side_a = load_side(a, "A", db, stores, gpu=gpu_a, stack=stack_a, since=since, host=host)
            side_b = load_side(b, "B", db, stores, gpu=gpu_b, stack=stack_b, since=since, host=host)
            result = compare_sides(side_a, side_b, tol, prices, floor=floor, history="auto" if history else None,
                                   stores=stores, cross_config=cross_config)
        if threshold is not None:
            result["gate"] = regression_gate(result, threshold)
        with sink.writing(lambda _: f"{len(result['rows'])} rows"):
            emit(result, sink.format, max_rows, wide)
        gate = result.get("gate")
        if gate is not None:
            import sys

            print(gate_text(gate, result), file=sys.stderr)
            if not gate["passed"]:      # a gate that could not judge fails too: CI must not read it as a pass
                raise typer.Exit(1)


def gate_text(gate: dict, result: dict) -> str:
    """What --fail-if-slower prints: passed, failed (naming the results), or could not judge."""
    from gpuparity.validate import terminal_safe

    threshold = gate["threshold"]
    limit = 1 - threshold
    nj = gate.get("not_judged") or {}
    why = ", ".join(f"{n} {w}" for w, n in sorted((nj.get("why") or {}).items(), key=lambda x: -x[1]))
    held = (f"; {nj['results']} result(s) and {nj['means']} category mean(s) not judged ({why})"
            if nj.get("results") or nj.get("means") else "")
    if gate.get("contended"):
        busy = "; ".join(f"side {c['side']} was contended ({'; '.join(c.get('reasons') or []) or 'busy'})"
                         for c in result.get("contended") or [])
        return (f"regression gate could not judge: {terminal_safe(busy)}: no result can show B slower or not; "
                "rerun it on a quiet machine")
    if not gate.get("judged", True):
        return (f"regression gate could not judge: no result or category mean can carry a verdict"
                f" ({why or 'no result in common'}); rerun the flagged cases")
    if gate["passed"]:
        return (f"regression gate passed: no result or category geomean is below {limit:.3f}x A "
                f"with confidence ({gate['method']}){held}")
    bad = [terminal_safe(f"{f['workload']} {params_text(f['params'])} {f['dtype'] or ''}".strip())
           + (f" ({f['ratio']:.3f}x, CI up to {f['ci_high']:.3f})" if f["ci_high"] is not None
              else f" ({f['ratio']:.3f}x)") for f in gate["failed"]]
    return (f"regression gate failed: {len(bad)} below {limit:.3f}x A (more than {threshold:.0%} slower) "
            f"with confidence ({gate['method']}): " + "; ".join(bad[:10])
            + (f"; and {len(bad) - 10} more" if len(bad) > 10 else "") + held)


def emit(result: dict, output_format: str, max_rows: int = 0, wide: bool = False) -> None:
    if output_format == "json":
        print_json(result)
    elif output_format == "csv":
        write_csv(result["rows"])
    elif output_format == "markdown":
        from gpuparity.report.markdown import compare_markdown

        print(compare_markdown(result, max_rows=max_rows))
    else:
        print_table(result, max_rows, wide)


def write_csv(rows: list[dict]) -> None:
    import csv
    import json
    import sys

    from gpuparity.validate import spreadsheet_safe

    fields = list(dict.fromkeys(k for r in rows for k in r))     # "note" is on some rows only
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(fields)
    w.writerows([spreadsheet_safe(json.dumps(v, sort_keys=True) if isinstance(v, dict) else v)
                 for v in map(r.get, fields)] for r in rows)


def params_text(params: dict) -> str:
    from gpuparity.report.labels import params_text as text

    return text(params)


def ratio_text(ratio, lo, hi) -> str:
    from gpuparity.cli.tables import ratio_text as text

    return text(ratio, lo, hi)




def side_line(s: dict) -> str:
    from gpuparity.comparison.headline import side_title, spread_text

    price = f"${s['usd_per_hour']:.2f}/GPU-h" if s.get("usd_per_hour") else "price unknown"
    labels = s.get("labels") or []
    label = f" label {', '.join(labels)};" if len(labels) > 1 else ""
    spread = f"; run-to-run spread: {spread_text(s)}" if spread_text(s) else ""
    load = (s.get("load") or {}).get("text") if isinstance(s.get("load"), dict) else None
    return (f"{side_title(s, s['label'])}: {', '.join(s['products']) or '-'} ({', '.join(s['stacks']) or '-'};"
            f" torch {', '.join(s['torch']) or '-'}) on {', '.join(s['hosts']) or '-'};{label}{fleet(s)}"
            f" {len(s['run_ids'])} run(s), {s.get('trials_per_result', 0):g} trial(s) per result;"
            f" {price}; power: {s['power']}{spread}" + (f"; {load}" if load else ""))


def fleet(s: dict) -> str:
    """' SLURM job 12345 on nodes n1, n2;' for a side of fleet runs (gpuparity submit)."""
    if not s.get("jobs"):
        return ""
    return f" SLURM job {', '.join(s['jobs'])} on node{'s' if len(s['nodes']) > 1 else ''} {', '.join(s['nodes'])};"


def print_table(result: dict, max_rows: int = 0, wide: bool = False) -> None:
    from rich.table import Table

    from gpuparity.cli.tables import VERDICT_STYLE, Col, print_compare_rows, render
    from gpuparity.comparison.headline import counts_text, headline
    from gpuparity.comparison.server_checks import server_check_lines, servers_block
    from gpuparity.comparison.verdict import band_text
    from gpuparity.results.figure_text import figure, ratio

    con = console()
    for s in result["sides"].values():
        con.print(escape(side_line(s)))
    for line in servers_block(result):          # who served, and whether they answered alike: before any verdict
        con.print(f"[bold]{escape(line)}[/]")
    h = headline(result)
    con.print(f"[bold]{escape(h['text'])}[/]")
    con.print(escape(counts_text(h)))
    if h["scope"]:
        con.print(escape(h["scope"]))
    for note in result.get("notes") or []:
        if note not in server_check_lines(result):
            con.print(f"[yellow]note: {escape(note)}[/]")
    rows = result["rows"][:max_rows] if max_rows else result["rows"]
    if rows:
        print_compare_rows(rows, f"B / A per result, 95% CI; {band_text(result['tolerance'])}", wide)
    if len(rows) < len(result["rows"]):
        counts, method = h["counts"], h["counts_method"]
        con.print(f"... {len(result['rows']) - len(rows):,} more rows not shown (all {len(result['rows']):,}: "
                  + ", ".join(f"{n:,} {v}" for v, n in counts.items())
                  + (f"; {method}" if method else "; each row's own verdict, not adjusted for multiplicity")
                  + "); --rows 0 shows all, --format csv or json writes all")
    if result["geomean"]:
        geo = list(result["geomean"].items())
        from gpuparity.comparison.headline import category_name, mean_verdict

        render([Col("category", [category_name(c, e) for c, e in geo]),
                Col("n", [str(e["n"]) for _, e in geo], justify="right"),
                Col("B/A [95% CI]", [ratio_text(e["ratio"], e["ci_low"], e["ci_high"]) for _, e in geo],
                    justify="right"),
                Col("verdict", [mean_verdict(e) for _, e in geo],
                    styles=[VERDICT_STYLE.get(e["verdict"], "") for _, e in geo]),
                Col("per peak", [ratio(e.get("ratio_per_peak")) or "-" for _, e in geo], 1, "right"),
                Col("per $", [ratio(e.get("ratio_per_dollar")) or "-" for _, e in geo], 2, "right"),
                Col("per W", [ratio(e.get("ratio_per_watt")) or "-" for _, e in geo], 3, "right")],
               "Geometric mean of B / A per category", wide)
    if result["serving"]:
        from gpuparity.comparison.serving_compare import throughput_header

        s = Table(title="Serving: throughput at equal interactivity (Pareto curves)")
        # which configuration gives each side's envelope at the level: shown where any is named
        named = [side for side in ("a", "b") if any(p.get(f"{side}_config") for p in result["serving"])]
        for col in ("curve", "tok/s per user", throughput_header(result["serving"], "a"),
                    throughput_header(result["serving"], "b"), *(f"{x.upper()} config" for x in named),
                    "B/A [95% CI]", "verdict"):
            s.add_column(col)
        for p in result["serving"]:
            held = f" ({p['held']})" if p.get("held") else ""
            s.add_row(escape(p["curve_key"]), figure(p.get("interactivity")) or "-", figure(p.get("a_throughput")) or "-",
                      figure(p.get("b_throughput")) or "-", *(escape(p.get(f"{x}_config") or "-") for x in named),
                      ratio_text(p.get("ratio"), p.get("ci_low"), p.get("ci_high")),
                      escape((p.get("verdict") or p.get("note") or "") + held))
        con.print(s)
    for name, title in (("only_a", "only in A"), ("only_b", "only in B")):
        if result[name]:
            con.print(f"{title} ({len(result[name])}): " + escape(", ".join(
                f"{r['workload']} {params_text(r['params'])}" for r in result[name][:20]))
                + (" ..." if len(result[name]) > 20 else ""))
    from collections import Counter

    sides = Counter((r["key"], r["status"], r["reason"]) for r in result["not_compared"])
    said = set()       # a case skipped on both sides for one reason is said once
    for r in result["not_compared"]:
        case = f"{r['workload']} {params_text(r['params'])} {r['dtype'] or ''}".strip()
        ident = (r["key"], r["status"], r["reason"])
        if ident in said:
            continue
        both = sides[ident] > 1
        said.add(ident)
        if r["status"] == "units differ":          # comparison/units.py: no ratio between unlike units
            con.print(escape(f"not compared: {case}: {r['reason']}"))
            continue
        where = "on both sides" if both else f"on {r['side']} (other side: {r['other_side']})"
        con.print(escape(f"not compared: {case} is {r['status']} {where}: {r['reason']}"))
