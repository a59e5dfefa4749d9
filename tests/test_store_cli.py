"""Runs into the store, list/show/export/import, bad files, failures and Ctrl-C."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuparity.errors import UserError
from gpuparity.results.schema import new_result, new_run, result_key, validate_run
from gpuparity.results.store import Store, decode_samples

WORKLOADS = str(Path(__file__).parent / "data" / "slow_workloads.py")


def table_counts(db):
    with sqlite3.connect(db) as c:
        return c.execute("SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM results)").fetchone()


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two real `gpuparity run gemm --dtype fp32` runs in one store, plus an export of the first."""
    from tests.conftest import run_cli

    d = tmp_path_factory.mktemp("runs")
    db = str(d / "a.db")
    env = {"GPUPARITY_DB": db}
    for _ in range(2):
        p = run_cli("run", "gemm", "--dtype", "fp32", env=env)
        assert p.returncode == 0, p.stderr
    return db, d


def test_two_runs_listed(two_runs, cli):
    db, _ = two_runs
    p = cli("list", "--json", "--db", db)
    runs = json.loads(p.stdout)
    assert len(runs) == 2
    assert all(r["n_results"] == 1 and r["status"] == "complete" for r in runs)
    shown = cli("show", runs[0]["run_id"][:20], "--db", db)
    assert shown.returncode == 0 and "gemm" in shown.stdout and "TFLOP/s" in shown.stdout


def test_export_import_reproduces_document(two_runs, cli, tmp_path):
    db, _ = two_runs
    out = tmp_path / "run.json"
    assert cli("export", "latest", "-o", str(out), "--db", db).returncode == 0
    other = str(tmp_path / "b.db")
    assert cli("import", str(out), "--db", other).returncode == 0
    again = cli("import", str(out), "--db", other)  # idempotent by run id
    assert again.returncode == 0 and "already stored" in again.stderr
    a = json.loads(cli("show", "latest", "--json", "--db", db).stdout)
    b = json.loads(cli("show", "latest", "--json", "--db", other).stdout)
    assert a == b
    assert table_counts(other) == (1, 1)
    r = a["results"][0]
    assert r["status"] == "ok" and r["samples"] and r["metric"]["unit"] == "TFLOP/s"
    assert r["metric"]["ci_low"] <= r["metric"]["value"] <= r["metric"]["ci_high"]


def _bad_files(tmp_path, good: dict) -> dict:
    text = json.dumps(good)
    files = {
        "truncated": text[: len(text) // 2],
        "not json": "hello, world",
        "wrong schema": json.dumps(dict(good, schema_version=99)),
        "no results": json.dumps({k: v for k, v in good.items() if k != "results"}),
        "bad samples": json.dumps(dict(good, results=[dict(good["results"][0], samples=["x"])])),
        "not utf8": b"\xff\xfe\x00garbage",
        "top-level list": "[1, 2]",
        "repeated key": json.dumps(dict(good, results=good["results"][:1] * 2)),
    }
    paths = {}
    for name, content in files.items():
        p = tmp_path / (name.replace(" ", "_") + ".json")
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        paths[name] = str(p)
    return paths


def test_bad_import_files_leave_store_unchanged(two_runs, cli, tmp_path):
    db, _ = two_runs
    good = json.loads(cli("show", "latest", "--json", "--db", db).stdout)
    good["run_id"] = "a-new-id"
    before = table_counts(db)
    for name, path in _bad_files(tmp_path, good).items():
        p = cli("import", path, "--db", db)
        assert p.returncode == 2, name
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), (name, p.stderr)
    # Oversized: the limit is lowered for the test instead of writing 256 MiB.
    ok_path = tmp_path / "ok.json"
    ok_path.write_text(json.dumps(good))
    p = cli("import", str(ok_path), "--db", db, env={"GPUPARITY_MAX_IMPORT_BYTES": "100"})
    assert p.returncode == 2 and "limit" in p.stderr
    # A good file next to a bad one: nothing is written.
    p = cli("import", str(ok_path), _bad_files(tmp_path, good)["truncated"], "--db", db)
    assert p.returncode == 2
    assert table_counts(db) == before
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_unknown_run_and_workload_are_one_line_errors(tmp_db, cli):
    for args in (["show", "nope"], ["export", "nope", "-o", "/tmp/x.json"], ["run", "no-such-workload"],
                 ["run", "--suite", "huge"], ["run", "gemm", "--set", "novalue"]):
        p = cli(*args)
        assert p.returncode == 2, args
        assert p.stderr.strip().startswith("error:") and len(p.stderr.strip().splitlines()) == 1, args


def test_failures_are_recorded_and_the_run_goes_on(tmp_db, cli):
    p = cli("run", "t_broken", "t_oom", "t_wrong", "t_quick", "--workload-file", WORKLOADS)
    assert p.returncode == 1, p.stderr          # stored, but a failed result makes the exit status 1
    doc = json.loads(cli("show", "latest", "--json").stdout)
    by = {r["workload"]: r for r in doc["results"]}
    assert by["t_broken"]["status"] == "failed" and "on purpose" in by["t_broken"]["reason"]
    assert by["t_oom"]["status"] == "skipped" and "out of memory" in by["t_oom"]["reason"]
    assert by["t_wrong"]["status"] == "failed" and "wrong result" in by["t_wrong"]["reason"]
    assert by["t_quick"]["status"] == "ok" and by["t_quick"]["metric"]["value"] > 0


