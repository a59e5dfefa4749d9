"""Text from outside is valid text or refused up front; a journal that cannot be recovered never
blocks a command; readers never create or rewrite a store; and the inputs that once ended in a
traceback (a bad claims file through `report`, a bad WORKLOADS, a bad GPUPARITY_SPOOL, empty
filters, an unchecked --like or --set value) are one line and exit 2, before any work."""

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
from test_compare import main_inprocess, make_result, make_run, noisy

from gpuparity.results.schema import result_key
from gpuparity.results.store import Store

MLPERF = Path(__file__).parent / "data" / "mlperf_inference_v4.1_excerpt.json"
RUN = ["run", "memory", "--set", "op=copy", "--set", "elements=4096", "--in-process"]


def cli(args: list, env: dict, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    full = dict(os.environ, COLUMNS="200", HF_HUB_OFFLINE="1", **env)
    return subprocess.run([sys.executable, "-m", "gpuparity", *args], capture_output=True, timeout=timeout,
                          env=full, **kw)


def snapshot(folder: Path) -> dict:
    return {str(p): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPARITY_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("GPUPARITY_DB", raising=False)
    return tmp_path


def refused(capsys, args: list, needle: str) -> str:
    code, out, err = main_inprocess(args, capsys)
    assert code == 2 and err.startswith("error:") and err.count("\n") == 1, (args, code, err)
    assert needle in err, (args, err)
    assert "cases x" not in err, (args, err)          # the run header: nothing was measured
    return err


def test_a_byte_that_is_not_utf8_in_a_label_url_or_run_id_is_refused_before_work(home):
    db = home / "s.db"
    env = {"GPUPARITY_SPOOL": str(home / "spool"), "XDG_DATA_HOME": str(home / "data")}
    for args in ([*RUN, "--db", str(db), "--label", b"\xff\xfe"], ["list", "--db", str(db), "--label", b"\xff"],
                 ["show", b"\xff", "--db", str(db)], [*RUN, "--db", b"postgresql://u@127.0.0.1/\xff"],
                 ["list", "--db", b"gp\xe9.db"]):
        p = cli(args, env)
        err = p.stderr.decode()
        assert p.returncode == 2 and err.count("\n") == 1 and "not valid UTF-8 text" in err, (args, err)
        assert "Traceback" not in err and "cases x" not in err
    assert not db.exists() and not (home / "spool").exists() and not (home / "data").exists()


def journal(folder: Path, run_id: str, label, db: str) -> Path:
    """A journal as a run that died writes it: a header and one finished trial."""
    doc = make_run([], run_id=run_id)
    doc.pop("results")
    doc["label"] = label
    result = make_result("gemm", {"m": 64, "n": 64, "k": 64}, noisy(10, 0.01, 9, 1))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{run_id}.jsonl"
    lines = [{"type": "header", "doc": doc, "db": db, "pid": 1},
             {"type": "start", "case": 0, "trial": 1, "what": "gemm"},
             {"type": "trial", "case": 0, "trial": 1, "result": result}]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))       # json escapes the lone surrogate
    return path


def test_a_journal_that_cannot_be_recovered_is_set_aside_with_one_warning(home, capsys):
    db = str(home / "s.db")
    Store(db).close()
    folder = home / "spool" / "journal"
    bad = journal(folder, "20260101-000000-badlabel", "\udcff\udcfe", db)      # the label that broke every command
    torn = folder / "20260101-000000-torn.jsonl"
    torn.write_text(json.dumps({"type": "header", "doc": 5}) + "\n" + json.dumps({"type": "end"}) + "\n")
    good = journal(folder, "20260101-000000-goodrun", "fine", db)
    for f in (bad, torn, good):
        os.chmod(f, 0o600)
    code, _, err = main_inprocess(["list", "--db", db, "--json"], capsys)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning: journal")]
    assert len(warnings) == 2 and all("moved aside" in w for w in warnings), err
    assert any("UnicodeEncodeError" in w and "badlabel" in w for w in warnings), err
    assert sorted(p.name for p in folder.iterdir()) == [bad.name + ".unrecoverable", torn.name + ".unrecoverable"]
    with Store(db) as s:               # the good one was stored, past the bad ones
        assert s.get_run("20260101-000000-goodrun")["status"] == "crashed"
    for args in (["list", "--db", db], ["show", "latest", "--db", db]):     # and nothing blocks any more
        code, _, err = main_inprocess(args, capsys)
        assert code == 0 and "journal" not in err and "recovered" not in err, (args, err)


