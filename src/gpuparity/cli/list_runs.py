"""`gpuparity list`: stored runs."""

from __future__ import annotations

from typing import Optional

import typer

from gpuparity.cli.common import console, db_option, escape, print_json


def register(app: typer.Typer) -> None:
    @app.command("list")
    def list_runs(
        db: Optional[str] = db_option(),
        gpu: Optional[str] = typer.Option(None, "--gpu", help="Only runs of this GPU (spec id or product)."),
        stack: Optional[str] = typer.Option(None, "--stack", help="Only runs of this stack: cuda, rocm, cpu (prefix)."),
        since: Optional[str] = typer.Option(None, "--since", help="Only runs started at or after (ISO date)."),
        host: Optional[str] = typer.Option(None, "--host", help="Only runs on this host."),
        limit: int = typer.Option(50, "--limit", "-n", min=1, help="At most this many runs."),
        as_json: bool = typer.Option(False, "--json", help="Print the runs as JSON."),
    ) -> None:
        """List stored runs, newest first."""
        from gpuparity.results.journal import recover
        from gpuparity.results.store import Store
        from gpuparity.validate import iso_date

        since = iso_date(since)
        recover(console(stderr=True))     # a run whose process died is stored from its journal first
        with Store(db) as store:
            runs = store.list_runs(limit=limit, gpu=gpu, stack=stack, since=since, host=host)
            url = store.url
        if as_json:
            print_json(runs)
            return
        from rich.table import Table

        t = Table(title=f"runs in {escape(url)}")
        for col in ("run id", "started", "status", "host", "product", "spec", "stack", "results"):
            t.add_column(col)
        for r in runs:
            t.add_row(*[escape(r[k] if r[k] is not None else "-") for k in
                        ("run_id", "started_at", "status", "host", "product", "spec_id", "stack", "n_results")])
        console().print(t)
