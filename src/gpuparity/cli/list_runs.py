"""`gpuparity list`: stored runs."""

from __future__ import annotations

import os
from typing import Optional

import typer

from gpuparity.cli.common import console, db_option
from gpuparity.cli.output import Output, format_option, json_option, output_option


def register(app: typer.Typer) -> None:
    @app.command("list")
    def list_runs(
        side: Optional[str] = typer.Argument(None, help="Filter such as job=12345 or gpu=mi300x,host=box1 "
                                             "(keys: gpu, stack, host, since, label, job, db)."),
        db: Optional[str] = db_option(),
        gpu: Optional[str] = typer.Option(None, "--gpu", help="Only runs of this GPU (spec id or product)."),
        stack: Optional[str] = typer.Option(None, "--stack", help="Only runs of this stack: cuda, rocm, cpu (prefix)."),
        since: Optional[str] = typer.Option(None, "--since", help="Only runs started at or after (ISO date)."),
        host: Optional[str] = typer.Option(None, "--host", help="Only runs on this host."),
        label: Optional[str] = typer.Option(None, "--label", help="Only runs with this `run --label`."),
        job: Optional[str] = typer.Option(None, "--job", help="Only runs of this SLURM job (gpuparity submit; "
                                          "12345, or 12345_2 for one array task); also says how each task ended."),
        limit: int = typer.Option(50, "--limit", "-n", min=1, help="At most this many runs."),
        out_format: str = format_option(("table", "json")),
        output: Optional[str] = output_option(),
        as_json: bool = json_option(),
        wide: bool = typer.Option(False, "--wide", help="Every column, however wide."),
    ) -> None:
        """List stored runs, newest first."""
        from gpuparity.execute.journal import recover
        from gpuparity.results.store import Store
        from gpuparity.results.store_connect import store_missing
        from gpuparity.results.store_url import default_db
        from gpuparity.validate import iso_date, terminal_safe

        sink = Output(out_format, output, as_json, db=db)      # the guard, before any work
        if side:
            from gpuparity.comparison.sides import parse_filter

            given = parse_filter(side)
            db = given.pop("db", None) or db
            gpu, stack, since, host, label, job = (given.get(k) or v for k, v in (
                ("gpu", gpu), ("stack", stack), ("since", since), ("host", host), ("label", label), ("job", job)))
        since = iso_date(since)
        recover(console(stderr=True), db=db)     # a run whose process died is stored from its journal first
        # The default store not made yet: nothing stored yet is an answer (no runs), and the store is
        # not made. A store named by --db or GPUPARITY_DB that does not exist is refused (Store).
        missing = store_missing() if not db and not os.environ.get("GPUPARITY_DB") else None
        if missing:
            runs, url = [], db or default_db()
            typer.echo(f"no store at {terminal_safe(missing)} yet: no runs (gpuparity run or import creates it)",
                       err=True)
        else:
            with Store(db) as store:
                runs = store.list_runs(limit=limit, gpu=gpu, stack=stack, since=since, host=host, label=label,
                                       job=job)
                url = store.shown           # a URL's password is never printed
        if sink.json:
            sink.print_json(runs, f"{len(runs)} runs")
            return
        with sink.writing():
            _print(runs, url, wide, job if not missing else None, db)


def _print(runs: list[dict], url: str, wide: bool, job: str | None, db: str | None) -> None:
    from gpuparity.cli.tables import Col, render

    def col(header, key, priority=0):
        return Col(header, ["-" if r.get(key) is None else str(r[key]) for r in runs], priority)

    started = [str(r.get("started_at") or "-")[:16].replace("T", " ") for r in runs]
    dropped = render([col("run id", "run_id"), col("label", "label", 1), Col("started", started),
                      col("status", "status", 3), col("host", "host", 2),
                      Col("product", [str(r.get("product") or "-") for r in runs], flex=True),
                      col("spec", "spec_id", 2), col("stack", "stack"), col("results", "n_results", 4)],
                     f"runs in {url}", wide)
    if dropped:
        console().print(f"not shown for lack of width: {', '.join(dropped)} (--wide shows all)")
    if job:
        _job_tasks(job, db)


def _job_tasks(job: str, db: str | None) -> None:
    """What the scheduler says of each task of the job (a task that failed, or stored no run, is
    named); nothing where this machine has no SLURM commands."""
    import shutil

    from gpuparity.cli.submit import report_job
    from gpuparity.execute import slurm

    if shutil.which("scontrol") is None:
        typer.echo("(no scontrol here: run gpuparity list on a SLURM node to see how each task ended)", err=True)
        return
    report_job(job, db, slurm.job_tasks(job))
