"""Refuse before working: every option and store target of a command is checked before the first
case is measured or anything is created (exit 2, one line); files that are not regular files
(a FIFO, a device) are refused for reading everywhere, at once; a run stopped right after its
header leaves no journal that turns into a "crashed" run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from conftest import default_sigint
from test_compare import main_inprocess, make_result, make_run, noisy

RUN = ["run", "memory", "--set", "op=copy", "--set", "elements=4096", "--in-process"]


def snapshot(folder) -> set:
    return {os.path.join(d, n) for d, subs, files in os.walk(folder) for n in subs + files}


def refused(capsys, args: list[str], needle: str) -> str:
    code, out, err = main_inprocess(args, capsys)
    assert code == 2, (args, code, err)
    assert err.startswith("error:") and err.count("\n") == 1 and "Traceback" not in err, (args, err)
    assert needle in err, (args, err)
    assert "cases x" not in err and "gpuparity" not in out     # no run header: nothing was measured
    return err


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A user with an empty data dir, spool and default store: whatever a command creates shows."""
    monkeypatch.setenv("GPUPARITY_SPOOL", str(tmp_path / "spool"))
    monkeypatch.delenv("GPUPARITY_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path


def test_run_refuses_every_bad_store_target_before_measuring(home, capsys, monkeypatch):
    text = home / "notes.txt"
    text.write_text("not a database\n" * 100)
    foreign = home / "other.db"
    with sqlite3.connect(foreign) as c:
        c.execute("CREATE TABLE customers (id INTEGER)")
    folder = home / "folder"
    folder.mkdir()
    before = snapshot(home)
    for db, needle in ((str(text), "not a usable SQLite store"), (str(foreign), "not a gpuparity store"),
                       (str(folder), "is a folder"), ("/dev/null", "not a regular file"),
                       (str(home / "missing" / "x.db"), "does not exist")):
        refused(capsys, [*RUN, "--db", db], needle)
    assert snapshot(home) == before              # no store, folder, journal or spool was made
    # A read-only folder (simulated: root writes through modes): refused, not spooled after the work.
    from gpuparity.results import store as store_mod

    real = os.access
    monkeypatch.setattr(store_mod.os, "access", lambda p, m: False if m == os.W_OK else real(p, m))
    refused(capsys, [*RUN, "--db", str(folder / "x.db")], "read-only")
    assert snapshot(home) == before


@pytest.mark.parametrize("extra, needle", [
    (["--dtype", ""], "--dtype names no dtype"),
    (["--dtype", ","], "--dtype names no dtype"),
    (["--set", "elements=,"], "names no value"),
    (["--set", "elements=0"], "elements takes a whole number >= 1"),
    (["--set", "elements=-4"], "elements takes a whole number >= 1"),
    (["--set", "op=cpy"], "memory takes op in copy"),
    (["--profile", "/dev/null"], "not a folder"),
    (["--profile", "/nonexistent/traces"], "does not exist"),
    (["--isolate"], "--in-process and --isolate exclude each other"),
    (["--json", "/nonexistent/x.json"], "does not exist"),
])
def test_run_refuses_bad_options_before_measuring_or_creating(home, capsys, extra, needle):
    db = home / "s.db"
    refused(capsys, [*RUN, "--db", str(db), *extra], needle)
    assert not db.exists() and not (home / "spool").exists()


def test_a_broken_workload_file_is_one_line(home, capsys):
    bad = home / "mine.py"
    bad.write_text("WORKLOADS = [\n  def oops(:\n")
    refused(capsys, ["run", "--workload-file", str(bad), "--no-store"], "not valid Python (line 2")
    boom = home / "boom.py"
    boom.write_text("raise RuntimeError('no GPU here')\n")
    refused(capsys, ["run", "--workload-file", str(boom), "--no-store"], "RuntimeError: no GPU here")


def test_read_commands_create_no_folder_and_refuse_bad_values(home, capsys, tmp_path):
    missing = tmp_path / "nonexistent" / "dir" / "x.db"
    for verb, needle in ((["list"], "no store at"), (["show", "latest"], "no store at"), (RUN, "does not exist")):
        refused(capsys, [*verb, "--db", str(missing)], needle)
    assert not (tmp_path / "nonexistent").exists()
    refused(capsys, ["list", "--db", "/dev/null"], "not a regular file")
    refused(capsys, ["list", "--since", "notadate", "--db", str(tmp_path / "s.db")], "--since 'notadate'")
    run_file = tmp_path / "a.json"
    run_file.write_text(json.dumps(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 9, 1))])))
    refused(capsys, ["compare", str(run_file), str(run_file), "--price", "nosuchgpu=2"], "--price nosuchgpu")
    # --claims is a flag: the file goes with --claims-file, and is checked before a report is built
    refused(capsys, ["report", str(run_file), "--claims-file", str(tmp_path / "missing.yaml"), "-o",
                     str(tmp_path / "r.html")], "missing.yaml")
    assert not (tmp_path / "r.html").exists()
    refused(capsys, ["port", str(tmp_path), "--examine", "--json", "/nonexistent/x.json"], "does not exist")
    assert not os.path.exists("/nonexistent")
    before = snapshot(home)
    refused(capsys, ["reference", "import", "nosuch", str(run_file)], "unknown reference format")
    refused(capsys, ["reference", "import", "mlperf", str(tmp_path / "nosuch.json")], "nosuch.json")
    assert snapshot(home) == before and not (home / "data").exists()     # no default store appeared


