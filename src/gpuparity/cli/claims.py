"""`gpuparity claims check`: vendor claims marked supported / partly / contradicted / untested, with evidence."""

from __future__ import annotations

from typing import Optional

import typer

from gpuparity.cli.common import console, db_option, escape, print_json
from gpuparity.errors import UserError

sub = typer.Typer(help="Vendor claims checked against evidence.", no_args_is_help=True)

MAX_ROWS = 2  # evidence rows per kind and side in the table; json and markdown list all
COLOURS = {"supported": "green", "partly": "yellow", "contradicted": "red", "untested": "dim"}


@sub.command("check")
def check_cmd(
    file: Optional[str] = typer.Argument(None, help="Claims YAML (default: the built-in rocm-vs-cuda-2025 set)."),
    db: Optional[str] = db_option(),
    out_format: str = typer.Option("table", "--format", "-f", help="table | json | markdown"),
    port_report: Optional[str] = typer.Option(None, "--port-report", help="A `gpuparity port --json` report."),
) -> None:
    """Give each claim a verdict with its evidence, or the command that would settle it."""
    if out_format not in ("table", "json", "markdown"):
        raise UserError(f"unknown format '{out_format}'; choose table, json or markdown")
    from gpuparity.analysis.claims import evaluate_claims
    from gpuparity.results.store import Store

    with Store(db) as store:
        results = evaluate_claims(store, file, port_report)
    if out_format == "json":
        print_json(results)
    elif out_format == "markdown":
        print(to_markdown(results), end="")
    else:
        print_table(results)


def print_table(results: list[dict]) -> None:
    from rich.table import Table

    t = Table(title="Claims", show_lines=True)
    for col in ("id", "verdict", "claim", "evidence"):
        t.add_column(col, no_wrap=col in ("id", "verdict"))
    for r in results:
        checks = [e for e in r["evidence"] if e.get("kind") == "check"]
        rest = [e for e in r["evidence"] if e.get("kind") != "check"]
        shown, per_group = [], {}
        for e in rest:  # the first few of each kind and side (evidence comes best first)
            group = (e.get("kind"), e.get("side"))
            per_group[group] = per_group.get(group, 0) + 1
            if per_group[group] <= MAX_ROWS or len(rest) <= 2 * MAX_ROWS:
                shown.append(e)
        lines = [f"- {escape(e['summary'])}" for e in shown]
        if len(shown) < len(rest):
            lines.append(f"- ... {len(rest) - len(shown)} more (--format json lists all)")
        lines += [f"- {escape(e['summary'])}" for e in checks]
        if r["command"]:
            lines.append(f"[bold]settle with:[/bold] {escape(r['command'])}")
        verdict = f"[{COLOURS[r['verdict']]}]{r['verdict']}[/]"
        claim = escape(r["text"]) + f"\n[dim]expected {escape(r['subject'] or 'score')}"
        claim += f" / {escape(r['baseline'])}" if r["baseline"] else ""
        claim += f": {escape(r['expected'])}[/dim]"
        t.add_row(escape(r["id"]), verdict, claim, "\n".join(lines) or "-")
    c = console()
    c.print(t)
    counts = {v: sum(1 for r in results if r["verdict"] == v) for v in COLOURS}
    c.print(", ".join(f"{n} {v}" for v, n in counts.items()))
    if any(e.get("kind") == "mlperf" and e.get("note") for r in results for e in r["evidence"]):
        from gpuparity.analysis.mlperf import USAGE_NOTE

        c.print(f"[dim]MLPerf: {USAGE_NOTE}[/dim]")


def to_markdown(results: list[dict]) -> str:
    out = ["# Claims check", ""]
    for r in results:
        out += [f"## {r['id']}: {r['verdict']}", "", f"> {r['text']}", ""]
        if r.get("source"):
            out += [f"Source: {r['source']}", ""]
        out += [f"Expected (subject / baseline): {r['expected']}", ""]
        out += [f"- {e['summary']}" for e in r["evidence"]]
        if any(e.get("kind") == "mlperf" and e.get("note") for e in r["evidence"]):
            out += ["", f"MLPerf: {next(e['note'] for e in r['evidence'] if e.get('note'))}"]
        if r["command"]:
            out += ["", "Settle with:", "", "```", r["command"], "```"]
        if r.get("note"):
            out += ["", f"Note: {' '.join(str(r['note']).split())}"]
        out.append("")
    return "\n".join(out) + "\n"


def register(app: typer.Typer) -> None:
    app.add_typer(sub, name="claims")
