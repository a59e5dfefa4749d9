"""`gpuparity submit` and the fleet views against a real SLURM cluster and a real PostgreSQL store.

The cluster: scripts/ci/slurm.sh starts munged (its own key), slurmctld and two slurmd (nodes
n1 and n2, one CPU each, no GPUs) on loopback for this session, as the PostgreSQL tests start a
server (tests/test_store_pg.py; its fixtures are used here). Jobs run the real CLI on the nodes
and write into a fresh PostgreSQL database per test. A node "dies" as a machine does: its slurmd
and every process of its job are killed (SIGKILL); the controller finds it not answering and
fails the job (NODE_FAIL). The tests skip, saying why, only where slurm-wlm or munge is not
installed (scripts/system-deps.sh installs them).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_cli
from test_store_pg import make_doc, pg_db, pg_server, psycopg  # noqa: F401  (the session's server)

from gpuparity.platform.detect import slurm_job
from gpuparity.results.store import Store

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "ci" / "slurm.sh"
SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"])
# 20 memory cases of a second or less each: long enough to stop a run in the middle
LONG = ["memory", "--set", "op=copy,scale,add,triad,read", "--set", "elements=1000000,2000000,4000000,8000000"]
SHORT = ["memory", "--set", "op=copy", "--set", "elements=65536"]


def _tool(name: str) -> str | None:
    return shutil.which(name, path=SBIN)


@pytest.fixture(scope="session")
def slurm():
    """{'env': {SLURM_CONF}, 'dir': the cluster's folder} of a running two-node cluster."""
    missing = [t for t in ("munged", "slurmctld", "slurmd", "sbatch", "scontrol") if _tool(t) is None]
    if missing:
        pytest.skip(f"slurm-wlm / munge not installed ({', '.join(missing)} missing; scripts/system-deps.sh "
                    "installs them)")
    p = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PATH=SBIN))
    if p.returncode != 0:
        why = f"{SCRIPT.name} exit {p.returncode}: {p.stderr.strip()[-600:]}"
        if os.geteuid() == 0:          # installed and root: it must run
            pytest.fail(f"the SLURM test cluster did not start ({why})")
        pytest.skip(f"the SLURM test cluster needs root here ({why})")
    env = dict(line.removeprefix("export ").split("=", 1) for line in p.stdout.splitlines()
               if line.startswith("export "))
    yield {"env": {"SLURM_CONF": env["SLURM_CONF"], "PATH": SBIN}, "dir": Path(env["GPUPARITY_TEST_SLURM_DIR"])}
    subprocess.run(["bash", str(SCRIPT), "stop", env["GPUPARITY_TEST_SLURM_DIR"]], capture_output=True, timeout=60,
                   env=dict(os.environ, PATH=SBIN))
    shutil.rmtree(env["GPUPARITY_TEST_SLURM_DIR"], ignore_errors=True)


@pytest.fixture
def job_env(slurm, pg_db, tmp_path):  # noqa: F811
    """The environment a user submits from: the cluster, the team store, a spool (shared with the
    nodes, as a home folder on a cluster is)."""
    return {**slurm["env"], "GPUPARITY_DB": pg_db, "GPUPARITY_SPOOL": str(tmp_path / "spool")}


def scheduler(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([_tool(args[0]), *args[1:]], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})


