"""`gpuparity import FILE...`: store exported or spooled runs (validated; idempotent by run id)."""

from __future__ import annotations

from typing import List, Optional

import typer

from gpuparity.cli.common import db_option
from gpuparity.errors import UserError


def register(app: typer.Typer) -> None:
    @app.command("import")
    def import_runs(
        files: List[str] = typer.Argument(..., help="Run documents (JSON, as `export` or a spool writes them), or "
                                          "serving results of vllm bench serve, guidellm or aiperf."),
        db: Optional[str] = db_option(),
        recompute: bool = typer.Option(False, "--recompute", help="Store a document whose stated figures disagree "
                                       "with its raw samples with the figures the samples give (flagged "
                                       "'recomputed'), instead of refusing it."),
    ) -> None:
        """Store exported or spooled runs, one file at a time: each document is validated (its figures
        recomputed from its raw samples), then written,
        and writes are committed in batches. A bad file stops the import there: the runs before it are
        stored, nothing from it on. A run id already stored is left as it is (run it again once fixed)."""
        from contextlib import ExitStack

        from gpuparity.results.peers import load_import_file  # a peer's result file becomes a run document
        from gpuparity.results.store import Store
        from gpuparity.validate import terminal_safe

        done: list[str] = []            # lines of runs written since the last commit

        def committed() -> None:
            for line in done:
                typer.echo(line, err=True)
            done.clear()

        with ExitStack() as stack:
            writer = None               # the store is opened at the first good document
            for i, f in enumerate(files):
                try:
                    doc = load_import_file(f, recompute)   # its figures recomputed from its samples
                except UserError as exc:
                    if writer is not None:
                        writer.commit()
                        committed()
                    if len(files) == 1:
                        raise
                    raise UserError(f"{exc} (import stopped there: {len(files) - i} of {len(files)} files not "
                                    "imported)") from None
                if writer is None:
                    writer = stack.enter_context(stack.enter_context(Store(db)).writer())
                added = writer.save_run(doc)
                # a file name is the user's text: shown with its controls escaped (ESC, bidi)
                done.append(f"{'imported' if added else 'already stored'}: {doc['run_id']} from {terminal_safe(f)}")
                if not writer.pending:
                    committed()
                del doc                 # memory: one document at a time
        committed()
