"""`gpuparity run`: benchmark this machine and store the run.

Nothing measured is lost: every finished trial goes to the run's journal first (a process that
dies keeps it, see execute/journal.py); Ctrl-C and SIGTERM stop the measuring but never the
printing and saving that follow (they are held and the run exits 130 / 143 afterwards).
Exit status: 0 when every result is ok or skipped, 1 when a result failed or none is ok,
2 for bad input, 130 / 143 when stopped by a signal.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import List, Optional

import click
import typer

from gpuparity.cli.common import console, db_option, escape
from gpuparity.cli.output import format_option, output_option
from gpuparity.errors import UserError

DEFAULT_TRIALS = {"quick": 1, "standard": 3, "full": 5, "comm": 1}
SUITE_NAMES = list(DEFAULT_TRIALS)        # suites.SUITES, without importing the registry at start-up
GENERIC_SETS = ("case_timeout",)


def _parse_sets(values: list[str]) -> dict:
    out = {}
    for item in values or []:
        if "=" not in item:
            raise UserError(f"--set takes key=value, got '{item}'")
        k, v = item.split("=", 1)
        k, v = k.strip(), v.strip()
        if not k or not v:
            raise UserError(f"--set takes key=value, got '{item}'")
        if not any(part.strip() for part in v.split(",")):
            raise UserError(f"--set {k}={v} names no value")
        if len(v.split(",")) > 1 and not all(part.strip() for part in v.split(",")):
            raise UserError(f"--set {k}={v}: an empty value between commas (a typo?)")
        out[k] = v
    return out


def axis_names(workload) -> set[str]:
    """The --set keys a workload takes: its axes ('m,n,k' names three)."""
    return {name.strip() for key in workload.axes for name in key.split(",") if name.strip()}


def check_sets(sets: dict, workloads: list) -> None:
    """Every --set key must be an axis of some workload in the run (else exit 2 naming them)."""
    valid = set(GENERIC_SETS).union(*(axis_names(w) for w in workloads)) - {"dtype"}
    unknown = sorted(set(sets) - valid)
    if unknown:
        names = ", ".join(w.name for w in workloads)
        raise UserError(f"unknown --set key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} for {names}; "
                        f"valid: {', '.join(sorted(valid))}")
    for w in workloads:          # an axis with a fixed set of values takes only those
        for key, allowed in getattr(w, "choices", {}).items():
            bad = [v.strip() for v in str(sets.get(key, "")).split(",") if v.strip() and v.strip() not in allowed]
            if bad:
                raise UserError(f"--set {key}={bad[0]}: {w.name} takes {key} in {', '.join(allowed)}")


def check_values(names: list[str], suite: str, options: dict, like=None) -> None:
    """The --set values (or the --like file's parameters) judged on device-less contexts
    (plan.spec_context) before torch is imported, so a refusal costs no import: refused only where
    neither a CPU's nor a GPU's cases take them; the run judges again on this machine's context."""
    from gpuparity.execute.plan import cases_for, like_cases, spec_context
    from gpuparity.platform.specs import all_specs

    first = None
    for spec in ("cpu", next(iter(all_specs()))):
        ctx = spec_context(spec, suite, options)
        try:
            like_cases(like, ctx) if like is not None else cases_for(names, suite, ctx, options, judge=False)
            return
        except UserError as exc:
            first = first or exc
    raise first


def check_profile(path: str | None) -> None:
    """--profile DIR: an existing writable folder, or a new one in an existing folder."""
    if not path:
        return
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise UserError(f"--profile {path}: not a folder (traces are written into a folder)")
        if not os.access(path, os.W_OK):
            raise UserError(f"--profile {path}: not writable")
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise UserError(f"--profile {path}: its folder {parent} does not exist or is not writable")


def check_dtypes(dtypes: list[str]) -> None:
    from gpuparity.workloads.dtypes import GEMM_DTYPES

    known = set(GEMM_DTYPES) | {"fp64_vector"}
    bad = [d for d in dtypes if d not in known]
    if bad:
        raise UserError(f"unknown dtype{'s' if len(bad) > 1 else ''} {', '.join(bad)}; known: {', '.join(GEMM_DTYPES)}")


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(
        ctx: typer.Context,
        workloads: Optional[List[str]] = typer.Argument(None, help="Workloads to run (default: the suite's)."),
        suite: str = typer.Option("quick", "--suite", "-s", click_type=click.Choice(SUITE_NAMES),
                                  help="quick: CPU-friendly sizes; standard: GPU sizes; full: sweeps; comm: collectives."),
        dtype: Optional[List[str]] = typer.Option(None, "--dtype", "-d", help="Only these dtypes (repeat or comma-separate)."),
        trials: Optional[int] = typer.Option(None, "--trials", "-t", min=1, max=100,
                                             help="Independent trials per case (default: quick 1, standard 3, full 5)."),
        isolate: bool = typer.Option(False, "--isolate", help="Each case and trial in its own process (crash-proof)."),
        in_process: bool = typer.Option(False, "--in-process", help="Trials in this process, not fresh workers."),
        seed: Optional[int] = typer.Option(None, "--seed", min=0, max=2**31 - 1, help="Seed of the case order (recorded)."),
        in_order: bool = typer.Option(False, "--in-order", help="Run cases in the order named, not shuffled."),
        label: Optional[str] = typer.Option(None, "--label", help="A label for this run (trend --by label)."),
        db: Optional[str] = db_option(),
        out_format: str = format_option(("table", "json"), help="json: the run document (the table then goes to "
                                        "stderr, or stays on stdout with -o).", json_flag=False),
        output: Optional[str] = output_option(),
        json_out: Optional[str] = typer.Option(None, "--json", metavar="FILE",
                                               help="Deprecated: -f json -o FILE (still writes FILE; '-': stdout)."),
        profile: Optional[str] = typer.Option(None, "--profile", help="Write a torch.profiler trace per result into this folder."),
        power_required: bool = typer.Option(False, "--power-required", help="Fail results whose power is missing or invalid."),
        list_only: bool = typer.Option(False, "--list", help="List workloads, their axes and suites, then exit."),
        workload_file: Optional[List[str]] = typer.Option(None, "--workload-file", help="Python file defining WORKLOADS."),
        sets: Optional[List[str]] = typer.Option(None, "--set", help="Axis or option key=value (e.g. m=256,1024; url=...)."),
        no_store: bool = typer.Option(False, "--no-store", help="Do not write to the store."),
        wide: bool = typer.Option(False, "--wide", help="Every column and every parameter of the table, however wide."),
        like: Optional[str] = typer.Option(None, "--like", help="Measure exactly the cases of this run document or "
                                           "plan -f json file: its workloads, parameters, suite, trials and seed."),
        serve_cmd: Optional[str] = typer.Option(None, "--serve-cmd", help="serving: start the server with this command, "
                                                "wait until it is ready, run the sweep, stop it (recorded)."),
        serve_recipe: Optional[str] = typer.Option(None, "--serve-recipe", help="serving: the same from a YAML recipe "
                                                   "(command, env, url, ready_url, gpus, timeout_s, stop_grace_s)."),
    ) -> None:
        """Run workloads (default: the quick suite), print a table, save the run in the store."""
        from gpuparity.execute.suites import SUITES

        like_file = None
        if like is not None:
            from click.core import ParameterSource

            given = suite if ctx.get_parameter_source("suite") != ParameterSource.DEFAULT else None
            like_file = _load_like(like, workloads, dtype, given)
            suite = like_file.suite
        if suite not in SUITES:
            raise UserError(f"unknown suite '{suite}'; choose one of {', '.join(SUITES)}")
        from gpuparity.workloads import base

        if in_process and isolate:
            raise UserError("--in-process and --isolate exclude each other: trials in this process, or each "
                            "case and trial in its own")
        files = [os.path.abspath(p) for p in workload_file or []]
        for path in files:
            base.load_workload_file(path)
        if list_only:
            _print_list()
            return
        names = list(workloads or [])
        if like_file is not None:
            names = list(dict.fromkeys(c[0] for c in like_file.cases if c[0] in base.registry()))
        elif not names:
            from gpuparity.execute.suites import workloads_for

            names = workloads_for(suite)
        chosen = [base.get(n) for n in names]  # unknown names fail before any work
        options = _parse_sets(sets or [])
        check_sets(options, chosen)
        from gpuparity.cli.serve_launch import serve_recipe as recipe_of
        from gpuparity.cli.serve_launch import serving_server

        recipe = recipe_of(serve_cmd, serve_recipe, chosen, options)      # checked before anything starts
        if like_file is not None:
            _check_like_sets(options, like_file)
        dtypes = [d.strip() for item in dtype or [] for d in item.split(",") if d.strip()]
        if dtype and not dtypes:
            raise UserError("--dtype names no dtype (e.g. --dtype bf16,fp8)")
        check_dtypes(dtypes)
        if dtypes:
            options["dtypes"] = dtypes
        if "case_timeout" in options:
            from gpuparity.execute.runner import coerce

            options["case_timeout"] = float(coerce(1.0, options["case_timeout"], "case_timeout")) or None
        if label is not None:
            from gpuparity.validate import clean_text

            try:
                label = clean_text(label, "--label", 200)
            except ValueError as exc:
                raise UserError(str(exc)) from None
        from gpuparity.cli.output import Output

        if json_out is not None and output is not None:
            raise UserError("--json FILE is -f json -o FILE: give one of --json and -o")
        sink = Output("json" if json_out is not None else out_format, json_out if json_out is not None else output,
                      db=db, inputs=(*files, like), option="--json" if json_out is not None else "--output",
                      old=("run --json FILE", "-f json -o FILE ('-': -f json)") if json_out is not None else None)
        check_profile(profile)
        if recipe is None:          # a launched server is asked once it runs
            check_values(names, suite, options, like_file)
        from gpuparity.platform import dist

        if dist.is_writer() and not no_store:     # the run must be savable where asked, before any work
            from gpuparity.results.spool import check_spool
            from gpuparity.results.store import check_writable

            check_spool()                           # its journal (and a spooled save) must have a folder
            check_writable(db)
        options["power_required"] = power_required
        options["workload_files"] = files

        n_trials = trials or (like_file.trials if like_file is not None else DEFAULT_TRIALS.get(suite, 1))
        if like_file is not None and seed is None:
            seed = like_file.seed              # its seed unless told
        mode = ("in-process" if dist.is_distributed() or in_process or (n_trials == 1 and not isolate)
                else "isolate" if isolate else "workers")
        if dist.is_distributed() and isolate:
            raise UserError("--isolate does not apply to a torchrun job (its ranks must stay together)")
        from gpuparity.execute.runner import sigterm_stops_the_run

        try:
            dist.init()  # under torchrun: join the job's process group (a no-op for one process)
            with sigterm_stops_the_run(), serving_server(recipe, options, console(stderr=True)):
                if recipe is not None:
                    check_values(names, suite, options, like_file)
                code = _run(names, suite, options, db, sink, profile, no_store, n_trials, mode, seed, label,
                            shuffle=not in_order, like=like_file, wide=wide)
        finally:
            dist.destroy()
        if code:
            raise typer.Exit(code)

    def _print_list() -> None:
        from rich.table import Table

        from gpuparity.execute.suites import SUITES
        from gpuparity.workloads.base import registry

        t = Table(title="Workloads")
        for col in ("workload", "category", "axes", *SUITES, "description"):
            t.add_column(col)
        for name, w in sorted(registry().items()):
            axes = "; ".join(f"{k}: {v}" for k, v in w.axes.items())
            t.add_row(name, w.category, escape(axes), *["x" if s in w.suites else "" for s in SUITES],
                      escape(w.description))
        console().print(t)


def _load_like(path: str, workloads, dtype, suite):
    """The --like file (plan.load_like), refused with WORKLOADS / --dtype / another --suite: its
    cases are what the run measures."""
    if workloads or dtype:
        raise UserError("--like takes its cases from the file: drop the workload names and --dtype")
    from gpuparity.execute.plan import load_like

    like = load_like(path)
    if suite is not None and suite != like.suite:
        raise UserError(f"--like {path} is a {like.suite} suite run: drop --suite {suite}")
    return like


def _check_like_sets(options: dict, like) -> None:
    """--set with --like may give options (a server URL, a timeout), never change a case's parameters."""
    axes = sorted({k for k in options if any(k in params for _, _, params, _ in like.cases)})
    if axes:
        raise UserError(f"--like measures the file's parameters: --set {', '.join(axes)} would change them")


def _run(names, suite, options, db, sink, profile, no_store, trials, mode, seed, label, shuffle=True,
         like=None, wide=False) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from gpuparity.execute.plan import cases_for, like_cases
    from gpuparity.execute.runner import HeldSignals, build_context, execute_plan, short, start_run
    from gpuparity.platform import dist

    out = console(stderr=True)
    writer = dist.is_writer()
    if writer and not no_store:
        from gpuparity.execute.journal import recover

        recover(out, db=db)
    ctx = build_context(suite, options, profile)
    from gpuparity.errors import STOP_AT_ONCE

    STOP_AT_ONCE[0] = False        # from here on a signal stops the run and keeps what it measured
    fp = ctx.fingerprint
    cases = like_cases(like, ctx) if like is not None else cases_for(names, suite, ctx, options, judge=False)
    unknown = [c for c in cases if c.skip]          # --like: workloads this installation lacks
    pairs = [(c.workload, c.params) for c in cases if not c.skip]
    if writer:
        # a serving run measures the server named by --set url=, whatever the suite: no suite named
        named = "" if pairs and all(w.category == "serving" for w, _ in pairs) else f"suite {suite}, "
        out.print(f"[bold]gpuparity[/] {escape(fp.get('product'))} ({escape(fp.get('backend'))}), {named}"
                  f"{len(cases)} cases x {trials} trial{'s' if trials > 1 else ''} ({mode})"
                  + (f", like {escape(like.source)}" if like is not None else ""))
        _warn_like_version(like, out)
    from gpuparity.validate import mask_secrets

    doc = start_run(ctx, [mask_secrets(a) for a in sys.argv[1:]], label)     # a URL's password is not kept
    if like is not None:
        doc["like"] = {"file": os.path.basename(like.path), "source": like.source}
    journal = None
    if writer and not no_store:
        from gpuparity.execute.journal import Journal

        journal = Journal(doc, db)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[status]}"), console=out, transient=True, disable=not writer) as bar:
        task = bar.add_task("starting", total=len(pairs) * trials, status="")

        def on_start(w, params):
            bar.update(task, description=escape(f"{w.name} {short(params)}"[:80]), status="")

        def on_result(result):
            bar.advance(task)

        ctx.progress = lambda text: bar.update(task, status=escape(text[:80]))
        hold = HeldSignals()     # from the end of measuring: the run is printed and saved whatever arrives
        execute_plan(pairs, ctx, doc, on_result=on_result, on_start=on_start, trials=trials, seed=seed,
                     mode=mode, journal=journal, shuffle=shuffle, hold=hold)
        doc["results"] += [c.workload.result(c.params) for c in unknown]
    if journal is not None:
        journal.end(doc["status"], doc.get("interrupted_by"))
    try:
        code = _finish(doc, db, sink, no_store, out, wide) if writer else "ok"
        if journal is not None:
            journal.close(remove=code != "unsaved")
    finally:
        hold.stop()
    held = hold.held
    if not writer:
        return 0
    if code == "unsaved":               # neither the store nor the spool took it (a full disk): the journal has it
        return 2
    if doc.get("interrupted_by") == "journal" and not held:     # the journal's disk failed: stopped, saved
        out.print(f"[red]error: {escape(doc['stopped'])}[/]", soft_wrap=True)
        return 2
    if doc["status"] == "interrupted" or held:
        by = doc.get("interrupted_by") or ("SIGTERM" if held and held[0] == signal.SIGTERM else "SIGINT")
        return 143 if by == "SIGTERM" else 130      # 128 + signal number
    if code == "bad json":
        return 2
    usable = [r for r in doc["results"] if r["status"] == "ok"]
    failed = [r for r in doc["results"] if r["status"] == "failed"]
    if failed or not usable:
        out.print(f"[red]{len(failed)} result(s) failed[/]" if failed else "[red]no result is ok[/]")
        return 1
    return 0