@pytest.mark.parametrize("verb", [["show", "latest"], ["export", "latest", "-o", "OUT"],
                                  ["compare", "latest", "latest"], ["report", "latest", "-o", "OUT"], ["trend"],
                                  ["claims", "check"]])
def test_read_commands_create_no_store(home, capsys, verb):
    """A verb that only reads a store names a missing one (in an existing folder) and makes none;
    the default store alike."""
    db, out = home / "new.db", home / "out"
    args = [str(out) if a == "OUT" else a for a in verb]
    refused(capsys, [*args, "--db", str(db)], f"no store at {db}")
    assert not db.exists() and not out.exists()
    refused(capsys, args, "no store at")                    # the default store (in the user data dir)
    assert not (home / "data").exists() and not out.exists()


def test_list_before_anything_is_stored_is_no_runs_and_makes_no_store(home, capsys):
    """The default store not made yet: an empty list (exit 0), said on stderr, and no store appears;
    a store named by --db that does not exist is refused (a typo must not read as "no runs")."""
    for args in (["list", "--json"], ["list"]):
        code, out, err = main_inprocess(args, capsys)
        assert code == 0 and "no store at" in err and "no runs" in err, err
    assert json.loads(main_inprocess(["list", "--json"], capsys)[1]) == []
    assert not (home / "data").exists()
    refused(capsys, ["list", "--db", str(home / "new.db")], "no store at")
    assert not (home / "new.db").exists()


def test_run_and_import_create_their_store(home, capsys):
    run_file = home / "a.json"
    run_file.write_text(json.dumps(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 9, 1))])))
    code, _, err = main_inprocess(["import", str(run_file), "--db", str(home / "imported.db")], capsys)
    assert code == 0 and (home / "imported.db").exists(), err
    code, _, err = main_inprocess([*RUN, "--db", str(home / "run.db")], capsys)
    assert code == 0 and (home / "run.db").exists(), err
    code, out, err = main_inprocess(["list", "--json", "--db", str(home / "run.db")], capsys)
    assert code == 0 and len(json.loads(out)) == 1, err


def unblocker(path: str, after_s: float = 5.0) -> threading.Timer:
    """If a reader blocks on the FIFO anyway, open its other end so the test fails instead of hanging."""
    def release():
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass
    timer = threading.Timer(after_s, release)
    timer.daemon = True
    timer.start()
    return timer


@pytest.mark.parametrize("args", [
    ["import", "{fifo}"], ["claims", "check", "{fifo}"], ["reference", "import", "mlperf", "{fifo}"],
    ["run", "--workload-file", "{fifo}", "--no-store"], ["compare", "{fifo}", "{fifo}"],
    ["claims", "check", "--port-report", "{fifo}"],
])
def test_a_fifo_is_refused_at_once_everywhere(home, capsys, tmp_path, args):
    from gpuparity.results.store import Store

    fifo = str(tmp_path / "pipe.json")
    os.mkfifo(fifo)
    Store(str(tmp_path / "s.db")).close()       # claims check reads a store: one there, the FIFO is what it refuses
    timer = unblocker(fifo)
    t0 = time.monotonic()
    code, _, err = main_inprocess([a.format(fifo=fifo) for a in args] + (["--db", str(tmp_path / "s.db")]
                                  if args[0] in ("import", "claims") else []), capsys)
    took = time.monotonic() - t0
    timer.cancel()
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert took < 2.0, took
    assert "not a regular file" in err, err


