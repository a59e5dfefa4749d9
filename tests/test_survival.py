"""Nothing measured is lost: signals at any point of a run, SIGKILL mid-run, a segfaulting
workload under --isolate, a hanging workload and its watchdog."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import default_sigint

WORKLOADS = str(Path(__file__).parent / "data" / "slow_workloads.py")


def start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, dict]:
    env = dict(os.environ, GPUPARITY_DB=str(tmp_path / "s.db"), GPUPARITY_SPOOL=str(tmp_path / "spool"),
               GPUPARITY_TEST_LOG=str(tmp_path / "log"), COLUMNS="200")
    proc = subprocess.Popen([sys.executable, "-m", "gpuparity", "run", *args, "--workload-file", WORKLOADS],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    return proc, env


def handling_signals(proc: subprocess.Popen, limit_s: float = 120) -> None:
    """Wait until the CLI has its handlers (Linux: SIGTERM in the SigCgt mask; the interpreter
    catches SIGINT itself from its start, SIGTERM only the CLI does). Before that the process is
    an interpreter still starting: a signal's default action ends it and no code of ours has run."""
    status = Path(f"/proc/{proc.pid}/status")
    deadline = time.monotonic() + limit_s
    while status.exists() and proc.poll() is None and time.monotonic() < deadline:
        try:
            caught = next(int(line.split()[1], 16) for line in status.read_text().splitlines()
                          if line.startswith("SigCgt:"))
        except (OSError, StopIteration):
            return
        if caught >> (signal.SIGTERM - 1) & 1:
            return
        time.sleep(0.002)


def started(tmp_path: Path) -> int:
    log = tmp_path / "log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def stored(tmp_path: Path, env: dict) -> list[dict]:
    """Every run the store holds after `gpuparity list` (which recovers a dead run's journal), plus
    spooled ones."""
    p = subprocess.run([sys.executable, "-m", "gpuparity", "list", "--json"], env=env, capture_output=True, text=True)
    if (tmp_path / "s.db").exists():
        assert p.returncode == 0, p.stderr
    else:           # stopped before anything was stored: list names the store it does not make
        assert p.returncode == 2 and "no store at" in p.stderr and not (tmp_path / "s.db").exists(), p.stderr
    docs = []
    if (tmp_path / "s.db").exists():
        with sqlite3.connect(tmp_path / "s.db") as c:
            assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            docs = [json.loads(d) for (d,) in c.execute("SELECT doc FROM runs")]
    spool = tmp_path / "spool"
    docs += [json.loads(f.read_text()) for f in spool.glob("*.json")] if spool.exists() else []
    return docs


def test_natural_run_is_complete(tmp_path):
    proc, env = start(tmp_path, "t_tick", "--in-order")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    (doc,) = stored(tmp_path, env)
    assert doc["status"] == "complete" and len(doc["results"]) == 10 and started(tmp_path) == 10


@pytest.mark.slow
def test_signals_at_twenty_points_keep_every_finished_result(tmp_path):
    """SIGINT and SIGTERM from start-up to after the table and the save: the exit status says
    which signal, nothing crashes, and every case that finished is stored or spooled."""
    probe = tmp_path / "probe"
    probe.mkdir()
    proc, _ = start(probe, "t_tick", "--in-order")
    handling_signals(proc)
    t0 = time.monotonic()
    proc.communicate(timeout=120)
    natural = time.monotonic() - t0                      # from the first instant the CLI handles signals
    for i in range(20):
        folder = tmp_path / f"p{i}"
        folder.mkdir()
        signum = signal.SIGINT if i % 2 else signal.SIGTERM
        proc, env = start(folder, "t_tick", "--in-order")
        handling_signals(proc)
        time.sleep(natural * 1.05 * i / 19)              # start-up, every case, the table, the save
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, 128 + signum), (i, proc.returncode, err[-2000:])
        assert "Traceback" not in err, (i, err[-2000:])
        docs = stored(folder, env)
        begun = started(folder)
        if begun:
            (doc,) = docs
            assert len(doc["results"]) >= begun - 1, (i, begun, len(doc["results"]), doc["status"])
            if proc.returncode == 0:
                assert doc["status"] == "complete" and len(doc["results"]) == 10
            else:
                assert doc["status"] in ("interrupted", "complete")
                if doc["status"] == "interrupted":
                    assert doc["interrupted_by"] == signal.Signals(signum).name


