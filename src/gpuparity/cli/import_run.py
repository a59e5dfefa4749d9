"""`gpuparity import FILE...`: store exported or spooled runs (validated; idempotent by run id)."""

from __future__ import annotations

from typing import List, Optional

import typer

from gpuparity.cli.common import db_option


def register(app: typer.Typer) -> None:
    @app.command("import")
    def import_runs(
        files: List[str] = typer.Argument(..., help="Run documents (JSON, as `export` or a spool writes them)."),
        db: Optional[str] = db_option(),
        recompute: bool = typer.Option(False, "--recompute", help="Store a document whose stated figures disagree "
                                       "with its raw samples with the figures the samples give (flagged "
                                       "'recomputed'), instead of refusing it."),
    ) -> None:
        """Store exported or spooled runs: every file is validated first (its figures recomputed from
        its raw samples), each run is one transaction, and a run id already stored is left as it is."""
        from gpuparity.results.schema import load_run_file
        from gpuparity.results.store import Store

        docs = [load_run_file(f, recompute) for f in files]  # all valid, or nothing is written
        with Store(db) as store:
            for f, doc in zip(files, docs, strict=True):
                added = store.save_run(doc)
                typer.echo(f"{'imported' if added else 'already stored'}: {doc['run_id']} from {f}", err=True)