def submit(env: dict, cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    p = run_cli("submit", *args, "--partition", "debug", "--time", "10", env=env, cwd=str(cwd), timeout=300)
    m = re.search(r"Submitted batch job (\d+)", p.stdout)
    assert m, p.stdout + p.stderr
    return p, m.group(1)


def states(env: dict, job: str) -> dict[str, str]:
    """{task job id: state} of a job (every task of an array)."""
    out = scheduler(env, "scontrol", "show", "job", "-o", job).stdout
    return {m.group(1): m.group(2) for m in re.finditer(r"(?:^|\s)JobId=(\d+) .*?\sJobState=(\S+)", out, re.M)}


def wait_for(what, timeout: float, step: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(step)
    raise AssertionError(f"gave up after {timeout:g} s waiting for {what.__doc__ or what}")


def journals(spool: Path) -> list[dict]:
    """Each run in progress: its node, its task's job id and the trials it has finished (its journal)."""
    out = []
    for path in sorted((spool / "journal").glob("*.jsonl")):
        lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip().endswith("}")]
        head = next((x for x in lines if x.get("type") == "header"), None)
        if head:
            job = head["doc"]["fingerprint"].get("slurm") or {}
            out.append({"node": job.get("node"), "job_id": job.get("job_id"),
                        "trials": sum(x.get("type") == "trial" for x in lines)})
    return out


def job_runs(url: str, job: str) -> list[dict]:
    with Store(url) as store:
        return [store.get_run(i) for i in store.run_ids(job=job)]


def test_dry_run_is_a_script_the_controller_would_schedule(slurm, tmp_path):
    """--dry-run's script, given to `sbatch --test-only` on the real controller, parses and would
    start; one asking for GPUs this CPU-only cluster lacks is refused by the same check."""
    env = {**slurm["env"], "GPUPARITY_SPOOL": str(tmp_path / "spool")}
    url = "postgresql://bench@db.example:5432/gpuparity"
    jobs = {
        "array": ["--array", "2", *SHORT],
        "torchrun": ["collectives", "--suite", "comm", "--nodes", "2", "--set", "ops=all_reduce"],
        "two nodes, account, extra option": ["--nodes", "2", "--account", "bench", "--sbatch=--comment=fleet",
                                             *SHORT],
    }
    for what, args in jobs.items():
        p = run_cli("submit", *args, "--db", url, "--partition", "debug", "--time", "00:30:00", "--dry-run",
                    env=env)
        assert p.returncode == 0, p.stderr
        assert subprocess.run(["bash", "-n"], input=p.stdout, capture_output=True, text=True).returncode == 0
        check = subprocess.run([_tool("sbatch"), "--test-only"], input=p.stdout, capture_output=True, text=True,
                               env={**os.environ, **env}, timeout=60)
        assert check.returncode == 0, (what, check.stderr)
        assert re.search(r"to start at .* on nodes n\[?1", check.stderr), (what, check.stderr)
        assert f"--db {url}" in p.stdout
    assert "--array=0-1" in run_cli("submit", *jobs["array"], "--db", url, "--dry-run", env=env).stdout
    gpus = run_cli("submit", *SHORT, "--db", url, "--gpus-per-node", "8", "--dry-run", env=env).stdout
    check = subprocess.run([_tool("sbatch"), "--test-only"], input=gpus, capture_output=True, text=True,
                           env={**os.environ, **env}, timeout=60)
    assert check.returncode != 0 and "--gpus-per-node=8" in gpus
    assert scheduler(slurm["env"], "squeue", "-h").stdout.strip() == ""       # nothing was queued


def test_array_lands_one_run_per_task(job_env, pg_db, tmp_path):  # noqa: F811
    p, job = submit(job_env, tmp_path, *SHORT, "--array", "2", "--wait")
    assert p.returncode == 0, p.stdout + p.stderr
    runs = job_runs(pg_db, job)
    assert len(runs) == 2 and {r["status"] for r in runs} == {"complete"}
    blocks = [r["fingerprint"]["slurm"] for r in runs]
    assert {b["job"] for b in blocks} == {job}
    assert sorted(b["array_task_id"] for b in blocks) == [0, 1] and {b["array_task_count"] for b in blocks} == {2}
    assert {b["node"] for b in blocks} <= {"n1", "n2"} and len({b["job_id"] for b in blocks}) == 2
    assert all(r["results"] and r["results"][0]["status"] == "ok" for r in runs)
    # every task is named with its run
    for b, r in zip(blocks, runs, strict=True):
        assert re.search(rf"task {b['array_task_id']} \(job {b['job_id']}\) on {b['node']}: COMPLETED; "
                         rf"1 run stored: {r['run_id']} \(complete\)", p.stdout), p.stdout
    listed = run_cli("list", f"job={job}", env=job_env)
    assert listed.returncode == 0 and all(r["run_id"] in listed.stdout for r in runs)
    one = json.loads(run_cli("list", "--job", f"{job}_1", "--json", env=job_env).stdout)
    assert [x["run_id"] for x in one] == [r["run_id"] for r in runs if r["fingerprint"]["slurm"]["array_task_id"] == 1]
    # the fleet as one side: its report lists the job and its nodes
    md = run_cli("report", f"job={job}", "-f", "markdown", env=job_env)
    assert md.returncode == 0, md.stderr
    nodes = ", ".join(sorted({b["node"] for b in blocks}))
    assert "SLURM job" in md.stdout and f"| {job} | {nodes} |" in md.stdout, md.stdout[:3000]


def test_torchrun_job_across_two_nodes_writes_one_run(job_env, pg_db, tmp_path):  # noqa: F811
    p, job = submit(job_env, tmp_path, "collectives", "--suite", "comm", "--nodes", "2", "--set", "ops=all_reduce",
                    "--set", "max_bytes=16K", "--wait")
    assert p.returncode == 0, p.stdout + p.stderr + (tmp_path / f"gpuparity-{job}.out").read_text()
    runs = job_runs(pg_db, job)
    assert len(runs) == 1, [r["run_id"] for r in runs]          # rank 0 wrote; rank 1 did not
    run = runs[0]
    dist = run["fingerprint"]["distributed"]
    assert (dist["world_size"], dist["nodes"], dist["backend"]) == (2, 2, "gloo")
    assert run["fingerprint"]["slurm"]["node_list"] == "n[1-2]" and run["fingerprint"]["slurm"]["nodes"] == 2
    ok = [r for r in run["results"] if r["status"] == "ok"]
    assert ok and all(r["params"]["ranks"] == 2 and r["params"]["nodes"] == 2 for r in ok)
    assert len({r["key"] for r in run["results"]}) == len(run["results"])


def test_scancel_keeps_finished_trials_as_an_interrupted_run(job_env, pg_db, tmp_path):  # noqa: F811
    p, job = submit(job_env, tmp_path, *LONG)
    assert p.returncode == 0, p.stderr
    spool = Path(job_env["GPUPARITY_SPOOL"])

    def two_trials():
        """two finished trials in the run's journal"""
        return any(j["trials"] >= 2 for j in journals(spool))

    wait_for(two_trials, 120)
    assert scheduler(job_env, "scancel", job).returncode == 0
    wait_for(lambda: states(job_env, job).get(job) == "CANCELLED", 90)
    runs = job_runs(pg_db, job)
    assert len(runs) == 1
    run = runs[0]
    assert run["status"] == "interrupted" and run["interrupted_by"] == "SIGTERM"
    assert 2 <= len(run["results"]) < 20 and {r["status"] for r in run["results"]} == {"ok"}
    listed = run_cli("list", f"job={job}", env=job_env)
    assert re.search(rf"job {job} on n\d: CANCELLED \(cancelled.*1 run stored: {run['run_id']} \(interrupted\)",
                     listed.stdout), listed.stdout


def kill_node(slurm: dict, node: str, job_id: str) -> None:
    """The node dies: its slurmd and every process of the job running there, at once (SIGKILL)."""
    procs = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        procs[int(pid)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmd)
    doomed = {int((slurm["dir"] / f"slurmd-{node}.pid").read_text())}
    doomed |= {pid for pid, (_, cmd) in procs.items() if cmd.startswith(f"slurmstepd: [{job_id}.")}
    while True:
        more = {pid for pid, (parent, _) in procs.items() if parent in doomed} - doomed
        if not more:
            break
        doomed |= more
    # frozen first, then killed: a task killed while its slurmstepd still runs would be reported as
    # an ordinary exit 137 (FAILED) before the step daemon itself dies, not as a node that stopped
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for pid in doomed:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def test_a_task_whose_node_dies_is_reported_failed(slurm, job_env, pg_db, tmp_path):  # noqa: F811
    spool = Path(job_env["GPUPARITY_SPOOL"])
    waiting = subprocess.Popen([sys.executable, "-m", "gpuparity", "submit", *LONG, "--array", "2", "--partition",
                                "debug", "--time", "10", "--wait"], cwd=tmp_path, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, **job_env, "COLUMNS": "200"})
    try:
        def measuring_on_n2():
            """a run measuring on n2 (one trial journalled)"""
            return next((j for j in journals(spool) if j["node"] == "n2" and j["trials"] >= 1), None)

        victim = wait_for(measuring_on_n2, 120)["job_id"]
        kill_node(slurm, "n2", victim)
        out, err = waiting.communicate(timeout=240)
    finally:
        if waiting.poll() is None:
            waiting.kill()
        subprocess.run([_tool("slurmd"), "-f", slurm["env"]["SLURM_CONF"], "-N", "n2"], timeout=60)
        wait_for(lambda: scheduler(slurm["env"], "sinfo", "-h", "-n", "n2", "-o", "%t").stdout.strip() == "idle", 120)
    assert waiting.returncode == 1, out + err
    job = re.search(r"Submitted batch job (\d+)", out).group(1)
    assert re.search(rf"task \d \(job {victim}\) on n2: NODE_FAIL \(its node failed\);.*: failed$", out, re.M), out
    assert re.search(r"task \d \(job \d+\) on n1: COMPLETED; 1 run stored: \S+ \(complete\)$", out, re.M), out
    assert "1 of 2 task(s) failed" in err
    runs = {r["fingerprint"]["slurm"]["node"]: r for r in job_runs(pg_db, job)}
    assert runs["n1"]["status"] == "complete" and len(runs["n1"]["results"]) == 20
    # the dead task's finished trials are kept: its journal (in the shared spool) is stored as a crashed run
    assert runs["n2"]["status"] == "crashed" and 1 <= len(runs["n2"]["results"]) < 20