def test_validate_open_regular_refuses_devices_and_reads_files(tmp_path):
    from gpuparity.errors import UserError
    from gpuparity.validate import check_regular, read_bounded

    f = tmp_path / "x.txt"
    f.write_bytes(b"hello")
    assert read_bounded(str(f)) == b"hello" and check_regular(str(f)) == str(f)
    for path, needle in (("/dev/null", "not a regular file"), (str(tmp_path), "is a folder"),
                         (str(tmp_path / "nope"), "cannot read")):
        with pytest.raises(UserError, match=needle):
            read_bounded(path)


# -- the journal window ------------------------------------------------------------------------
def journal_files(spool) -> list:
    folder = spool / "journal"
    return sorted(os.listdir(folder)) if folder.exists() else []


def test_the_journal_is_written_only_once_a_case_starts(home, monkeypatch):
    from gpuparity.execute.journal import Journal, recover
    from gpuparity.results.schema import new_run

    doc = new_run({"host": "h", "backend": "cpu"})
    j = Journal(doc, str(home / "s.db"))
    assert journal_files(home / "spool") == []          # the run header alone leaves nothing behind
    j.close(remove=False)
    assert journal_files(home / "spool") == [] and recover() == []
    j = Journal(doc, str(home / "s.db"))
    j.start(0, 1, "memory op=copy")
    assert journal_files(home / "spool") == [f"{doc['run_id']}.jsonl"]
    j.close(remove=True)
    assert journal_files(home / "spool") == []


def test_a_run_that_stopped_but_was_not_saved_is_recovered_with_its_real_state(home):
    from gpuparity.execute.journal import Journal, recover
    from gpuparity.results.figure import derive
    from gpuparity.results.schema import new_result, new_run
    from gpuparity.results.store import Store

    db = str(home / "s.db")
    doc = new_run({"host": "h", "backend": "cpu"})
    r = new_result("gemm", "kernel", {"m": 1}, "fp32")
    r.update(samples=noisy(1e-3, 0.01, 9, 1), work={"flop": 1e9}, summary={"n": 9})
    derive(r, None, None)
    j = Journal(doc, db)
    j.start(0, 1, "gemm m=1")
    j.trial(0, 1, r)
    j.end("interrupted", "SIGINT")
    j._fh.close()                      # the process died during its save: the journal stays
    recover()
    with Store(db) as s:
        (run,) = s.list_runs()
        assert run["status"] == "interrupted" and run["n_results"] == 1
        assert "recovered" in s.get_run(run["run_id"])
    # a journal of an earlier version with a header and no case: removed, no empty "crashed" run
    folder = home / "spool" / "journal"
    (folder / "old.jsonl").write_text(json.dumps({"type": "header", "doc": dict(doc, run_id="old"), "db": db}) + "\n")
    recover()
    assert journal_files(home / "spool") == []
    with Store(db) as s:
        assert [x["run_id"] for x in s.list_runs()] == [run["run_id"]]


def test_ctrl_c_right_after_the_run_header_leaves_no_crashed_run(home, tmp_path):
    db = str(tmp_path / "s.db")
    env = dict(os.environ, GPUPARITY_DB=db, COLUMNS="200")
    # The case sleeps 120 s a call, so the run cannot end before the signal however slow the machine;
    # the signal lands between the header and the first case, or inside the case: either way nothing
    # may read "crashed". SIGINT is set to its default in the child: a background CI shell hands it
    # ignored, an ignored SIGINT stays ignored, and the run then ended normally (exit 0).
    workloads = os.path.join(os.path.dirname(__file__), "data", "slow_workloads.py")
    proc = subprocess.Popen([sys.executable, "-m", "gpuparity", "run", "t_hang", "--workload-file", workloads,
                             "--in-process"], stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=default_sigint)
    deadline = time.monotonic() + 120
    for line in proc.stderr:
        if "cases x" in line:                       # the header: interrupt at once
            proc.send_signal(signal.SIGINT)
            break
        assert time.monotonic() < deadline
    try:
        proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert journal_files(home / "spool") == []
    if not os.path.exists(db):         # stopped before anything was kept: no store was made for it
        return
    listed = subprocess.run([sys.executable, "-m", "gpuparity", "list", "--json"], capture_output=True, text=True,
                            env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    assert all(r["status"] == "interrupted" for r in runs), runs     # never "crashed" with 0 results
