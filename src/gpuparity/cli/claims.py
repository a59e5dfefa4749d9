"""`gpuparity claims check`: vendor claims graded by size (supported / partly / not supported /
contradicted / mixed / untested / not testable / refused), with the measured size, the reasoning, the
evidence and the rows it rests on (each with its URL); -f html draws a chart per claim."""

from __future__ import annotations

import re
from typing import Optional

import typer

from gpuparity.cli.common import console, db_option, print_json
from gpuparity.cli.output import Output, format_option, json_option, output_option
from gpuparity.cli.reference import safe
from gpuparity.evidence.claims_views import measured_lines

sub = typer.Typer(help="Vendor claims checked against evidence.", no_args_is_help=True)

MAX_ROWS = 2  # evidence rows per kind and side in the table; json and markdown list all
MAX_MEASURED = 12  # checks listed per claim in the table's "measured" column
COLOURS = {"supported": "green", "partly": "yellow", "not supported": "magenta", "contradicted": "red",
           "mixed": "cyan", "untested": "dim", "not testable": "dim", "refused": "red"}
FORMATS = ("table", "json", "markdown", "html")


@sub.command("check")
def check_cmd(
    file: Optional[str] = typer.Argument(None, help="Claims YAML (default: the built-in rocm-vs-cuda-2025 set)."),
    db: Optional[str] = db_option(),
    out_format: str = format_option(FORMATS),
    output: Optional[str] = output_option(),
    as_json: bool = json_option(),
    port_report: Optional[str] = typer.Option(None, "--port-report", help="A `gpuparity port -f json` report."),
) -> None:
    """Give each claim a verdict with its reasoning and evidence, or the command that would settle it."""
    sink = Output(out_format, output, as_json, db=db, inputs=(file, port_report))     # the guard, first
    from gpuparity.evidence.claims import evaluate_claims
    from gpuparity.results.store import Store

    with Store(db) as store:
        results = evaluate_claims(store, file, port_report)
        extras = None
        if sink.format == "html":
            from gpuparity.evidence.claims_views import claims_extras

            extras = claims_extras(store)
    if sink.format == "html":
        from gpuparity.report.claims_html import render_claims_html

        text = render_claims_html(results, extras)
        sink.text(text, f"{len(results)} claims, {len(text) // 1024} KiB")
    else:
        with sink.writing(lambda _: f"{len(results)} claims"):
            if sink.format == "json":
                print_json(results)
            elif sink.format == "markdown":
                print(to_markdown(results), end="")
            else:
                print_table(results)
    refused = [r for r in results if r["verdict"] == "refused"]
    for r in refused:
        from gpuparity.validate import terminal_safe

        typer.echo(terminal_safe(f"claim {r['id']} refused: {r['reasoning'].removeprefix('Refused: ')}"), err=True)


def print_table(results: list[dict]) -> None:
    from rich.table import Table

    t = Table(title="Claims (ratio = subject / baseline; graded by the share of the claimed effect measured)",
              show_lines=True)
    for col, width in (("id", None), ("verdict", 13), ("claim", 34), ("measured", 34), ("reasoning and evidence", None)):
        t.add_column(col, no_wrap=col == "id", overflow="fold", max_width=width)
    for r in results:
        # The reasoning names the checks, what is missing and what would settle it; the rows follow.
        rest = [e for e in r["evidence"] if e.get("kind") != "check" and not e.get("missing")]
        shown, per_group = [], {}
        for e in rest:  # the first few of each kind and side (evidence comes best first)
            group = (e.get("kind"), e.get("side"))
            per_group[group] = per_group.get(group, 0) + 1
            if per_group[group] <= MAX_ROWS or len(rest) <= 2 * MAX_ROWS:
                shown.append(e)
        lines = [f"[bold]{safe(r['reasoning'])}[/bold]"]
        lines += [f"- {safe(e['summary'])}" for e in shown]
        if len(shown) < len(rest):
            lines.append(f"- ... {len(rest) - len(shown)} more (-f json lists all)")
        verdict = f"[{COLOURS[r['verdict']]}]{r['verdict']}[/]"
        claim = safe(r["text"])
        if r.get("expected"):
            claim += f"\n[dim]expected {safe(r['subject'] or 'score')}"
            claim += f" / {safe(r['baseline'])}" if r["baseline"] else ""
            claim += f": {safe(r['expected'])}[/dim]"
        measured = "\n".join(safe(x) for x in measured_lines(r, MAX_MEASURED)) or "-"
        t.add_row(safe(r["id"]), verdict, claim, measured, "\n".join(lines))
    c = console()
    c.print(t)
    counts = {v: sum(1 for r in results if r["verdict"] == v) for v in COLOURS}
    c.print(", ".join(f"{n} {v}" for v, n in counts.items() if n))
    if any(e.get("kind") == "mlperf" and e.get("note") for r in results for e in r["evidence"]):
        from gpuparity.evidence.mlperf import USAGE_NOTE

        c.print(f"[dim]MLPerf: {USAGE_NOTE}[/dim]")


def _fence(text: str) -> str:
    """A code fence longer than any backtick run in the text, so data cannot close it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def to_markdown(results: list[dict]) -> str:
    """Markdown in which every value from the claims file or the data is literal text."""
    from gpuparity.validate import markdown_safe as md

    out = ["# Claims check", ""]
    for r in results:
        out += [f"## {md(r['id'])}: {r['verdict']}", "", f"> {md(r['text'])}", ""]
        if r.get("source"):
            out += [f"Source: {md(r['source'])}", ""]
        if r.get("expected"):
            out += [f"Expected (subject / baseline): {md(r['expected'])}", ""]
        out += [f"**Reasoning:** {md(r['reasoning'])}", ""]
        if r.get("checks"):
            out += ["Measured:", ""] + [f"- {md(line)}" for line in measured_lines(r, 10**6)] + [""]
        out += [f"- {md(e['summary'])}" for e in r["evidence"]]
        if any(e.get("kind") == "mlperf" and e.get("note") for e in r["evidence"]):
            out += ["", f"MLPerf: {md(next(e['note'] for e in r['evidence'] if e.get('note')))}"]
        if r["command"]:
            from gpuparity.validate import terminal_safe

            command = "\n".join(terminal_safe(line) for line in r["command"].splitlines())
            fence = _fence(command)
            out += ["", "Settle with:", "", fence, command, fence]
        if r.get("note"):
            out += ["", f"Note: {md(r['note'])}"]
        out.append("")
    return "\n".join(out) + "\n"


def register(app: typer.Typer) -> None:
    app.add_typer(sub, name="claims")
