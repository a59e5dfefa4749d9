"""`gpuparity report A [B] -o report.html`: one self-contained HTML file (or markdown)."""

from __future__ import annotations

from typing import List, Optional

import click
import typer

from gpuparity.cli.common import db_option, write_output
from gpuparity.errors import UserError

FORMATS = ["html", "markdown"]


def _docs(token, db, **filters) -> tuple[list[dict], str | None]:
    """(run documents, the store they came from: None for a file)."""
    from gpuparity.analysis.sides import resolve_runs
    from gpuparity.results.store import Store

    origin, docs, ids = resolve_runs(token, db, **filters)
    if docs is not None:
        return docs, None
    with Store(origin) as store:
        return [store.get_run(i) for i in ids], store.url


SIDE_HELP = "Side {x}: an exported run file (JSON), a store file, a run id (prefix, 'latest') or a filter" \
            " such as gpu=mi300x,stack=rocm."


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        a: Optional[str] = typer.Argument(None, help=SIDE_HELP.format(x="A")),
        b: Optional[str] = typer.Argument(None, help=SIDE_HELP.format(x="B") + " Optional: compared against A."),
        output: Optional[str] = typer.Option(
            None, "--output", "-o", help="File to write, '-' for stdout (default: report.html; markdown: stdout)."),
        db: Optional[str] = db_option(),
        gpu_a: Optional[str] = typer.Option(None, "--gpu-a", help="Side A: runs of this GPU (product or spec id)."),
        stack_a: Optional[str] = typer.Option(None, "--stack-a", help="Side A: runs of this stack (rocm, cuda, cpu)."),
        gpu_b: Optional[str] = typer.Option(None, "--gpu-b", help="Side B: runs of this GPU."),
        stack_b: Optional[str] = typer.Option(None, "--stack-b", help="Side B: runs of this stack."),
        since: Optional[str] = typer.Option(None, "--since", help="Only runs started at or after (ISO date)."),
        host: Optional[str] = typer.Option(None, "--host", help="Only runs on this host."),
        output_format: str = typer.Option("html", "--format", "-f", click_type=click.Choice(FORMATS),
                                          help="html: one offline file with charts; markdown: for issues and chats."),
        tolerance: str = typer.Option("5%", "--tolerance", "-t", help="Parity band: 1 +- this (5% or 0.05)."),
        price_basis: str = typer.Option("neocloud", "--price-basis", help="Price book column for $ per GPU-hour."),
        price: Optional[List[str]] = typer.Option(None, "--price", help="gpu=USD_per_hour (repeatable)."),
        claims_file: Optional[str] = typer.Option(None, "--claims", help="Claims YAML (default: the shipped set)."),
        no_claims: bool = typer.Option(False, "--no-claims", help="Leave the claims section out."),
        title: Optional[str] = typer.Option(None, "--title", help="Report title (default: B vs A by product)."),
        history: bool = typer.Option(True, "--history/--no-history",
                                     help="Learn a one-run side's run-to-run spread from earlier runs in its store."),
    ) -> None:
        """Write a report: the answer in a sentence, ratio and roofline charts, $ and W, serving, fingerprints."""
        from gpuparity.cli.compare import parse_fraction, price_options
        from gpuparity.report.html import build, evaluate_claims, render_html, render_markdown
        from gpuparity.results.store import Store

        tol = parse_fraction(tolerance, "--tolerance")
        prices = price_options(price_basis, price)
        if not (a or gpu_a or stack_a):
            raise UserError("name at least one side: gpuparity report A [B] -o report.html")
        docs_a, origin_a = _docs(a, db, gpu=gpu_a, stack=stack_a, since=since, host=host)
        docs_b, origin_b = _docs(b, db, gpu=gpu_b, stack=stack_b, since=since, host=host) \
            if (b or gpu_b or stack_b) else (None, None)
        claims = None
        if not no_claims:
            with Store(db) as store:
                claims = evaluate_claims(store, claims_file)
        ctx = build(docs_a, docs_b, tol, prices, claims, title, origins=(origin_a, origin_b), history=history)
        text = render_html(ctx) if output_format == "html" else render_markdown(ctx)
        if output is None:
            output = "report.html" if output_format == "html" else "-"
        write_output(output, text, f"{len(text) // 1024} KiB")
