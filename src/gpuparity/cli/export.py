"""`gpuparity export RUN -o FILE`: the run document as JSON, to carry to another machine."""

from __future__ import annotations

import json
from typing import Optional

import typer

from gpuparity.cli.common import db_option


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export(
        run: str = typer.Argument(..., help="Run id, a unique prefix, or 'latest'."),
        output: str = typer.Option(..., "--output", "-o", help="File to write ('-' for stdout)."),
        db: Optional[str] = db_option(),
    ) -> None:
        """Write a stored run as a JSON document."""
        from gpuparity.results.store import Store

        with Store(db) as store:
            doc = store.get_run(run)
        text = json.dumps(doc, indent=1)
        if output == "-":
            print(text)
        else:
            with open(output, "w") as fh:
                fh.write(text)
            typer.echo(f"wrote {output} ({len(doc['results'])} results)", err=True)
