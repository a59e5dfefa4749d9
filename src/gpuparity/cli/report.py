"""`gpuparity report A [B] -o report.html`: one self-contained HTML file (or markdown)."""

from __future__ import annotations

import sys
from typing import List, Optional

import typer

from gpuparity.cli.common import db_option
from gpuparity.errors import UserError


def _docs(token, db, **filters) -> list[dict]:
    from gpuparity.analysis.sides import resolve_runs
    from gpuparity.results.store import Store

    origin, docs, ids = resolve_runs(token, db, **filters)
    if docs is not None:
        return docs
    with Store(origin) as store:
        return [store.get_run(i) for i in ids]


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        a: Optional[str] = typer.Argument(None, help="Side A: run file, store file, run id or filter."),
        b: Optional[str] = typer.Argument(None, help="Side B (optional): compared against A."),
        output: str = typer.Option("report.html", "--output", "-o",
                                   help="File to write ('-' for stdout; markdown goes to stdout unless -o is given)."),
        db: Optional[str] = db_option(),
        gpu_a: Optional[str] = typer.Option(None, "--gpu-a"),
        stack_a: Optional[str] = typer.Option(None, "--stack-a"),
        gpu_b: Optional[str] = typer.Option(None, "--gpu-b"),
        stack_b: Optional[str] = typer.Option(None, "--stack-b"),
        since: Optional[str] = typer.Option(None, "--since"),
        host: Optional[str] = typer.Option(None, "--host"),
        output_format: str = typer.Option("html", "--format", "-f", help="html | markdown"),
        tolerance: str = typer.Option("5%", "--tolerance", "-t"),
        price_basis: str = typer.Option("neocloud", "--price-basis"),
        price: Optional[List[str]] = typer.Option(None, "--price", help="gpu=USD_per_hour (repeatable)."),
        claims_file: Optional[str] = typer.Option(None, "--claims", help="Claims YAML (default: the shipped set)."),
        no_claims: bool = typer.Option(False, "--no-claims", help="Leave the claims section out."),
        title: Optional[str] = typer.Option(None, "--title"),
    ) -> None:
        """Write a report: verdicts, charts (ratios, roofline, GEMM, serving), $ and W views, fingerprints."""
        from gpuparity.cli.compare import parse_fraction, price_options
        from gpuparity.report.html import build, evaluate_claims, render_html, render_markdown
        from gpuparity.results.store import Store

        if output_format not in ("html", "markdown"):
            raise UserError("--format must be html or markdown")
        tol = parse_fraction(tolerance, "--tolerance")
        prices = price_options(price_basis, price)
        if not (a or gpu_a or stack_a):
            raise UserError("name at least one side: gpuparity report A [B] -o report.html")
        docs_a = _docs(a, db, gpu=gpu_a, stack=stack_a, since=since, host=host)
        docs_b = _docs(b, db, gpu=gpu_b, stack=stack_b, since=since, host=host) if (b or gpu_b or stack_b) else None
        if no_claims:
            claims = {"error": "left out (--no-claims)"}
        else:
            with Store(db) as store:
                claims = evaluate_claims(store, claims_file)
        ctx = build(docs_a, docs_b, tol, prices, claims, title)
        text = render_html(ctx) if output_format == "html" else render_markdown(ctx)
        if output_format == "markdown" and "--output" not in sys.argv and "-o" not in sys.argv:
            output = "-"
        if output == "-":
            print(text)
            return
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise UserError(f"{output}: cannot write ({exc.strerror})") from None
        typer.echo(f"wrote {output} ({len(text) // 1024} KiB)", err=True)