MID_IMPORT = """
import os, signal, sys
from gpuparity.errors import exit_on_sigterm, interrupt_on_sigint
from gpuparity.platform.detect import fingerprint
signum = int(sys.argv[1])
signal.signal(signal.SIGINT, interrupt_on_sigint)       # the handlers of the CLI, as during `run`
signal.signal(signal.SIGTERM, exit_on_sigterm)
fired = []
def hook(event, args):                                    # the signal at a fixed point inside torch's import
    if event == "import" and args[0] == "torch.functional" and not fired:
        fired.append(1)
        os.kill(os.getpid(), signum)
sys.addaudithook(hook)
try:
    fingerprint()
    print("not stopped")
except KeyboardInterrupt as exc:
    import torch
    print("stopped after the import", type(exc).__name__, fired, torch.ones(2).sum().item())
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_inside_the_torch_import_waits_for_it(signum):
    """Half-way through, a KeyboardInterrupt leaves torch half-initialised (every later use
    fails; in native code the process may abort or lose the signal): the fingerprint's import
    holds the signal until torch is whole, then the signal stops the run as anywhere else."""
    p = subprocess.run([sys.executable, "-c", MID_IMPORT, str(int(signum))], capture_output=True, text=True,
                       timeout=300, preexec_fn=default_sigint)
    name = "KeyboardInterrupt" if signum == signal.SIGINT else "Terminated"
    assert p.returncode == 0 and p.stdout.strip() == f"stopped after the import {name} [1] 2.0", p.stderr[-3000:]


def test_sigkill_mid_run_keeps_the_results_before_it(tmp_path):
    proc, env = start(tmp_path, "t_tick", "--in-order")
    deadline = time.time() + 120
    while started(tmp_path) < 5 and time.time() < deadline:
        time.sleep(0.02)
    proc.kill()
    proc.communicate(timeout=60)
    begun = started(tmp_path)
    (doc,) = stored(tmp_path, env)                       # recovered from the journal by `list`
    assert doc["status"] == "crashed" and len(doc["results"]) >= begun - 1 >= 4
    assert doc["crash"]["in_flight"] and all(r["status"] == "ok" for r in doc["results"])
    show = subprocess.run([sys.executable, "-m", "gpuparity", "show", doc["run_id"]], env=env, capture_output=True,
                          text=True)
    assert show.returncode == 0 and "crashed" in show.stdout


def test_a_segfault_under_isolate_fails_that_case_and_the_run_goes_on(tmp_path):
    proc, env = start(tmp_path, "t_quick", "t_segv", "--isolate", "--in-order")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err                     # a failed result: exit 1, run stored
    (doc,) = stored(tmp_path, env)
    by = {r["workload"]: r for r in doc["results"]}
    assert doc["status"] == "complete" and doc["plan"]["mode"] == "isolate"
    assert by["t_quick"]["status"] == "ok"
    assert by["t_segv"]["status"] == "failed" and "SIGSEGV" in by["t_segv"]["reason"]


def test_a_segfault_in_a_trial_worker_costs_that_case_only(tmp_path):
    proc, env = start(tmp_path, "t_segv", "t_quick", "--trials", "2", "--in-order")
    out, err = proc.communicate(timeout=300)
    (doc,) = stored(tmp_path, env)
    by = {r["workload"]: r for r in doc["results"]}
    assert doc["plan"]["mode"] == "workers" and by["t_segv"]["status"] == "failed"
    assert by["t_quick"]["status"] == "ok" and by["t_quick"]["metric"]["trials"] == 2


@pytest.mark.parametrize("mode", [[], ["--isolate"]], ids=["in-process", "isolate"])
def test_the_watchdog_fails_a_hung_case(tmp_path, mode):
    t0 = time.monotonic()
    proc, env = start(tmp_path, "t_hang", "t_quick", "--set", "case_timeout=2", "--in-order", *mode)
    out, err = proc.communicate(timeout=300)
    assert time.monotonic() - t0 < 100
    (doc,) = stored(tmp_path, env)
    by = {r["workload"]: r for r in doc["results"]}
    assert by["t_hang"]["status"] == "failed" and "hung" in by["t_hang"]["reason"], by["t_hang"]
    assert by["t_quick"]["status"] == "ok"