# -- without a scheduler: what submit refuses, and the job filter on both stores ---------------------
def test_submit_refuses_before_queueing_anything(tmp_path):
    env = {"GPUPARITY_SPOOL": str(tmp_path / "spool"), "GPUPARITY_DB": str(tmp_path / "team.db")}
    pg = "postgresql://bench@db.example/gpuparity"
    cases = {
        ("--nodes", "2"): "is a file: a job on 2 nodes",
        ("--array", "3"): "is a file: an array (its tasks run on any nodes)",
        ("--db", "postgresql://bench:s3cret@db.example/gpuparity"): "holds a password",
        ("nosuch", "--db", pg): "nosuch",
        ("memory", "--set", "bogus=1", "--db", pg): "unknown --set key bogus",
        ("memory", "collectives", "--db", pg): "submit them as two jobs",
        ("collectives", "--suite", "comm", "--db", pg): "need 2 ranks or more",
        ("memory", "--ranks-per-node", "2", "--db", pg): "--ranks-per-node applies to collectives",
        ("--time", "1:2:3:4", "--db", pg): "--time 1:2:3:4",
        ("--sbatch", "--qos=x; rm -rf /", "--db", pg): "give one sbatch option",
        ("--partition", "a b", "--db", pg): "--partition 'a b'",
        ("--python", "python3", "--db", pg): "absolute path",
    }
    for args, said in cases.items():
        p = run_cli("submit", *args, "--dry-run", env=env)
        assert p.returncode == 2 and said in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
        assert p.stdout == "", args
    assert not (tmp_path / "team.db").exists()
    # one node may use a file store: the script names its absolute path
    p = run_cli("submit", *SHORT, "--db", "team.db", "--dry-run", env=env, cwd=str(tmp_path))
    assert p.returncode == 0 and f"--db {tmp_path / 'team.db'}" in p.stdout
    # no SLURM on this machine: said in one line (nothing else happened)
    p = run_cli("submit", *SHORT, "--db", pg, env={**env, "PATH": str(tmp_path)})
    assert p.returncode == 2 and "sbatch not found" in p.stderr