def test_one_planted_unrecoverable_journal_is_one_warning_and_the_next_list_works(home):
    """As a user meets it, in a real process: a journal of another store that cannot be stored (its
    label a lone surrogate) warns once, in one line, and blocks neither this `list` nor the next."""
    db, other = str(home / "s.db"), str(home / "other.db")
    Store(db).close()
    Store(other).close()
    folder = home / "spool" / "journal"
    bad = journal(folder, "20260101-000000-planted", "\udcff", other)
    os.chmod(bad, 0o600)
    env = {"GPUPARITY_SPOOL": str(home / "spool"), "XDG_DATA_HOME": str(home / "data")}
    first = cli(["list", "--db", db], env)
    err = first.stderr.decode()
    assert first.returncode == 0 and "Traceback" not in err, err
    assert len(err.splitlines()) == 1 and err.startswith("warning: journal") and "moved aside" in err, err
    assert [p.name for p in folder.iterdir()] == [bad.name + ".unrecoverable"]
    for args in (["list", "--db", db], ["list", "--db", other], [*RUN, "--db", db]):
        p = cli(args, env)
        assert p.returncode == 0 and "journal" not in p.stderr.decode(), (args, p.stderr.decode())


@pytest.mark.parametrize("verb", [["list"], ["show", "latest"], ["export", "latest", "-o", "{out}"],
                                  ["compare", "latest", "latest"], ["report", "latest", "-o", "{out}"], ["trend"],
                                  ["claims", "check"], ["reference", "list"], ["reference", "show", "x"],
                                  ["reference", "compare", "mi300x", "h100-sxm"]])
def test_a_reader_never_creates_or_rewrites_a_store(home, capsys, verb):
    out = home / "out.json"
    args = [str(out) if a == "{out}" else a for a in verb]
    for content in (b"", None):                 # an empty file; no file at all
        db = home / "s.db"
        if content is not None:
            db.write_bytes(content)
        before = snapshot(home)
        refused(capsys, [*args, "--db", str(db)], "no store")
        assert snapshot(home) == before
        if db.exists():
            db.unlink()


def test_no_command_turns_a_file_that_is_not_a_store_into_one(home, capsys):
    run_file = home / "a.json"
    run_file.write_text(json.dumps(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 9, 1))])))
    for content, needle in ((b"", "an empty file"), (b"x", "not a SQLite file"), (b"hello\n" * 3, "not a SQLite file")):
        db = home / "f.db"
        db.write_bytes(content)
        before = snapshot(home)
        refused(capsys, [*RUN, "--db", str(db)], needle)
        refused(capsys, ["import", str(run_file), "--db", str(db)], needle)
        refused(capsys, ["reference", "import", "mlperf", str(MLPERF), "--db", str(db)], needle)
        assert snapshot(home) == before
    sqlite3.connect(home / "empty.sqlite").execute("VACUUM").connection.close()    # a SQLite file, no tables
    refused(capsys, ["list", "--db", str(home / "empty.sqlite")], "no store")
    with sqlite3.connect(home / "empty.sqlite") as c:
        assert c.execute("SELECT COUNT(*) FROM sqlite_master").fetchone() == (0,)


@pytest.mark.parametrize("db, needle", [(":memory:", "in-memory"), ("sqlite:///:memory:", "in-memory"),
                                        ("", "--db is empty"),
                                        ("postgresql://u@127.0.0.1:notaport/db", "not a port number"),
                                        ("postgresql://u:pw@[::1/db", "closing ]")])
def test_stores_that_keep_nothing_or_cannot_be_reached_are_refused_before_work(home, capsys, db, needle):
    err = refused(capsys, [*RUN, "--db", db], needle)
    assert "pw@" not in err and not (home / "spool").exists() and not (home / "data").exists()
    refused(capsys, ["list", "--db", db], needle)