def _warn_like_version(like, out) -> None:
    from gpuparity.version import BENCHMARK_VERSION

    if like is not None and like.benchmark_version not in (None, BENCHMARK_VERSION):
        out.print(f"[yellow]warning: {escape(like.path)} is benchmark version {like.benchmark_version}, this is "
                  f"{BENCHMARK_VERSION}: the same keys may measure changed workloads[/]")


def _finish(doc: dict, db, sink, no_store, out, wide: bool = False) -> str:
    """Print the table (the output, or beside the JSON: on stderr when the JSON takes stdout), write
    -f json, save or spool. Returns 'ok', 'bad json' (an output not written) or 'unsaved' (journal kept)."""
    from contextlib import nullcontext

    from gpuparity.cli.show import print_extras

    on_stderr = sink.json and sink.to_stdout
    status = "ok"
    try:
        with nullcontext() if sink.json else sink.writing(lambda _: f"{len(doc['results'])} results"):
            print_results(doc, stderr=on_stderr, wide=wide)
            print_extras(doc, stderr=on_stderr)
        if sink.json:
            sink.print_json(doc, f"{len(doc['results'])} results")      # whole or not at all
    except UserError as exc:
        out.print(f"[red]error: {escape(exc)}; the run is still saved[/]")
        status = "bad json"
    sink.note_old_spelling()
    print_notes(doc, out)
    if not no_store:
        from gpuparity.results.spool import save_or_spool

        try:
            save_or_spool(doc, db, out)
        except UserError as exc:       # neither the store nor the spool took it: keep the journal
            out.print(f"[red]error: {escape(exc)}; the run stays in its journal and is recovered next time[/]",
                      soft_wrap=True)
            return "unsaved"
    return status


