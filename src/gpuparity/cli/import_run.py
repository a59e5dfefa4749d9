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
        gpus: Optional[int] = typer.Option(None, "--gpus", min=1, max=100_000,
                                           help="Peers' files: the GPUs behind the server they measured (figures "
                                                "per GPU; without it per server, never compared with per-GPU ones)."),
        label: Optional[str] = typer.Option(None, "--label", help="Peers' files: a label for the imported run."),
        platform: Optional[str] = typer.Option(None, "--platform",
                                               help="Peers' files: the server's stack, 'cuda [VERSION]', 'rocm "
                                                    "[VERSION]' or 'cpu' (without it the run lists as 'unknown')."),
        gpu_model: Optional[str] = typer.Option(None, "--gpu-model",
                                                help="Peers' files: the server's accelerator, e.g. 'H100 SXM' or "
                                                     "'MI300X' (over a vLLM file's gpu= metadata): its own datasheet "
                                                     "row or none, whose price per GPU-hour gives the cost per million "
                                                     "tokens (with --gpus)."),
    ) -> None:
        """Store exported or spooled runs, one file at a time: each document is validated (its figures
        recomputed from its raw samples), then written,
        and writes are committed in batches. A bad file stops the import there: the runs before it are
        stored, nothing from it on. A run id already stored is left as it is (run it again once fixed)."""
        from gpuparity.results.peers import load_import_file  # a peer's result file becomes a run document
        from gpuparity.results.peers.common import Declared
        from gpuparity.results.store import Store, check_writable
        from gpuparity.results.store_rows import RunWriter
        from gpuparity.validate import terminal_safe

        check_writable(db, "nothing imported; give a writable --db")      # a read-only share: said before reading
        declared = Declared(gpus, _label(label), _platform(platform), _gpu_model(gpu_model))
        done: list[str] = []            # lines of runs written since the last commit
        stored = [0]                    # runs committed (imported or found stored)

        def committed() -> None:
            for line in done:
                typer.echo(line, err=True)
            stored[0] += len(done)
            done.clear()

        store = writer = None           # the store is opened at the first good document
        try:
            for i, f in enumerate(files):
                try:
                    doc = load_import_file(f, recompute, declared)   # its figures recomputed from its samples
                except UserError as exc:
                    if writer is not None:
                        writer.commit()
                        committed()
                    if len(files) == 1:
                        raise
                    raise UserError(f"{exc} (import stopped there: {len(files) - i} of {len(files)} files not "
                                    "imported)") from None
                try:
                    if writer is None:
                        store = Store(db)
                        writer = RunWriter(store, 50_000, 1.0)      # commits in batches (Store.writer)
                    added = writer.save_run(doc)
                except UserError as exc:
                    raise _lost(exc, stored[0], len(files)) from None
                # a file name is the user's text: shown with its controls escaped (ESC, bidi)
                done.append(f"{'imported' if added else 'already stored'}: {doc['run_id']} from {terminal_safe(f)}")
                if not writer.pending:
                    committed()
                del doc                 # memory: one document at a time
            if writer is not None:
                try:
                    writer.end()
                except UserError as exc:
                    raise _lost(exc, stored[0], len(files)) from None
                writer = None
            committed()
        finally:
            if writer is not None:      # stopped (a bad file, the store lost, a signal): what is open rolls back
                try:
                    writer.end(RuntimeError("import stopped"))
                except Exception:  # noqa: BLE001 - the store is gone: nothing open to keep
                    pass
            if store is not None:
                store.close()


def _lost(exc: UserError, stored: int, total: int) -> UserError:
    """The store failed under an import (PostgreSQL stopped, a refused write): what it kept said."""
    return UserError(f"{exc}; stored {stored} of {total} runs; import again to add the rest (runs already "
                     "stored are kept)")


PLATFORM = r"^(cuda|rocm|cpu)( [0-9][0-9a-z.+-]{0,30})?$"


def _label(text: str | None) -> str | None:
    from gpuparity.validate import clean_text

    if text is None:
        return None
    try:
        return clean_text(text, "--label", 200)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _gpu_model(text: str | None) -> str | None:
    """The accelerator's name as given (matched to a datasheet row when the run is made)."""
    from gpuparity.validate import clean_text

    if text is None:
        return None
    try:
        name = " ".join(clean_text(text, "--gpu-model", 200).split())
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not name:
        raise UserError("--gpu-model: give the accelerator's name, e.g. 'H100 SXM' or 'MI300X'")
    return name


def _platform(text: str | None) -> str | None:
    """'rocm 6.4', 'cuda 12.8', 'cpu': the stack the imported run lists with."""
    import re

    if text is None:
        return None
    norm = " ".join(text.strip().lower().split())
    if not re.match(PLATFORM, norm):
        raise UserError(f"--platform {text[:60]!r}: give the server's stack as 'cuda [VERSION]', 'rocm [VERSION]' or "
                        "'cpu' (e.g. 'rocm 6.4')")
    return norm