@pytest.mark.parametrize("db", ["postgresql://u:SEC%RET@127.0.0.1/db", "postgresql://u@127.0.0.1/db?password=SEC%RET"])
def test_a_url_libpq_cannot_read_is_refused_before_work_its_password_unsaid(home, capsys, db):
    """A % that starts no escape: libpq would refuse it after the run (and repeat the password)."""
    for args in ([*RUN, "--db", db], ["list", "--db", db]):
        err = refused(capsys, args, "two hex digits")
        assert "SEC" not in err, err
    assert not (home / "spool").exists() and not (home / "data").exists()


def test_a_drivers_error_never_repeats_the_stores_password():
    from gpuparity.results.store_url import hide_password

    url = "postgresql://u:p%40ss%2Fword@h/db?sslmode=require&password=other"
    said = 'invalid token "p%40ss%2Fword" near "p@ss/word", and other; postgresql://x:y@h'
    shown = hide_password(said, url)
    assert shown == 'invalid token "***" near "***", and ***; postgresql://x:***@h', shown
    assert hide_password("plain message", "/tmp/s.db") == "plain message"


BAD_CLAIMS = {"not a list": "claims: 5\n", "no claims": "title: x\n", "a number": "claims: [5]\n",
              "missing fields": "claims:\n  - id: x\n", "not yaml": "claims: [\n", "latin-1": b"claims: [\xff]\n"}


@pytest.mark.parametrize("name", sorted(BAD_CLAIMS))
def test_report_with_an_invalid_claims_file_is_one_line(home, capsys, name):
    db = str(home / "s.db")
    with Store(db) as s:
        s.save_run(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 9, 1))], run_id="r-1"))
    claims = home / "claims.yaml"
    content = BAD_CLAIMS[name]
    claims.write_bytes(content if isinstance(content, bytes) else content.encode())
    for fmt in ("html", "markdown"):
        out = home / f"r.{fmt}"
        refused(capsys, ["report", "latest", "--db", db, "--claims-file", str(claims), "-f", fmt, "-o", str(out)],
                "claims.yaml")
        assert not out.exists()


@pytest.mark.parametrize("value", ["5", "[5]", "['x']", "None", "[]", "[int]"])
def test_a_workloads_list_that_is_not_one_is_one_line(home, capsys, value):
    wl = home / "mine.py"
    wl.write_text(f"WORKLOADS = {value}\n")
    refused(capsys, ["run", "--workload-file", str(wl), "--no-store"], "mine.py")


def test_a_spool_that_is_a_file_or_cannot_be_written_is_refused_before_work(home, capsys, monkeypatch):
    db = home / "s.db"
    blocker = home / "a-file"
    blocker.write_text("")
    for spool, needle in ((str(blocker), "not a folder"), ("/proc", "not a writable folder")):
        monkeypatch.setenv("GPUPARITY_SPOOL", spool)
        err = refused(capsys, [*RUN, "--db", str(db)], f"GPUPARITY_SPOOL={spool}")
        assert needle in err, err
    assert blocker.read_text() == "" and not db.exists()


def test_filters_and_dates_that_would_silently_mean_every_run_are_refused(home, capsys):
    db = str(home / "s.db")
    run_file = home / "a.json"
    with Store(db) as s:
        for i in (1, 2):
            s.save_run(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 9, i))], run_id=f"r-{i}"))
    run_file.write_text(json.dumps(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 9, 3))])))
    refused(capsys, ["compare", str(run_file), str(run_file), "--since", "bad"], "--since 'bad'")
    refused(capsys, ["compare", "gpu=", "gpu=", "--db", db], "gpu= names no value")
    refused(capsys, ["trend", "gpu=", "--db", db], "gpu= names no value")
    refused(capsys, ["report", str(run_file), "--since", "bad", "-o", str(home / "r.html")], "--since 'bad'")


def like_file(folder: Path, change: dict) -> str:
    """A plan file of one memory case whose parameters were changed, its key recomputed to match."""
    params = {"op": "copy", "elements": 4096, "dtype": "fp32", **change}
    plan = {"kind": "gpuparity-plan", "plan_version": 1, "suite": "quick", "trials": 1,
            "cases": [{"workload": "memory", "params": params, "key": result_key("memory", params, "fp32")}]}
    path = folder / "like.json"
    path.write_text(json.dumps(plan))
    return str(path)


