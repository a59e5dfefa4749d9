"""`gpuparity submit`: run the suite on a SLURM cluster, every task writing into one store.

Writes the sbatch script (execute/slurm.py) for N nodes x G GPUs, or a job array of such jobs,
and submits it (or prints it: --dry-run). A per-node suite runs once on every node; collectives
and scaling run across the allocation under srun + torchrun, rank 0 writing one run. --wait
stays until the job ends and names every task that failed (a node that died, a cancel, a time
limit), exit 1 then. Everything is checked before anything is queued: the workloads, --set keys
and dtypes as `run` checks them, and the store: a file store is refused where more than one node
could write to it, and a password is refused in a URL (SLURM keeps the script).
"""

from __future__ import annotations

import os
import re
import sys
from typing import List, Optional

import click
import typer

from gpuparity.cli.common import console, db_option, escape
from gpuparity.errors import UserError


def register(app: typer.Typer) -> None:
    from gpuparity.cli.run import SUITE_NAMES

    @app.command("submit")
    def submit(
        workloads: Optional[List[str]] = typer.Argument(None, help="Workloads to run (default: the suite's)."),
        suite: str = typer.Option("quick", "--suite", "-s", click_type=click.Choice(SUITE_NAMES),
                                  help="The suite each task runs (comm: collectives and scaling across the nodes)."),
        nodes: int = typer.Option(1, "--nodes", "-N", min=1, max=100_000, help="Nodes per job."),
        gpus_per_node: int = typer.Option(0, "--gpus-per-node", min=0, max=1024,
                                          help="GPUs per node (0: a CPU-only job, no --gpus-per-node line)."),
        ranks_per_node: Optional[int] = typer.Option(None, "--ranks-per-node", min=1, max=1024,
                                                     help="collectives / scaling: torchrun ranks per node "
                                                          "(default: --gpus-per-node, or 1 without GPUs)."),
        array: int = typer.Option(0, "--array", min=0, max=100_000,
                                  help="Submit a job array of this many tasks, each a job of --nodes nodes."),
        partition: Optional[str] = typer.Option(None, "--partition", "-p", help="SLURM partition."),
        account: Optional[str] = typer.Option(None, "--account", "-A", help="SLURM account charged."),
        time_limit: str = typer.Option("01:00:00", "--time", "-t", help="Time limit per job (SLURM format)."),
        job_name: Optional[str] = typer.Option(None, "--job-name", "-J", help="Job name (default gpuparity-SUITE)."),
        output: Optional[str] = typer.Option(None, "--output", "-o",
                                             help="Job log file pattern (default gpuparity-%j.out; arrays %A_%a)."),
        shared: bool = typer.Option(False, "--shared", help="Share nodes with other jobs (default: --exclusive, "
                                                            "a benchmark measures a quiet node)."),
        sbatch_opts: Optional[List[str]] = typer.Option(None, "--sbatch", help="A further sbatch option, e.g. "
                                                        "--sbatch=--qos=high (repeatable)."),
        db: Optional[str] = db_option(),
        python: str = typer.Option(sys.executable, "--python", help="The Python on the nodes that has gpuparity "
                                                                    "(default: this one)."),
        trials: Optional[int] = typer.Option(None, "--trials", min=1, max=100, help="Trials per case (as run)."),
        sets: Optional[List[str]] = typer.Option(None, "--set", help="Axis or option key=value (as run)."),
        dtype: Optional[List[str]] = typer.Option(None, "--dtype", "-d", help="Only these dtypes (as run)."),
        label: Optional[str] = typer.Option(None, "--label", help="A label for every run of the job."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Print the batch script; submit nothing."),
        wait: bool = typer.Option(False, "--wait", help="Wait for the job to end, then report every task "
                                                        "(exit 1 if one failed or stored no run)."),
    ) -> None:
        """Submit the suite as a SLURM job (N nodes x G GPUs, or an array): each task writes its runs into
        one store; `gpuparity list job=ID` and `compare job=A job=B` read them."""
        from gpuparity.execute import slurm

        run_args, distributed = _run_args(workloads, suite, trials, sets, dtype, label)
        ranks = ranks_per_node or gpus_per_node or 1
        if ranks_per_node and not distributed:
            raise UserError("--ranks-per-node applies to collectives and scaling (torchrun); other workloads run "
                            "once per node")
        if distributed and nodes * ranks < 2:
            raise UserError("collectives and scaling need 2 ranks or more: give --nodes 2 or more, or "
                            "--ranks-per-node (ranks = nodes x ranks per node)")
        for name, value in (("--partition", partition), ("--account", account), ("--job-name", job_name),
                            ("--output", output)):
            _check_word(name, value)
        slurm.time_seconds(time_limit)
        slurm.script_value("--python", python)
        if not os.path.isabs(python):
            raise UserError(f"--python {python}: give the absolute path of the nodes' Python")
        spec = slurm.JobSpec(
            run_args=run_args, db=_store(db, nodes, array), python=python, nodes=nodes,
            gpus_per_node=gpus_per_node, ranks_per_node=ranks, distributed=distributed, array=array,
            partition=partition, account=account, time_limit=time_limit.strip(),
            job_name=job_name or f"gpuparity-{suite}", output=output, exclusive=not shared,
            extra=[slurm.check_option(o) for o in sbatch_opts or []])
        from gpuparity.execute.slurm_logs import check_job_files
        from gpuparity.results.store_url import store_files

        check_job_files(spec, store_files(None) + store_files(spec.db))   # SLURM's log is never the store
        script = slurm.batch_script(spec)
        if dry_run:
            sys.stdout.write(script)
            return
        err = console(stderr=True)
        slurm.tool("sbatch")                 # no SLURM here: said before anything else is tried
        _probe_store(spec.db, err)
        job = slurm.sbatch(script)
        typer.echo(f"Submitted batch job {job}")
        from gpuparity.results.spool import redact

        shape = f"{nodes} node{'s' if nodes > 1 else ''} x {gpus_per_node} GPU{'s' if gpus_per_node != 1 else ''}"
        err.print(f"{escape(spec.job_name)}: {shape}" + (f", array of {array}" if array else "")
                  + f"; runs go to {escape(redact(spec.db))}. Its runs: gpuparity list job={job}"
                  + (f" --db {escape(redact(spec.db))}" if db else ""))
        if wait:
            raise typer.Exit(_wait(job, spec.db, 1 if distributed else nodes, err))


def _run_args(workloads, suite, trials, sets, dtype, label) -> tuple[list[str], bool]:
    """The `gpuparity run` arguments every task gets, checked as `run` checks them (an unknown
    workload, --set key or dtype is refused now, not in a job hours later), and whether they are
    collectives / scaling (torchrun across the nodes)."""
    from gpuparity.cli.run import _parse_sets, check_dtypes, check_sets
    from gpuparity.execute.suites import workloads_for
    from gpuparity.workloads import base

    names = list(workloads or []) or workloads_for(suite)
    chosen = [base.get(n) for n in names]
    check_sets(_parse_sets(sets or []), chosen)
    dtypes = [d.strip() for item in dtype or [] for d in item.split(",") if d.strip()]
    if dtype and not dtypes:
        raise UserError("--dtype names no dtype (e.g. --dtype bf16,fp8)")
    check_dtypes(dtypes)
    comm = {w.category == "comm" for w in chosen}
    if len(comm) > 1:
        raise UserError("collectives and scaling run across the nodes under torchrun, the other workloads once per "
                        "node: submit them as two jobs")
    from gpuparity.execute.slurm import script_value

    args = [*(workloads or []), "--suite", suite]
    if trials:
        args += ["--trials", str(trials)]
    for item in sets or []:
        args += ["--set", script_value("--set", item)]
    if dtypes:
        args += ["--dtype", ",".join(dtypes)]
    if label is not None:
        from gpuparity.validate import clean_text

        try:
            args += ["--label", script_value("--label", clean_text(label, "--label", 200))]
        except ValueError as exc:
            raise UserError(str(exc)) from None
    return args, comm == {True}


def _check_word(option: str, value: str | None) -> None:
    """An sbatch value given on the command line: printable, one word (it becomes an #SBATCH line)."""
    if value is not None and (not value.strip() or any(c.isspace() for c in value) or not value.isprintable()
                              or any(c in value for c in "'\"`$\\;|&<>")):
        raise UserError(f"{option} {value!r}: give one word, without spaces or shell characters")


def _store(db: str | None, nodes: int, array: int) -> str:
    """The store every task writes into, as the script names it: a postgresql:// URL without a
    password in any form (user:pass@, ?password=, ?sslpassword=), or (a job on one node only) the
    absolute path of a file store."""
    from gpuparity.execute.slurm import script_value
    from gpuparity.results.store_url import default_db, is_postgres, url_secrets

    url = db or default_db()
    if is_postgres(url):
        try:
            secrets = url_secrets(url)
        except ValueError:
            raise UserError("--db: not a valid postgresql:// URL") from None
        if secrets:
            raise UserError(f"--db holds a password ({', '.join(secrets)}): SLURM keeps the batch script (scontrol "
                            "write batch_script), so keep it out of the URL: ~/.pgpass or PGPASSFILE on the nodes "
                            "(or ?passfile=PATH), or PGPASSWORD in the environment sbatch passes on")
        if any(c.isspace() for c in url) or not url.isprintable():
            raise UserError("--db: a URL without spaces or control characters")
        return url
    if re.search(r"(?:^|\s)(?:ssl)?password\s*=", url, re.IGNORECASE):
        raise UserError("--db: a connection string with a password is not a store file: give "
                        "postgresql://user@host/db, its password in ~/.pgpass or PGPASSFILE on the nodes")
    path = script_value("--db", os.path.abspath(url.removeprefix("sqlite:///")))
    if nodes > 1 or array > 1:
        raise UserError(f"the store {path} is a file: {'a job on ' + str(nodes) + ' nodes' if nodes > 1 else 'an array'}"
                        f"{'' if nodes > 1 else ' (its tasks run on any nodes)'} would write to it from several nodes "
                        "at once, and SQLite on a shared file system loses writes or locks up; give the team's "
                        "PostgreSQL store: --db postgresql://user@host/db")
    return path


def _probe_store(url: str, out) -> None:
    """A PostgreSQL store unreachable from here is worth a warning before the job waits in the
    queue (the nodes may still reach it; a run that cannot be saved is spooled on its node)."""
    from gpuparity.results.store import Store
    from gpuparity.results.store_connect import StoreUnavailable
    from gpuparity.results.store_url import is_postgres

    if not is_postgres(url):
        return
    try:
        Store(url).close()
    except StoreUnavailable as exc:
        out.print(f"[yellow]warning: {escape(exc)} from here; the job is submitted: runs its nodes cannot save are "
                  "spooled there (gpuparity import FILE stores them)[/]")


def _wait(job: str, db: str, expected_runs: int, err) -> int:
    """Wait for every task of the job to end, then one line per task; 1 if one failed."""
    from gpuparity.execute import slurm

    def changed(tasks):
        states = ", ".join(f"{t['array_task_id'] or t['job_id']} {t['state']}" for t in tasks)
        err.print(f"job {job}: {escape(states) or 'unknown to the scheduler'}")

    try:
        tasks = slurm.wait(job, changed)
    except KeyboardInterrupt:
        err.print(f"stopped waiting; job {job} goes on (scancel {job} stops it; gpuparity list job={job} "
                  "shows its runs)")
        raise
    return report_job(job, db, tasks, expected_runs)


def report_job(job: str, db: str | None, tasks: list[dict], expected_runs: int | None = None) -> int:
    """Print one line per task of the job (its state and the runs it stored); 1 if one failed,
    or if the scheduler knows no task and the store holds no run of the job."""
    from gpuparity.execute import slurm
    from gpuparity.execute.journal import recover
    from gpuparity.results.store import Store

    recover(console(stderr=True))         # a task killed with its node left its journal: its trials count
    with Store(db) as store:
        runs = slurm.job_runs(store, job)
    if not tasks:
        typer.echo(f"job {job}: unknown to the scheduler (ended long ago, or never submitted); "
                   f"{len(runs)} run(s) stored")
        return 0 if runs else 1
    results = slurm.outcomes(tasks, runs, expected_runs)
    from gpuparity.validate import terminal_safe

    for o in results:
        typer.echo(terminal_safe(slurm.outcome_line(o)))
    failed = [o for o in results if o["failed"]]
    if failed:
        typer.echo(f"job {job}: {len(failed)} of {len(results)} task(s) failed", err=True)
    return 1 if failed else 0