def _fleet_doc(run_id: str, started: str, job: str, task: int, node: str, value: float) -> dict:
    doc = make_doc(run_id, started, "vm", value)
    doc["fingerprint"]["slurm"] = slurm_job({
        "SLURM_JOB_ID": str(int(job) + task), "SLURM_ARRAY_JOB_ID": job, "SLURM_ARRAY_TASK_ID": str(task),
        "SLURM_ARRAY_TASK_COUNT": "2", "SLURMD_NODENAME": node, "SLURM_JOB_NODELIST": node,
        "SLURM_JOB_NUM_NODES": "1", "SLURM_JOB_PARTITION": "debug"})
    return doc


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_job_filter_pools_a_jobs_runs(backend, pg_db, tmp_path):  # noqa: F811
    url = pg_db if backend == "postgresql" else str(tmp_path / "fleet.db")
    docs = [_fleet_doc("20260201-000000-a0", "2026-02-01T00:00:00+00:00", "700", 0, "gpu-a1", 10.0),
            _fleet_doc("20260201-000001-a1", "2026-02-01T00:00:01+00:00", "700", 1, "gpu-a2", 10.2),
            _fleet_doc("20260202-000000-b0", "2026-02-02T00:00:00+00:00", "800", 0, "gpu-b1", 12.0),
            make_doc("20260203-000000-c0", "2026-02-03T00:00:00+00:00", "vm", 11.0)]
    files = []
    for d in docs:
        path = tmp_path / f"{d['run_id']}.json"
        path.write_text(json.dumps(d))
        files.append(str(path))
    env = {"GPUPARITY_DB": url, "GPUPARITY_SPOOL": str(tmp_path / "spool")}
    assert run_cli("import", *files, env=env).returncode == 0
    ids = lambda *args: [r["run_id"] for r in json.loads(run_cli("list", *args, "--json", env=env).stdout)]  # noqa: E731
    assert sorted(ids("job=700")) == ["20260201-000000-a0", "20260201-000001-a1"]
    assert ids("--job", "700_1") == ["20260201-000001-a1"]
    assert ids("--job", "701") == ["20260201-000001-a1"]            # a task's own job id
    assert ids("job=800,host=vm") == ["20260202-000000-b0"] and ids("job=900") == []
    bad = run_cli("list", "job=7x", env=env)
    assert bad.returncode == 2 and "a SLURM job id is a number" in bad.stderr
    cmp = run_cli("compare", "job=700", "job=800", env=env)
    assert cmp.returncode == 0, cmp.stderr
    assert "SLURM job 700 on nodes gpu-a1, gpu-a2; 2 run(s)" in cmp.stdout and "SLURM job 800 on node gpu-b1" in cmp.stdout
    # a slurm block that is not what SLURM writes is refused on import
    broken = dict(docs[0], run_id="20260204-000000-d0")
    broken["fingerprint"] = dict(broken["fingerprint"], slurm={"job": "12; DROP TABLE runs"})
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    p = run_cli("import", str(tmp_path / "broken.json"), env=env)
    assert p.returncode == 2 and "slurm" in p.stderr


def test_slurm_block_is_read_from_the_environment():
    assert slurm_job({}) is None and slurm_job({"SLURM_JOB_ID": "x1"}) is None
    block = slurm_job({"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "gpu[01-04]", "SLURMD_NODENAME": "gpu02",
                       "SLURM_PROCID": "1", "SLURM_JOB_NUM_NODES": "4", "SLURM_JOB_ACCOUNT": "bench"})
    assert block == {"job": "42", "job_id": "42", "node_list": "gpu[01-04]", "node": "gpu02", "procid": 1,
                     "nodes": 4, "account": "bench"}
