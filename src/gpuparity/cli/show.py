"""`gpuparity show RUN`: one stored run."""

from __future__ import annotations

from typing import Optional

import click
import typer

from gpuparity.cli.common import console, db_option, escape
from gpuparity.cli.output import Output, format_option, json_option, output_option

PEERS = ("vllm", "guidellm", "aiperf")       # results/serving_table.PEERS, without importing it at start-up


def register(app: typer.Typer) -> None:
    @app.command("show")
    def show(
        run: str = typer.Argument("latest", help="Run id, a unique prefix, or 'latest'."),
        db: Optional[str] = db_option(),
        out_format: str = format_option(("table", "json"), help="json: the whole run document."),
        output: Optional[str] = output_option(),
        as_json: bool = json_option(),
        rows: int = typer.Option(200, "--rows", min=0, help="Show at most this many results (0: all)."),
        wide: bool = typer.Option(False, "--wide", help="Every column and every parameter, however wide."),
        names: Optional[str] = typer.Option(None, "--names", click_type=click.Choice(PEERS),
                                            help="Beside each serving figure, its name in this tool's output "
                                                 "(vllm bench serve, guidellm, aiperf)."),
    ) -> None:
        """Show a run: its platform and its results."""
        from gpuparity.execute.journal import recover
        from gpuparity.results.store import Store

        sink = Output(out_format, output, as_json, db=db)      # the guard, before any work
        recover(console(stderr=True), db=db)     # a run whose process died is stored from its journal first
        with Store(db) as store:
            doc = store.get_run(run)
        warn = console(stderr=True)
        if doc.get("evidence_warning"):
            warn.print(f"[yellow]warning: {escape(doc['evidence_warning'])}[/]")
        if (doc.get("recomputed") or {}).get("count"):
            first = (doc["recomputed"].get("changes") or [""])[0]
            warn.print(f"[yellow]note: {doc['recomputed']['count']} stated figure(s) differed from the samples; "
                       f"shown as the samples give them (first: {escape(first)})[/]")
        if sink.json:
            sink.print_json(doc, f"{len(doc['results'])} results")
            return
        with sink.writing():
            print_run(doc, rows, wide, names)


def print_run(doc: dict, rows: int, wide: bool, names: str | None) -> None:
    fp = doc["fingerprint"]
    label = f" label [bold]{escape(doc['label'])}[/]" if doc.get("label") else ""
    imported = doc.get("imported") if isinstance(doc.get("imported"), dict) else None
    where = (f"imported from {escape(imported.get('tool'))} {escape(imported.get('version') or '')} "
             f"({escape(imported.get('file'))})" if imported else
             f"{escape(fp.get('product'))} ({escape(fp.get('backend'))}, torch {escape(fp.get('torch_version'))})")
    console().print(
        f"[bold]{escape(doc['run_id'])}[/]{label} {escape(doc['started_at'])} {escape(doc.get('status'))}  "
        f"{where} on {escape(doc.get('host'))}")
    from gpuparity.cli.tables import print_run_rows

    print_run_rows(doc, rows=rows, wide=wide)
    print_extras(doc, rows, names=names)
    for line in server_lines(doc):      # who served the serving results, and its accuracy beside their speed
        console().print(escape(line))
    from gpuparity.platform.machine import contention_lines

    for line in contention_lines(doc):       # the load its results were timed beside, what it means
        console().print(f"[yellow]note: {escape(line)}[/]")


def server_lines(doc: dict) -> list[str]:
    """Per server of a run's serving results: its identity, its accuracy eval's score, whose power."""
    from gpuparity.results.server_identity import identity_text, server_key
    from gpuparity.workloads.serving.accuracy import accuracy_text

    seen: dict = {}
    for r in doc.get("results") or []:
        info = r.get("info") or {}
        if r.get("category") == "serving" and "server_identity" in info:
            ident = info.get("server_identity") or {}
            seen.setdefault(server_key(ident), (ident, info.get("accuracy"), info.get("power_scope")))
    out = []
    for ident, acc, power in seen.values():
        out.append(f"server: {identity_text(ident)}")
        out.append(f"accuracy: {accuracy_text(acc)}")
        if power:
            out.append(f"power: {power}")
    return out


def print_extras(doc: dict, rows: int = 0, stderr: bool = False, names: str | None = None) -> None:
    """Result-specific tables (e.g. a serving sweep's curve) that workloads attach as info.table;
    names: a serving summary with that peer's name for each figure beside it (serving_table)."""
    from rich.table import Table

    shown = 0
    for r in doc["results"][:rows] if rows else doc["results"]:
        table = (r.get("info") or {}).get("table")
        if not table or not table.get("columns"):
            continue
        if names:
            from gpuparity.results.serving_table import named_table

            named = named_table(r, names)
            table, shown = (named, shown + 1) if named else (table, shown)
        t = Table(title=escape(f"{r['workload']}: {table.get('title', '')}"))
        for c in table["columns"]:
            t.add_column(escape(c))
        for row in table.get("rows", []):
            t.add_row(*[escape(v) for v in row])
        console(stderr=stderr).print(t)
    if shown:
        from gpuparity.results.serving_table import DEFAULTS_NOTE

        console(stderr=stderr).print(escape(DEFAULTS_NOTE))
