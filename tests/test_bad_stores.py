"""Stores and environments that are not what they should be: one-line errors, nothing damaged."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from test_compare import main_inprocess, make_result, make_run, noisy


def stored_run(db: str) -> None:
    from gpuparity.results.store import Store

    with Store(db) as s:
        s.save_run(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 5, 1))]))


def test_a_foreign_sqlite_file_is_refused_and_left_alone(tmp_path, capsys):
    db = str(tmp_path / "other.db")
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    before = open(db, "rb").read()
    for args in (["list", "--db", db], ["import", "x.json", "--db", db]):
        code, _, err = main_inprocess(args, capsys)
        assert code == 2 and err.count("\n") == 1
    code, _, err = main_inprocess(["list", "--db", db], capsys)
    assert "not a gpuparity store" in err and "customers" in err
    assert open(db, "rb").read() == before


def test_a_read_only_store_lists_and_shows_and_a_run_is_spooled(tmp_path, capsys, monkeypatch):
    if os.geteuid() == 0:
        pytest.skip("root writes through file permissions")
    db = str(tmp_path / "ro.db")
    stored_run(db)
    os.chmod(db, 0o444)
    code, out, err = main_inprocess(["list", "--json", "--db", db], capsys)
    assert code == 0 and len(json.loads(out)) == 1


def test_a_read_only_store_is_read_without_writing(tmp_path, capsys, monkeypatch):
    """As root, file modes do not stop writes, so read-only is simulated with the folder: a store
    whose folder is not writable is opened read-only (no WAL switch, no upgrade) and still lists;
    `run` refuses it before measuring."""
    from gpuparity.results import store as store_mod

    db = str(tmp_path / "ro.db")
    stored_run(db)
    real_access = os.access
    monkeypatch.setattr(store_mod.os, "access", lambda p, mode: False if mode == os.W_OK else real_access(p, mode))
    code, out, err = main_inprocess(["list", "--json", "--db", db], capsys)
    assert code == 0 and len(json.loads(out)) == 1, err
    code, out, err = main_inprocess(["compare", db, db, "-f", "json"], capsys)
    assert code == 0, err
    spool = tmp_path / "spool"
    monkeypatch.setenv("GPUPARITY_SPOOL", str(spool))
    code, out, err = main_inprocess(["run", "memory", "--set", "op=copy", "--set", "elements=4096", "--db", db],
                                    capsys)
    # refused before any work: the run could not be saved where the user asked
    assert code == 2 and "read-only" in err and err.count("\n") == 1 and "cases" not in err, err
    assert not spool.exists() or not list(spool.glob("*.json"))


def test_a_scribbled_store_is_a_one_line_error(tmp_path, capsys):
    db = str(tmp_path / "s.db")
    stored_run(db)
    data = bytearray(open(db, "rb").read())
    for i in range(200, len(data), 97):            # keep the header, damage the pages
        data[i] = (data[i] + 0x5A) % 256
    open(db, "wb").write(bytes(data))
    for args in (["list", "--db", db], ["show", "latest", "--db", db], ["compare", db, db]):
        code, _, err = main_inprocess(args, capsys)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (args, err)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"SQLite format 3\x00" + os.urandom(5000))
    code, _, err = main_inprocess(["list", "--db", str(garbage)], capsys)
    assert code == 2 and err.count("\n") == 1


@pytest.mark.parametrize("env, value", [("COLUMNS", "abc"), ("COLUMNS", "-5"), ("WORLD_SIZE", "x"),
                                         ("GPUPARITY_RUN_SPREAD", "lots"), ("GPUPARITY_UNSTABLE", "-1"),
                                         ("GPUPARITY_MAX_IMPORT_BYTES", "many")])
def test_bad_environment_values_never_traceback(tmp_path, capsys, monkeypatch, env, value):
    monkeypatch.setenv(env, value)
    db = str(tmp_path / "s.db")
    stored_run(db)
    code, out, err = main_inprocess(["compare", db, db, "-f", "json"], capsys)
    assert code in (0, 2) and "Traceback" not in err
    if code == 2:
        assert env in err and err.count("\n") == 1


def test_huge_limits_and_missing_folders(tmp_path, capsys):
    db = str(tmp_path / "s.db")
    stored_run(db)
    code, out, err = main_inprocess(["list", "-n", str(10**30), "--db", db], capsys)
    assert code == 0, err
    code, out, err = main_inprocess(["export", "latest", "-o", str(tmp_path / "no" / "such" / "x.json"), "--db", db],
                                    capsys)
    assert code == 2 and err.count("\n") == 1


def test_show_caps_a_huge_run(tmp_path, capsys):
    from gpuparity.results.store import Store

    db = str(tmp_path / "s.db")
    results = [make_result("gemm", {"m": m}, noisy(10, 0.01, 3, m)) for m in range(3000)]
    with Store(db) as s:
        s.save_run(make_run(results))
    code, out, err = main_inprocess(["show", "latest", "--db", db], capsys)
    assert code == 0 and "2,800 more results not shown" in out
