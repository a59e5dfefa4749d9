"""SLURM: the batch script `gpuparity submit` writes, its submission, and what the scheduler says
of a job's tasks once they ran.

The script is plain sbatch: `#SBATCH` lines, then one `srun` step. A per-node suite runs
`gpuparity run` once on every node of the job (each node's run is its own document); collectives
and scaling run one torchrun agent per node, the ranks meeting through torchrun's c10d
rendezvous on the job's first node (its address as SLURM knows it, a port from the job id), and
rank 0 writes one run. Every task writes into the one store named in the script; the run
documents carry the job (platform/detect.slurm_job). The scheduler is only asked through its
own commands (sbatch, scontrol); nothing here talks to slurmctld itself.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field

from gpuparity.errors import UserError

# Job states after which a task runs no more (squeue(1) JOB STATE CODES); only COMPLETED is a success.
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE",
         "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"}
# What an ended state means, in words (the state itself is printed too).
MEANING = {"NODE_FAIL": "its node failed", "CANCELLED": "cancelled", "TIMEOUT": "time limit reached",
           "OUT_OF_MEMORY": "out of memory", "BOOT_FAIL": "its node did not boot", "PREEMPTED": "preempted",
           "DEADLINE": "deadline passed", "FAILED": "exited with an error"}
SIGNAL_LEAD_S = 120          # runs are told to stop (SIGTERM) this long before the time limit
RDZV_PORT_BASE = 20000       # the rendezvous port is RDZV_PORT_BASE + job id % 20000


@dataclass
class JobSpec:
    """What one submission asks for. run_args: the `gpuparity run` arguments (workloads, --suite,
    --set ...), without --db, which is `db`."""

    run_args: list[str]
    db: str
    python: str
    nodes: int = 1
    gpus_per_node: int = 0
    ranks_per_node: int = 1
    distributed: bool = False          # collectives / scaling: srun + torchrun across the allocation
    array: int = 0                     # tasks of a job array (0: a plain job)
    partition: str | None = None
    account: str | None = None
    time_limit: str = "01:00:00"
    job_name: str = "gpuparity"
    output: str | None = None
    exclusive: bool = True
    extra: list[str] = field(default_factory=list)     # further #SBATCH options, as typed


def time_seconds(text: str) -> int:
    """A SLURM time limit (sbatch --time: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) in seconds."""
    t = text.strip()
    # ASCII digits only: Python's \d also takes other scripts' digits (١٠), which sbatch cannot read
    m = re.fullmatch(r"(?:(\d{1,4})-)?(\d{1,6})(?::(\d{1,2}))?(?::(\d{1,2}))?", t, re.ASCII)
    if not m:
        raise UserError(f"--time {text}: give a SLURM time limit (MM, HH:MM:SS or D-HH:MM:SS, e.g. 01:30:00)")
    days, a, b, c = (int(g) if g else None for g in m.groups())
    if days is not None:          # D-HH[:MM[:SS]]
        seconds = days * 86400 + a * 3600 + (b or 0) * 60 + (c or 0)
    elif c is not None:           # HH:MM:SS
        seconds = a * 3600 + b * 60 + c
    elif b is not None:           # MM:SS
        seconds = a * 60 + b
    else:                         # MM
        seconds = a * 60
    if seconds <= 0:
        raise UserError(f"--time {text}: the time limit must be more than zero")
    return seconds


def script_value(what: str, value: str) -> str:
    """A value written into the batch script: text without control characters (a newline or CR
    would end the line it is on: the rest would run as shell, or be read as an #SBATCH directive,
    or end sbatch's directives early), else refused in one line."""
    from gpuparity.validate import terminal_safe

    if terminal_safe(value) != value:        # it holds a control, bidi or line-separator character
        raise UserError(f"{what} {terminal_safe(value)[:200]!r}: holds a control character (a newline, CR, tab, "
                        "escape): the batch script takes one line per value")
    return value


def check_option(text: str) -> str:
    """A further sbatch option (--sbatch): one '--name' or '--name=value', no newline or shell text."""
    t = text.strip()
    if not re.fullmatch(r"--[A-Za-z][A-Za-z0-9-]*(=[^\s'\"\\`$;|&<>]+)?", t, re.ASCII) or not t.isprintable():
        raise UserError(f"--sbatch {text!r}: give one sbatch option as --name or --name=value (e.g. "
                        "--sbatch=--qos=high, --sbatch=--constraint=h100)")
    name = t[2:].partition("=")[0]
    if len(name) >= 2 and "wrap".startswith(name):
        raise UserError(f"--sbatch {text!r}: --wrap runs a command instead of the script: give sbatch options only")
    return t


def batch_script(spec: JobSpec) -> str:
    """The sbatch script of a submission (see the module notes)."""
    q = shlex.quote
    for value in (*spec.run_args, spec.db, spec.python, spec.partition, spec.account, spec.time_limit,
                  spec.job_name, spec.output, *spec.extra):
        if value is not None:                # every value again: a caller's JobSpec too
            script_value("a value of the batch script", str(value))
    # The comment quotes the very words of the command below, so it reads as they will run.
    what = " ".join(q(a) for a in spec.run_args) or "the quick suite"
    lines = [
        "#!/bin/bash",
        f"# gpuparity submit: `gpuparity run {what}`"
        + (f" across {spec.nodes} node(s) under torchrun, rank 0 writing one run" if spec.distributed
           else f" on each of {spec.nodes} node(s), one run per node")
        + (f", in each of {spec.array} array tasks" if spec.array else "") + ", into one store.",
        "# Submit it as it is (sbatch FILE) or edit it first; `gpuparity list job=ID` shows the job's runs.",
        f"#SBATCH --job-name={spec.job_name}",
        f"#SBATCH --nodes={spec.nodes}",
        "#SBATCH --ntasks-per-node=1",
    ]
    if spec.gpus_per_node:
        lines.append(f"#SBATCH --gpus-per-node={spec.gpus_per_node}")
    if spec.exclusive:        # a benchmark shares no node: a co-tenant's load is measured as the machine's
        lines += ["#SBATCH --exclusive", "#SBATCH --mem=0"]
    lines.append(f"#SBATCH --time={spec.time_limit}")
    if spec.partition:
        lines.append(f"#SBATCH --partition={spec.partition}")
    if spec.account:
        lines.append(f"#SBATCH --account={spec.account}")
    if spec.array:
        lines.append(f"#SBATCH --array=0-{spec.array - 1}")
    lines.append(f"#SBATCH --output={spec.output or ('gpuparity-%A_%a.out' if spec.array else 'gpuparity-%j.out')}")
    # A node that fails is reported as NODE_FAIL, not silently rerun elsewhere under the same job id.
    lines.append("#SBATCH --no-requeue")
    if time_seconds(spec.time_limit) >= 5 * SIGNAL_LEAD_S:      # a shorter job would be told at once
        # SIGTERM before the limit: every run stops measuring and saves what finished (interrupted).
        lines.append(f"#SBATCH --signal=TERM@{SIGNAL_LEAD_S}")
    lines += [f"#SBATCH {opt}" for opt in spec.extra]
    lines += ["", "set -euo pipefail", ""]
    run = [spec.python, "-m", "gpuparity", "run", *spec.run_args, "--db", spec.db]
    # Each step task gets its node's CPUs (a step task gets one CPU unless told).
    step = 'srun --ntasks-per-node=1 --cpus-per-task="$SLURM_CPUS_ON_NODE"'
    if spec.distributed:
        lines += [
            "# The ranks meet on the job's first node: its address as SLURM knows it (NodeAddr), a port",
            "# from the job id; one torchrun agent per node starts one rank per GPU.",
            'head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)',
            'addr=$(scontrol show node "$head" | sed -n "s/.*NodeAddr=\\([^ ]*\\).*/\\1/p")',
            f'port=$(({RDZV_PORT_BASE} + SLURM_JOB_ID % 20000))',
            f"{step} --kill-on-bad-exit=1 \\",
            f"  {q(spec.python)} -m torch.distributed.run --nnodes \"$SLURM_JOB_NUM_NODES\" "
            f"--nproc-per-node {spec.ranks_per_node} \\",
            '  --rdzv-id "$SLURM_JOB_ID" --rdzv-backend c10d --rdzv-endpoint "${addr:-$head}:$port" \\',
            "  " + " ".join(q(a) for a in run[1:]),
        ]
    else:
        lines.append(f"{step} " + " ".join(q(a) for a in run))
    return "\n".join(lines) + "\n"


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise UserError(f"{name} not found: submit from a SLURM login node (gpuparity submit --dry-run prints "
                        "the batch script without submitting it)")
    return path


def sbatch(script: str, test_only: bool = False, timeout: float = 60.0) -> str:
    """Submit the script (sbatch reads it on stdin); returns the job id sbatch printed. test_only:
    sbatch --test-only (the controller checks the script and says when it would start; nothing is
    queued): returns its message."""
    args = [tool("sbatch"), "--test-only" if test_only else "--parsable"]
    try:
        p = subprocess.run(args, input=script, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise UserError(f"sbatch gave no answer in {timeout:g} s (is slurmctld up? scontrol ping)") from None
    said = (p.stderr.strip() or p.stdout.strip()).splitlines()
    if p.returncode != 0:
        raise UserError(f"sbatch refused the job: {said[-1] if said else f'exit {p.returncode}'}")
    if test_only:
        return said[-1] if said else ""
    job = p.stdout.strip().split(";")[0]
    if not job.isdigit():
        raise UserError(f"sbatch answered {p.stdout.strip()[:200]!r}, not a job id")
    return job


# -- what the scheduler says of a job's tasks ---------------------------------------------------
_FIELDS = ("JobId", "ArrayJobId", "ArrayTaskId", "JobState", "Reason", "ExitCode", "NodeList", "NumNodes")


def parse_scontrol(text: str) -> list[dict]:
    """`scontrol show job -o` lines (one per task; an array's pending tasks share one line whose
    ArrayTaskId is a range) as dicts of the fields read here."""
    tasks = []
    for line in text.splitlines():
        if "JobId=" not in line:
            continue
        got = {k: m.group(1) for k in _FIELDS if (m := re.search(rf"(?:^|\s){k}=(\S*)", line))}
        node_list = got.get("NodeList")
        tasks.append({"job_id": got.get("JobId"), "array_job_id": got.get("ArrayJobId"),
                      "array_task_id": got.get("ArrayTaskId"), "state": (got.get("JobState") or "?").split("+")[0],
                      "reason": got.get("Reason") if got.get("Reason") not in (None, "None") else None,
                      "exit_code": got.get("ExitCode"),
                      "nodes": node_list if node_list not in (None, "", "(null)") else None,
                      "num_nodes": int(got["NumNodes"].split("-")[0]) if got.get("NumNodes", "").split("-")[0].isdigit()
                      else None})
    return tasks


def job_tasks(job: str, timeout: float = 30.0) -> list[dict]:
    """The job's tasks as slurmctld knows them (finished ones for MinJobAge, 300 s by default),
    else as accounting (sacct) recorded them; [] when neither knows the job."""
    try:
        p = subprocess.run([tool("scontrol"), "show", "job", "-o", job], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise UserError(f"scontrol gave no answer in {timeout:g} s (is slurmctld up? scontrol ping)") from None
    if p.returncode == 0:
        return parse_scontrol(p.stdout)
    if "Invalid job id" not in p.stderr:
        raise UserError(f"scontrol show job {job}: {(p.stderr.strip() or f'exit {p.returncode}').splitlines()[-1]}")
    return _sacct_tasks(job, timeout)


def _sacct_tasks(job: str, timeout: float) -> list[dict]:
    """A job slurmctld forgot, from accounting (none where the site keeps no accounting)."""
    path = shutil.which("sacct")
    if path is None:
        return []
    p = subprocess.run([path, "-j", job, "-X", "-n", "-P", "-o", "JobIDRaw,JobID,State,ExitCode,NodeList,NNodes"],
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        return []
    tasks = []
    for line in p.stdout.splitlines():
        parts = line.split("|")
        if len(parts) != 6:
            continue
        raw, shown, state, code, nodes, n = parts
        task = shown.split("_", 1)[1] if "_" in shown else None
        tasks.append({"job_id": raw, "array_job_id": shown.split("_")[0] if task else None, "array_task_id": task,
                      "state": state.split()[0] if state else "?", "reason": None, "exit_code": code,
                      "nodes": nodes or None, "num_nodes": int(n) if n.isdigit() else None})
    return tasks


def ended(tasks: list[dict]) -> bool:
    return bool(tasks) and all(t["state"] in ENDED for t in tasks)


def wait(job: str, on_change=None, poll_s: float = 2.0, timeout_s: float | None = None) -> list[dict]:
    """Poll the scheduler until every task of the job has ended (or the job is unknown to it);
    on_change(tasks) whenever the states change. Returns the last tasks seen."""
    seen, start = None, time.monotonic()
    while True:
        tasks = job_tasks(job)
        states = [(t["job_id"], t["array_task_id"], t["state"]) for t in tasks]
        if states != seen and on_change is not None:
            on_change(tasks)
        seen = states
        if not tasks or ended(tasks):
            return tasks
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            return tasks
        time.sleep(poll_s)


def outcomes(tasks: list[dict], runs: list[dict], expected_runs: int | None = None) -> list[dict]:
    """Per task: its state, the runs it stored (runs: {"run_id", "status", "slurm"} of the job) and
    whether it failed: a task that ended other than COMPLETED, or stored fewer runs than
    expected (at least one), failed; one still queued or running has not (yet)."""
    by_task: dict[str, list[dict]] = {}
    for r in runs:
        by_task.setdefault(str((r.get("slurm") or {}).get("job_id")), []).append(r)
    out = []
    for t in sorted(tasks, key=_task_order):
        mine = by_task.get(str(t["job_id"]), [])
        want = expected_runs or 1
        failed = t["state"] in ENDED and (t["state"] != "COMPLETED" or len(mine) < want)
        out.append({**t, "runs": mine, "failed": failed})
    return out


def _task_order(t: dict) -> tuple:
    task = str(t.get("array_task_id") or "")
    return (int(task) if task.isdigit() else -1, task, int(t["job_id"]) if str(t["job_id"]).isdigit() else 0)


def outcome_line(o: dict) -> str:
    """'task 1 (job 13) on n2: NODE_FAIL (exit 0:0); no run stored: failed'."""
    task = f"task {o['array_task_id']} (job {o['job_id']})" if o.get("array_task_id") else f"job {o['job_id']}"
    where = f" on {o['nodes']}" if o.get("nodes") else ""
    state = o["state"] + (f" ({o['reason']})" if o.get("reason") and o["state"] not in ENDED else "")
    if o["state"] in MEANING:
        state += f" ({MEANING[o['state']]}"
        state += f", exit {o['exit_code']})" if o.get("exit_code") not in (None, "0:0") else ")"
    runs = o["runs"]
    if runs:
        stored = ", ".join(f"{r['run_id']} ({r['status']})" for r in runs)
        stored = f"{len(runs)} run{'s' if len(runs) > 1 else ''} stored: {stored}"
    else:
        stored = "no run stored" if o["state"] in ENDED else "no run stored yet"
    return f"{task}{where}: {state}; {stored}" + (": failed" if o["failed"] else "")


def job_runs(store, job: str) -> list[dict]:
    """The stored runs of a job: run id, status and the fingerprint's slurm block."""
    rows = store.list_runs(limit=2**31, job=job)
    fps = store.run_fingerprints([r["run_id"] for r in rows])
    return [{"run_id": r["run_id"], "status": r["status"], "host": r["host"],
             "slurm": (fps.get(r["run_id"]) or {}).get("slurm") or {}} for r in rows]
