"""`gpuparity plan`: the cases a run would measure, on this machine or on any GPU of the spec table."""

from __future__ import annotations

from typing import List, Optional

import click
import typer

from gpuparity.cli.common import console, escape
from gpuparity.cli.output import Output, format_option, json_option, output_option


def register(app: typer.Typer) -> None:
    from gpuparity.cli.run import SUITE_NAMES

    @app.command("plan")
    def plan(
        workloads: Optional[List[str]] = typer.Argument(None, help="Workloads (default: the suite's)."),
        suite: str = typer.Option("quick", "--suite", "-s", click_type=click.Choice(SUITE_NAMES),
                                  help="quick, standard, full or comm (as for run)."),
        spec: Optional[str] = typer.Option(None, "--spec", help="A spec id or name from `gpuparity specs` (h200-sxm, "
                                           "MI300X, ...) or 'cpu'; default: this machine."),
        dtype: Optional[List[str]] = typer.Option(None, "--dtype", "-d", help="Only these dtypes (as for run)."),
        sets: Optional[List[str]] = typer.Option(None, "--set", help="Axis or option key=value (as for run)."),
        trials: Optional[int] = typer.Option(None, "--trials", "-t", min=1, max=100,
                                             help="Trials per case (default: the suite's, as for run)."),
        seed: Optional[int] = typer.Option(None, "--seed", min=0, max=2**31 - 1,
                                           help="Seed of the case order, kept for run --like."),
        workload_file: Optional[List[str]] = typer.Option(None, "--workload-file", help="Python file defining WORKLOADS."),
        out_format: str = format_option(("table", "json"), help="json: the plan as run --like reads it."),
        output: Optional[str] = output_option(),
        as_json: bool = json_option(),
    ) -> None:
        """The cases a run would measure (keys, what is skipped and why, the time it takes), from the
        spec table alone with --spec: no device needed."""
        import os

        from gpuparity.cli.run import DEFAULT_TRIALS, _parse_sets, check_dtypes, check_sets, check_values
        from gpuparity.execute.plan import cases_for, plan_document, spec_context
        from gpuparity.workloads import base

        sink = Output(out_format, output, as_json, inputs=tuple(workload_file or ()))    # the guard, first
        for path in workload_file or []:
            base.load_workload_file(os.path.abspath(path))
        names = list(workloads or [])
        if not names:
            from gpuparity.execute.suites import workloads_for

            names = workloads_for(suite)
        chosen = [base.get(n) for n in names]
        options = _parse_sets(sets or [])
        check_sets(options, chosen)
        dtypes = [d.strip() for item in dtype or [] for d in item.split(",") if d.strip()]
        check_dtypes(dtypes)
        if dtypes:
            options["dtypes"] = dtypes
        if spec is not None:
            ctx = spec_context(spec, suite, options)
        else:
            from gpuparity.execute.runner import build_context

            check_values(names, suite, options)         # a bad value refused before torch loads
            ctx = build_context(suite, options)
        cases = cases_for(names, suite, ctx, options)
        doc = plan_document(cases, ctx, suite, trials or DEFAULT_TRIALS.get(suite, 1), seed)
        if sink.json:
            sink.print_json(doc, f"{len(doc['cases'])} cases")
            return
        with sink.writing():
            print_plan(doc)


def print_plan(doc: dict) -> None:
    from rich.table import Table

    from gpuparity.execute.runner import short

    where = doc.get("product") or doc.get("spec_id") or "this machine"
    basis = "from the spec table" if doc.get("from_spec_table") else "on this machine"
    t = Table(title=f"plan: suite {doc['suite']} on {escape(where)} ({basis})")
    for col, just in (("workload", "left"), ("params", "left"), ("dtype", "left"), ("key", "left"),
                      ("seconds", "right"), ("runs", "left")):
        t.add_column(col, justify=just)
    for c in doc["cases"]:
        params = {k: v for k, v in c["params"].items() if k != "dtype"}
        lo, hi = c["estimate_s"]
        t.add_row(escape(c["workload"]), escape(short(params)), escape(c["params"].get("dtype") or ""), c["key"],
                  f"{lo:.3g}-{hi:.3g}" if hi else "",
                  "yes" if not c["skip"] else f"[yellow]skipped: {escape(c['skip'])}[/]")
    con = console()
    con.print(t)
    skipped = sum(1 for c in doc["cases"] if c["skip"])
    lo, hi = doc["estimate_s"]
    con.print(f"{len(doc['cases'])} cases ({len(doc['cases']) - skipped} run, {skipped} skipped) x {doc['trials']} "
              f"trial{'s' if doc['trials'] > 1 else ''}: measuring takes {_duration(lo)} to {_duration(hi)} "
              "(set-up, model loading and correctness checks come on top)")


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
