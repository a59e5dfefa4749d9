"""`gpuparity trend`: one platform across software versions, with change points."""

from __future__ import annotations

from typing import Optional

import click
import typer

from gpuparity.cli.common import console, db_option, escape, print_json
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
        tolerance: str = typer.Option("5%", "--tolerance", "-t", help="Change point: CI beyond 1 +- this."),
        output_format: str = typer.Option("table", "--format", "-f", click_type=click.Choice(FORMATS),
                                          help="Output format."),
    ) -> None:
        """Track one platform across versions, days or run labels and flag the changes."""
        from gpuparity.cli.compare import parse_fraction
        from gpuparity.comparison.sides import resolve_runs
        from gpuparity.comparison.trend import trend
        from gpuparity.results.store import Store

        tol = parse_fraction(tolerance, "--tolerance")
        origin, docs, ids = resolve_runs(side, db, gpu=gpu, stack=stack, host=host, since=since)
        if docs is not None:
            raise UserError("trend reads stored runs: import run files first (gpuparity import FILE)")
        with Store(origin) as store:
            result = trend(store, ids, by, tol)
        if len(result["versions"]) < 2:
            raise UserError(f"only one run matches ({result['versions'][0]['runs'][0]}): a trend needs two; run"
                            " the suite again (after an upgrade, or with run --label) and trend shows the change")
        if output_format == "json":
            print_json(result)
        elif output_format == "markdown":
            from gpuparity.report.markdown import trend_markdown

            print(trend_markdown(result))
        else:
            _print(result)


def _print(result: dict) -> None:
    from rich.table import Table

    from gpuparity.cli.compare import VERDICT_STYLE, params_text, ratio_text

    con = console()
    if result["note"]:
        con.print(f"[yellow]note:[/] {escape(result['note'])}")
    v = Table(title=f"Groups (by {result['by']}), oldest first")
    for col in (result["by"] if result["by"] != "all" else "version", "runs", "first run", "hosts"):
        v.add_column(col)
    for ver in result["versions"]:
        v.add_row(escape(ver["label"]), str(len(ver["runs"])), escape(ver["first"]), escape(", ".join(ver["hosts"])))
    con.print(v)
    t = Table(title=f"Steps: new / old (change point = CI outside 1 ±{result['tolerance']:.0%})")
    for col in ("from", "to", "category", "n", "new/old [95% CI]", "verdict", "faster", "slower", "inconclusive"):
        t.add_column(col)
    steps = result["steps"] + ([{**result["overall"], "from": "FIRST: " + result["overall"]["from"]}]
                               if result["overall"] else [])
    for s in steps:
        for cat, g in s["geomean"].items():
            t.add_row(escape(s["from"]), escape(s["to"]), escape(cat), str(g["n"]),
                      ratio_text(g["ratio"], g["ci_low"], g["ci_high"]),
                      f"[{VERDICT_STYLE[g['verdict']]}]{g['verdict']}[/]",
                      str(s["counts"]["faster"]), str(s["counts"]["slower"]), str(s["counts"]["inconclusive"]))
    con.print(t)
    for s in result["steps"]:
        for c in s["changes"][:10]:
            con.print(escape(f"change {s['from']} -> {s['to']}: {c['workload']} {params_text(c['params'])}"
                             f" {c['dtype'] or ''} x{c['ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}]"
                             f" ({c['verdict']})"))
