"""`gpuparity run`: benchmark this machine and store the run."""

from __future__ import annotations

import sys
from typing import List, Optional

import typer

from gpuparity.cli.common import console, db_option, escape, fmt
from gpuparity.errors import UserError


def _parse_sets(values: list[str]) -> dict:
    out = {}
    for item in values or []:
        if "=" not in item:
            raise UserError(f"--set takes key=value, got '{item}'")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(
        workloads: Optional[List[str]] = typer.Argument(None, help="Workloads to run (default: the suite's)."),
        suite: str = typer.Option("quick", "--suite", "-s", help="quick | standard | full | comm"),
        dtype: Optional[List[str]] = typer.Option(None, "--dtype", "-d", help="Only these dtypes (repeat or comma-separate)."),
        db: Optional[str] = db_option(),
        json_out: Optional[str] = typer.Option(None, "--json", help="Also write the run document to this file."),
        profile: Optional[str] = typer.Option(None, "--profile", help="Write a torch.profiler trace per workload into this folder."),
        power_required: bool = typer.Option(False, "--power-required", help="Fail results whose power is missing or invalid."),
        list_only: bool = typer.Option(False, "--list", help="List workloads, their axes and suites, then exit."),
        workload_file: Optional[List[str]] = typer.Option(None, "--workload-file", help="Python file defining WORKLOADS."),
        sets: Optional[List[str]] = typer.Option(None, "--set", help="Workload option key=value (e.g. model=PATH, url=...)."),
        no_store: bool = typer.Option(False, "--no-store", help="Do not write to the store."),
    ) -> None:
        """Run workloads (default: the quick suite), print a table, save the run in the store."""
        from gpuparity.suites import SUITES

        if suite not in SUITES:
            raise UserError(f"unknown suite '{suite}'; choose one of {', '.join(SUITES)}")
        from gpuparity.workloads import base

        for path in workload_file or []:
            base.load_workload_file(path)
        if list_only:
            _print_list()
            return
        names = list(workloads or [])
        if not names:
            from gpuparity.suites import workloads_for

            names = workloads_for(suite)
        for n in names:
            base.get(n)  # unknown names fail before any work
        options = _parse_sets(sets or [])
        dtypes = [d.strip() for item in dtype or [] for d in item.split(",") if d.strip()]
        if dtypes:
            options["dtypes"] = dtypes
        options["power_required"] = power_required
        from gpuparity import dist
        from gpuparity.runner import sigterm_stops_the_run

        dist.init()  # under torchrun: join the job's process group (a no-op for one process)
        try:
            with sigterm_stops_the_run():
                _run(names, suite, options, db, json_out, profile, no_store)
        finally:
            dist.destroy()

    def _print_list() -> None:
        from rich.table import Table

        from gpuparity.suites import SUITES
        from gpuparity.workloads.base import registry

        t = Table(title="Workloads")
        for col in ("workload", "category", "axes", *SUITES, "description"):
            t.add_column(col)
        for name, w in sorted(registry().items()):
            axes = "; ".join(f"{k}: {v}" for k, v in w.axes.items())
            t.add_row(name, w.category, escape(axes), *["x" if s in w.suites else "" for s in SUITES],
                      escape(w.description))
        console().print(t)


def _run(names, suite, options, db, json_out, profile, no_store) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from gpuparity import dist
    from gpuparity.runner import build_context, execute_plan, plan, start_run

    out = console(stderr=True)
    ctx = build_context(suite, options, profile)
    fp = ctx.fingerprint
    if dist.is_writer():
        out.print(f"[bold]gpuparity[/] {escape(fp.get('product'))} ({escape(fp.get('backend'))}), suite {suite}")
    pairs = plan(names, suite, ctx)
    doc = start_run(ctx, sys.argv[1:])
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=out, transient=True, disable=not dist.is_writer()) as bar:
        task = bar.add_task("starting", total=len(pairs))

        def on_start(w, params):
            bar.update(task, description=f"{w.name} {_short(params)}")

        def on_result(result):
            bar.advance(task)

        execute_plan(pairs, ctx, doc, on_result=on_result, on_start=on_start)
    if not dist.is_writer():
        return
    print_results(doc)
    if json_out:
        import json

        with open(json_out, "w") as fh:
            json.dump(doc, fh, indent=1)
        out.print(f"wrote {json_out}")
    if not no_store:
        from gpuparity.results.spool import save_or_spool

        save_or_spool(doc, db, out)
    if doc["status"] == "interrupted":
        raise typer.Exit(143 if doc.get("interrupted_by") == "SIGTERM" else 130)    # 128 + signal number


def _short(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items() if k != "dtype") + (
        f" {params['dtype']}" if params.get("dtype") else "")


def print_results(doc: dict) -> None:
    from rich.table import Table

    t = Table(title=f"run {doc['run_id']} ({doc['status']})")
    for col, just in (("workload", "left"), ("params", "left"), ("dtype", "left"), ("median", "right"),
                      ("CI", "right"), ("throughput", "right"), ("% peak", "right"), ("status", "left")):
        t.add_column(col, justify=just)
    for r in doc["results"]:
        s = r.get("summary") or {}
        m = r.get("metric") or {}
        d = r.get("derived") or {}
        ci = ""
        if s.get("median"):
            ci = f"±{100 * (s['ci_high'] - s['ci_low']) / 2 / s['median']:.1f}%"
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {r.get('reason')}"
        style = {"ok": "", "skipped": "yellow", "failed": "red"}[r["status"]]
        t.add_row(
            r["workload"], escape(_short({k: v for k, v in r["params"].items() if k != "dtype"})),
            r.get("dtype") or "", _time(s.get("median")), ci,
            f"{fmt(m.get('value'))} {m.get('unit', '')}" if m else "",
            fmt(d.get("pct_peak"), 3) if d.get("pct_peak") is not None else "",
            f"[{style}]{escape(status)}[/]" if style else status,
        )
    console().print(t)


def _time(seconds) -> str:
    if not seconds:
        return ""
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.2e} s"