@pytest.mark.parametrize("change, needle", [({"elements": 0}, "whole number >= 1"), ({"elements": -5}, "whole number >= 1"),
                                            ({"elements": "abc"}, "takes elements as int"),
                                            ({"elements": 4096.5}, "takes elements as int"),
                                            ({"op": "cpy"}, "takes op in"), ({"bogus": 3}, "not a parameter")])
def test_like_applies_the_checks_set_applies(home, capsys, change, needle):
    refused(capsys, ["run", "--like", like_file(home, change), "--no-store", "--in-process"], needle)


@pytest.mark.parametrize("value, needle", [("４", "whole number"), ("1,,2", "empty value between commas"),
                                           ("٤", "whole number"), ("1,", "empty value between commas")])
def test_set_takes_ascii_numbers_and_no_empty_items(home, capsys, value, needle):
    refused(capsys, ["run", "memory", "--set", "op=copy", "--set", f"elements={value}", "--no-store", "--in-process"],
            needle)


def test_sigterm_after_the_table_exits_143_and_the_run_is_saved(tmp_path):
    """The table printed, the save waiting on the store's lock: SIGTERM then stops nothing that
    matters (the save completes) and the exit status says it came (143), never 0."""
    db = tmp_path / "s.db"
    Store(str(db)).close()
    lock = sqlite3.connect(db, isolation_level=None, timeout=60)
    lock.execute("BEGIN IMMEDIATE")                 # another writer holds the store
    env = dict(os.environ, COLUMNS="200", HF_HUB_OFFLINE="1", GPUPARITY_SPOOL=str(tmp_path / "spool"))
    proc = subprocess.Popen([sys.executable, "-m", "gpuparity", *RUN, "--db", str(db)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = ""
        deadline = time.time() + 240
        while "elements=4096" not in seen and time.time() < deadline:     # the table's row
            line = proc.stdout.readline()
            if not line:
                break
            seen += line
        assert "elements=4096" in seen or "memory" in seen, seen
        time.sleep(0.5)
        assert proc.poll() is None                   # it waits on the lock to save
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        lock.execute("ROLLBACK")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        lock.close()
    assert proc.returncode == 143, (proc.returncode, err[-2000:])
    with Store(str(db)) as s:
        (run,) = s.list_runs()
        assert run["status"] == "complete" and run["n_results"] == 1


CTRL_C_IN_TORCH = """
import os, signal, sys, time
sys.argv = ["gpuparity", *sys.argv[1:]]
fired = []
def hook(event, args):
    if event == "import" and args[0] == "torch" and not fired:
        fired.append(1)
        print(f"signal {time.time()}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGINT)
sys.addaudithook(hook)
from gpuparity.__main__ import entry
entry()
"""


def test_ctrl_c_during_start_up_ends_at_once_not_after_the_torch_import(tmp_path):
    """Ctrl-C in the first second (torch importing: seconds on a busy machine) ends the command
    then, with 130: it has nothing to keep yet. The peer: the same import, uninterrupted."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", GPUPARITY_SPOOL=str(tmp_path / "spool"))
    t0 = time.time()
    subprocess.run([sys.executable, "-c", "import torch"], check=True, timeout=300)
    whole = time.time() - t0
    p = subprocess.run([sys.executable, "-c", CTRL_C_IN_TORCH, *RUN, "--db", str(tmp_path / "s.db")], env=env,
                       capture_output=True, text=True, timeout=300, preexec_fn=default_sigint)
    ended = time.time()
    fired = float(next(line.split()[1] for line in p.stderr.splitlines() if line.startswith("signal ")))
    assert p.returncode == 130 and "interrupted" in p.stderr and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert not (tmp_path / "s.db").exists() and not (tmp_path / "spool").exists()
    print(f"signal to exit {ended - fired:.2f} s; torch import alone {whole:.2f} s")
    assert ended - fired < max(0.5 * whole, 0.3), (ended - fired, whole)
