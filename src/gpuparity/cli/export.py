"""`gpuparity export RUN [-o FILE]`: the run document as JSON, to carry to another machine;
`--requests`: the serving benchmark's per-request records (JSON or CSV) instead, from which
every figure of a serving point can be redone."""

from __future__ import annotations

import json
from typing import Optional

import click
import typer

from gpuparity.cli.common import db_option
from gpuparity.cli.output import Output, format_option, json_option, output_option
from gpuparity.cli.show import PEERS  # the peers `show --names` knows, without importing serving_table
from gpuparity.errors import UserError


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export(
        run: str = typer.Argument(..., help="Run id, a unique prefix, or 'latest'."),
        output: Optional[str] = output_option(),
        requests: bool = typer.Option(False, "--requests", help="Serving per-request records instead of the run."),
        fmt: Optional[str] = format_option(("json", "csv"), None,
                                           help="csv: --requests only (default: from the file name, else json)."),
        as_json: bool = json_option(),
        names: Optional[str] = typer.Option(None, "--names", click_type=click.Choice(PEERS),
                                            help="Each serving point's table with this tool's name beside every "
                                                 "figure (vllm bench serve, guidellm, aiperf), as `show --names`."),
        db: Optional[str] = db_option(),
    ) -> None:
        """Write a stored run as a JSON document (or its serving requests as JSON / CSV), to stdout or -o FILE."""
        from gpuparity.results.store import Store

        if not requests and fmt not in (None, "json"):
            raise UserError("--format csv goes with --requests; a run document is JSON")
        if names and requests:
            raise UserError("--names goes with a run document, not --requests (its fields are gpuparity's)")
        sink = Output(fmt, output, as_json, db=db)      # never over the store (any alias), a pipe or a folder
        fmt = sink.format
        with Store(db) as store:
            if not requests:
                # The stored text as it is: memory stays at one copy of the document, whatever its size.
                _, text, n_results = store.run_text(run)
                sink.text(_named(text, names) if names else text, f"{n_results} results")
                return
            doc = store.get_run(run)
        from gpuparity.results.serving_summary import exported_requests

        rows = exported_requests(doc)
        if not rows:
            raise UserError(f"run {doc['run_id']} has no serving requests to export")
        kind = fmt or ("csv" if (output or "").endswith(".csv") else "json")
        sink.text(_csv(rows) if kind == "csv" else json.dumps(rows, indent=1), f"{len(rows)} requests")


def _named(text: str, names: str) -> str:
    """The document with each serving point's table naming `names`' figure beside each of its own."""
    from gpuparity.results.serving_table import named_table

    doc = json.loads(text)
    for r in doc.get("results") or []:
        table = named_table(r, names)
        if table:
            r["info"]["table"] = table
    return json.dumps(doc, indent=1)


def _csv(rows: list[dict]) -> str:
    """One line per request; itl_us as microseconds separated by spaces; a server's text (an error)
    never a live formula (validate.spreadsheet_safe)."""
    import csv
    import io

    from gpuparity.validate import spreadsheet_safe

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: spreadsheet_safe(" ".join(map(str, v)) if isinstance(v, list) else ("" if v is None else v))
                         for k, v in row.items()})
    return buf.getvalue()

