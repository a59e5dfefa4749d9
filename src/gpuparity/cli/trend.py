"""`gpuparity trend`: one platform across software versions, with change points."""

from __future__ import annotations

from typing import Optional

import click
import typer

from gpuparity.cli.common import console, db_option, escape, print_json
from gpuparity.cli.output import Output, format_option, json_option, output_option
from gpuparity.comparison.trend import BY
from gpuparity.errors import UserError

FORMATS = ["table", "markdown", "json"]


def register(app: typer.Typer) -> None:
    @app.command("trend")
    def trend_cmd(
        side: Optional[str] = typer.Argument(None, help="Filter such as 'gpu=mi300x,host=box1' (optional)."),
        db: Optional[str] = db_option(),
        gpu: Optional[str] = typer.Option(None, "--gpu", help="Only runs of this GPU (spec id or product)."),
        stack: Optional[str] = typer.Option(None, "--stack", help="Only runs of this stack (rocm, cuda, cpu)."),
        host: Optional[str] = typer.Option(None, "--host", help="Only runs on this host."),
        since: Optional[str] = typer.Option(None, "--since", help="Only runs started at or after (ISO date)."),
        by: str = typer.Option("all", "--by", click_type=click.Choice(BY),
                               help="Group runs by: stack, torch and driver versions together (all), one of them,"
                                    " the day they started (date), their `run --label` (label) or each run on its"
                                    " own (run; also what one group falls back to)."),
        tolerance: str = typer.Option("5%", "--tolerance", "-t", help="Parity band: 1/(1+t) to 1+t; a change point's CI lies outside it."),
        output_format: str = format_option(FORMATS),
        output: Optional[str] = output_option(),
        as_json: bool = json_option(),
        wide: bool = typer.Option(False, "--wide", help="Every column of the table, however wide."),
    ) -> None:
        """Track one platform across versions, days or run labels and flag the changes."""
        from gpuparity.cli.compare import parse_fraction
        from gpuparity.comparison.sides import resolve_runs
        from gpuparity.comparison.trend import trend
        from gpuparity.results.store import Store
        from gpuparity.validate import iso_date

        since = iso_date(since)
        tol = parse_fraction(tolerance, "--tolerance")
        from gpuparity.cli.common import side_files

        files, stores = side_files(side)
        sink = Output(output_format, output, as_json, db=db, inputs=tuple(files), stores=tuple(stores))  # the guard
        origin, docs, ids = resolve_runs(side, db, gpu=gpu, stack=stack, host=host, since=since)
        if docs is not None:
            raise UserError("trend reads stored runs: import run files first (gpuparity import FILE)")
        with Store(origin) as store:
            result = trend(store, ids, by, tol)
        if len(result["versions"]) < 2:
            raise UserError(f"only one run matches ({result['versions'][0]['runs'][0]}): a trend needs two; run"
                            " the suite again (after an upgrade, or with run --label) and trend shows the change")
        with sink.writing(lambda _: f"{len(result['steps'])} steps"):
            if sink.format == "json":
                print_json(result)
            elif sink.format == "markdown":
                from gpuparity.report.markdown import trend_markdown

                print(trend_markdown(result))
            else:
                _print(result, wide)


def _print(result: dict, wide: bool = False) -> None:
    from rich.table import Table

    from gpuparity.cli.compare import params_text
    from gpuparity.cli.tables import render
    from gpuparity.comparison.verdict import band_text

    con = console()
    if result["note"]:
        con.print(f"[yellow]note:[/] {escape(result['note'])}")
    v = Table(title=f"Groups (by {result['by']}), oldest first")
    for col in (result["by"] if result["by"] != "all" else "version", "runs", "first run", "hosts"):
        v.add_column(col)
    for ver in result["versions"]:
        v.add_row(escape(ver["label"]), str(len(ver["runs"])), escape(ver["first"]), escape(", ".join(ver["hosts"])))
    con.print(v)
    steps = result["steps"] + ([{**result["overall"], "from": "FIRST: " + result["overall"]["from"]}]
                               if result["overall"] else [])
    title = (f"Steps: new / old (change point = CI outside the {band_text(result['tolerance'])}; "
             "counts adjusted by Benjamini-Hochberg over each step's results)")
    dropped = render(step_cols(steps), title, wide)
    if dropped:
        con.print(escape(f"not shown for lack of width: {', '.join(dropped)} (--wide shows all)"))
    spreads: dict[str, int] = {}     # where one-run groups' run-to-run spread came from, once per source
    for s in steps:
        for text in s.get("spread", []):
            spreads[text] = spreads.get(text, 0) + 1
        for c in s.get("contended", []):
            con.print(f"[yellow]note:[/] {escape(s['to'] if c['side'] == 'B' else s['from'])} was contended: "
                      "no faster/slower in that step")
        for which, text in (s.get("load") or {}).items():
            con.print(f"[yellow]note:[/] {escape(s[which])}: {escape(text)}")
    for text, n in spreads.items():
        con.print(f"[yellow]note:[/] one run a group cannot measure its run-to-run spread: {escape(text)} "
                  f"({n} step(s)); a second run per group measures it")
    for s in result["steps"]:
        for c in s["changes"][:10]:
            con.print(escape(f"change {s['from']} -> {s['to']}: {c['workload']} {params_text(c['params'])}"
                             f" {c['dtype'] or ''} x{c['ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}]"
                             f" ({c['verdict']})"))


def step_cols(steps: list[dict]) -> list:
    """One row per step and category: the step wraps; its figure, CI and verdict are never cut
    (cli/tables.py); the counts are left out first when the terminal is narrow."""
    from gpuparity.cli.tables import VERDICT_STYLE, Col, ratio_text

    rows = [(s, cat, g) for s in steps for cat, g in s["geomean"].items()]
    return [
        Col("step (old -> new)", [f"{s['from']} -> {s['to']}" for s, _, _ in rows], flex=True),
        Col("category", [cat for _, cat, _ in rows]), Col("n", [str(g["n"]) for _, _, g in rows], justify="right"),
        Col("new/old [95% CI]", [ratio_text(g["ratio"], g["ci_low"], g["ci_high"]) for _, _, g in rows],
            justify="right"),
        Col("verdict", [g["verdict"] for _, _, g in rows], styles=[VERDICT_STYLE[g["verdict"]] for _, _, g in rows]),
        *[Col(k, [str(s["counts"][k]) for s, _, _ in rows], 1, "right") for k in ("faster", "slower", "inconclusive")],
    ]