def test_a_workload_named_twice_is_measured_once(tmp_db, cli):
    p = cli("run", "t_quick", "t_wrong", "t_quick", "--workload-file", WORKLOADS)
    assert p.returncode == 1 and "spooled" not in p.stderr, p.stderr    # the store took the run
    doc = json.loads(cli("show", "latest", "--json").stdout)
    assert doc["status"] == "complete"
    assert [r["workload"] for r in doc["results"]] == ["t_quick", "t_wrong"]


def _default_sigint() -> None:
    # A shell that starts CI in the background hands its jobs SIGINT ignored, and Python keeps an
    # ignored SIGINT ignored: give the child the terminal's default, as a user's Ctrl-C would find.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_run_keeps_finished_results(tmp_db, tmp_path, signum, code):
    """Ctrl-C or SIGTERM (a scheduler's time limit) in the middle of a run."""
    marker = tmp_path / "started"
    env = dict(os.environ, GPUPARITY_TEST_MARKER=str(marker), COLUMNS="200")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpuparity", "run", "t_quick", "t_block", "t_broken", "--workload-file", WORKLOADS,
         "--suite", "full", "--in-order"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
    try:
        deadline = time.time() + 60
        while not marker.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert marker.exists(), proc.communicate()
        time.sleep(0.3)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    with sqlite3.connect(tmp_db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        status, doc = c.execute("SELECT status, doc FROM runs").fetchone()
        rows = c.execute("SELECT workload, status FROM results").fetchall()
    assert status == "interrupted"
    assert rows == [("t_quick", "ok")]
    assert len(json.loads(doc)["results"]) == 1
    assert json.loads(doc)["interrupted_by"] == signal.Signals(signum).name


def test_a_signal_during_a_save_waits_for_the_commit(tmp_path):
    got = []

    def mine(signum, frame):
        got.append(signum)

    old = signal.signal(signal.SIGTERM, mine)
    try:
        with Store(str(tmp_path / "s.db")) as store:
            with store.transaction() as cur:
                signal.raise_signal(signal.SIGTERM)
                assert got == []             # held back while the transaction is open
                cur.execute("INSERT INTO reference_results (ref_id, source, doc) VALUES (?, ?, ?)", ("r", "t", "{}"))
            assert got == [signal.SIGTERM]   # delivered to the handler the process had, after COMMIT
            assert store.count("reference_results") == 1
            assert signal.getsignal(signal.SIGTERM) is mine          # the process's handler is back
    finally:
        signal.signal(signal.SIGTERM, old)


def test_schema_round_trip_and_key_stability(tmp_path):
    fp = {"host": "h", "backend": "cpu", "product": "x", "spec": {"id": "cpu"}}
    doc = new_run(fp)
    r = new_result("gemm", "kernel", {"m": 8, "n": 8, "k": 8}, "fp32")
    r["samples"] = [1e-3, 1.1e-3]
    r["work"] = {"flop": 1024.0}
    doc["results"].append(r)
    assert result_key("gemm", {"k": 8, "n": 8, "m": 8}, "fp32") == r["key"]  # param order does not matter
    assert result_key("gemm", {"m": 8, "n": 8, "k": 8}, "bf16") != r["key"]
    with Store(str(tmp_path / "s.db")) as s:
        assert s.save_run(doc) is True
        assert s.save_run(doc) is False
        assert s.get_run(doc["run_id"]) == json.loads(json.dumps(doc))
    validate_run(doc)
    with pytest.raises(UserError):
        validate_run(dict(doc, results=[dict(r, status="great")]))


def test_store_from_an_earlier_schema_is_upgraded_in_place(tmp_path):
    """Stores written before runs.fingerprint and binary samples existed keep working, nothing lost."""
    db = str(tmp_path / "old.db")
    fp = {"host": "h", "backend": "cpu", "product": "x", "spec": {"id": "cpu", "fp32_tflops": 1.0}}
    doc = new_run(fp)
    r = new_result("gemm", "kernel", {"m": 8}, "fp32")
    r.update(samples=[1e-3, 1e-3], work={"flop": 1e9}, metric={"unit": "TFLOP/s", "value": 1.0})
    doc["results"].append(r)
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, finished_at TEXT,"
                  " status TEXT NOT NULL, host TEXT, vendor TEXT, product TEXT, spec_id TEXT, stack TEXT,"
                  " torch TEXT, schema_version INTEGER NOT NULL, benchmark_version INTEGER NOT NULL,"
                  " n_results INTEGER NOT NULL, doc TEXT NOT NULL)")
        c.execute("CREATE TABLE results (run_id TEXT NOT NULL, key TEXT NOT NULL, workload TEXT NOT NULL,"
                  " category TEXT, dtype TEXT, params TEXT, status TEXT NOT NULL, reason TEXT, unit TEXT,"
                  " value REAL, samples TEXT, PRIMARY KEY (run_id, key))")
        c.execute("INSERT INTO runs VALUES (?, ?, NULL, 'complete', 'h', NULL, 'x', 'cpu', 'cpu', NULL, 1, 1, 1, ?)",
                  (doc["run_id"], doc["started_at"], json.dumps(doc)))
        c.execute("INSERT INTO results VALUES (?, ?, 'gemm', 'kernel', 'fp32', '{}', 'ok', NULL, 'TFLOP/s', 1.0, ?)",
                  (doc["run_id"], r["key"], "[1.0, 0.5]"))
    with Store(db) as s:
        assert s.run_fingerprints([doc["run_id"]]) == {doc["run_id"]: fp}
        (blob,) = s.query("SELECT samples FROM results")[0]
        assert decode_samples(blob) == [1.0, 0.5]
        assert s.get_run(doc["run_id"]) == json.loads(json.dumps(doc))
    with Store(db) as s:  # a second open changes nothing
        assert s.count("runs") == 1 and s.count("results") == 1