def print_notes(doc: dict, out) -> None:
    """What a reader must know beside the table: busy machine, unstable results, best shapes, traces."""
    from gpuparity.platform.machine import busy_warnings, contention_lines
    from gpuparity.results.figure_text import figure

    machine = doc.get("machine") or {}
    for line in busy_warnings(machine.get("start"), "start") + busy_warnings(machine.get("end"), "end"):
        out.print(f"[yellow]warning: {escape(line)}[/]")
    for line in contention_lines(doc):
        out.print(f"[yellow]warning: {escape(line)}[/]")
    unstable = [r for r in doc["results"] if {"unstable", "host_bound"} & set(r.get("flags") or [])]
    if unstable:
        out.print(f"[yellow]warning: {len(unstable)} result(s) unstable (noise or trial spread above "
                  f"the threshold) or host-bound: their comparisons are at most 'inconclusive'[/]")
    above = [r for r in doc["results"] if "peak_exceeded" in (r.get("flags") or [])]
    if above:
        out.print(f"[yellow]warning: {len(above)} result(s) above their spec peak (peak_exceeded): that peak is "
                  "wrong for them, so no % of peak is shown[/]")
    for r in doc["results"]:
        info = r.get("info") or {}
        if info.get("best_shape"):
            b = info["best_shape"]
            value = (r.get("metric") or {}).get("value")
            out.print(f"{escape(r['workload'])} {escape(r.get('dtype') or '')}: best shape m={b.get('m')} "
                      f"n={b.get('n')} k={b.get('k')}" + (f", {figure(value)} TFLOP/s" if value else ""))
        if info.get("trace"):
            top = info.get("top_kernels") or []
            head = ", ".join(f"{k['name'][:40]} {100 * k.get('share', 0):.0f}%" for k in top[:3])
            out.print(f"trace {escape(info['trace'])}" + (f"  top: {escape(head)}" if head else ""))


def print_results(doc: dict, stderr: bool = False, rows: int = 0, wide: bool = False) -> None:
    """The run table (at most `rows` results, 0: all): the table `show` prints (cli/tables.py),
    fitted to the terminal (wide: every column). `throughput` and its CI are the result's figure
    (results/figure.py), the same number every other view shows."""
    from gpuparity.cli.tables import print_run_rows

    print_run_rows(doc, rows=rows, stderr=stderr, wide=wide)
