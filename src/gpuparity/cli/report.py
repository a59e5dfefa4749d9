"""`gpuparity report A [B] -o report.html`: one self-contained HTML file (or markdown)."""

from __future__ import annotations

from typing import List, Optional

import typer

from gpuparity.cli.common import db_option, side_files
from gpuparity.cli.output import Output, format_option, output_option
from gpuparity.errors import UserError

FORMATS = ["html", "markdown"]


def _side(token, label: str, db, stores, documents: bool, **filters):
    """A side's run documents, or its (Side, newest results) read from the store's columns as
    `compare` reads them (no stored document parsed but serving ones). documents: a one-platform
    report of at most MAX_DOCUMENT_RUNS stored runs reads their documents, for the per-workload
    details (latencies, MFU, best shapes) and the machine's state that only documents hold."""
    from gpuparity.comparison.sides import resolve_runs, side_from_store, stored_results

    origin, docs, ids = resolve_runs(token, db, stores, **filters)
    if docs is not None:
        return docs
    store = stores.get(origin)
    if documents and len(ids) <= MAX_DOCUMENT_RUNS:
        return [store.get_run(i) for i in ids]
    return side_from_store(store, ids, label), stored_results(store, ids)


MAX_DOCUMENT_RUNS = 20


SIDE_HELP = "Side {x}: an exported run file (JSON), a store file, a run id (prefix, 'latest') or a filter" \
            " such as gpu=mi300x,stack=rocm."


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        a: Optional[str] = typer.Argument(None, help=SIDE_HELP.format(x="A")),
        b: Optional[str] = typer.Argument(None, help=SIDE_HELP.format(x="B") + " Optional: compared against A."),
        output: Optional[str] = output_option(
            "File to write, '-' for stdout (default: report.html; markdown: stdout); never over the store or an input."),
        db: Optional[str] = db_option(),
        gpu_a: Optional[str] = typer.Option(None, "--gpu-a", help="Side A: runs of this GPU (product or spec id)."),
        stack_a: Optional[str] = typer.Option(None, "--stack-a", help="Side A: runs of this stack (rocm, cuda, cpu)."),
        gpu_b: Optional[str] = typer.Option(None, "--gpu-b", help="Side B: runs of this GPU."),
        stack_b: Optional[str] = typer.Option(None, "--stack-b", help="Side B: runs of this stack."),
        since: Optional[str] = typer.Option(None, "--since", help="Only runs started at or after (ISO date)."),
        host: Optional[str] = typer.Option(None, "--host", help="Only runs on this host."),
        output_format: str = format_option(FORMATS, "html", help="html: one offline file with charts; markdown: "
                                           "for issues and chats."),
        tolerance: str = typer.Option("5%", "--tolerance", "-t", help="Parity band: 1/(1+t) to 1+t (5% or 0.05)."),
        price_basis: str = typer.Option("neocloud", "--price-basis", help="Price book column for $ per GPU-hour."),
        price: Optional[List[str]] = typer.Option(None, "--price", help="gpu=USD_per_hour (repeatable)."),
        with_claims: bool = typer.Option(
            False, "--claims", help="Add vendor claims checked against the store (after the results, collapsed)."),
        claims_file: Optional[str] = typer.Option(
            None, "--claims-file", help="Claims YAML for --claims (default: the shipped set); implies --claims."),
        no_claims: bool = typer.Option(False, "--no-claims", hidden=True,
                                       help="Leave claims out (the default; kept for older scripts)."),
        title: Optional[str] = typer.Option(
            None, "--title", help="Report title (default: the sides' labels, products and stacks)."),
        history: bool = typer.Option(True, "--history/--no-history",
                                     help="Learn a one-run side's run-to-run spread from earlier runs in its store."),
        cross_config: bool = typer.Option(False, "--cross-config", help="serving: verdicts between servers configured "
                                          "differently, labelled a cross-configuration comparison (as compare)."),
    ) -> None:
        """Write a report: one platform's results against its datasheet per workload, or B against A
        (the answer in a sentence, ratio and roofline charts, $ and W, serving); skipped cases,
        machine state and fingerprints. Claims only with --claims."""
        from gpuparity.cli.compare import parse_fraction, price_options
        from gpuparity.report.context import build, evaluate_claims
        from gpuparity.report.html import render_html
        from gpuparity.report.markdown import render_markdown
        from gpuparity.results.store import StorePool

        tol = parse_fraction(tolerance, "--tolerance")
        prices = price_options(price_basis, price)
        if not (a or gpu_a or stack_a):
            raise UserError("name at least one side: gpuparity report A [B] -o report.html")
        from gpuparity.validate import iso_date

        since = iso_date(since)
        if claims_file and not no_claims:
            from gpuparity.evidence.claims import load_claims

            load_claims(claims_file)        # up front (one line), not as an error inside the report
        if output is None:
            output = "report.html" if output_format == "html" else "-"
        files, stores = side_files(a, b)
        sink = Output(output_format, output, db=db, inputs=(*files, claims_file), stores=tuple(stores))
        with StorePool() as stores:         # each store opened once for the sides and the claims
            two = bool(b or gpu_b or stack_b)
            side_a = _side(a, "A", db, stores, not two, gpu=gpu_a, stack=stack_a, since=since, host=host)
            side_b = _side(b, "B", db, stores, False, gpu=gpu_b, stack=stack_b, since=since, host=host) if two else None
            claims = None
            if (with_claims or claims_file) and not no_claims:
                claims = evaluate_claims(stores.get(db), claims_file)
            ctx = build(side_a, side_b, tol, prices, claims, title, history=history, stores=stores,
                        cross_config=cross_config)
        text = render_html(ctx) if output_format == "html" else render_markdown(ctx)
        sink.text(text, f"{len(text) // 1024} KiB")
