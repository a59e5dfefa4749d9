"""Mutated run documents fed to import / show / compare / report / export (hypothesis, fixed seed,
bounded): every case exits 0 or 2 with a one-line message and no traceback, within 10 s; a
rejected document leaves the store as it was; an accepted one can be shown, compared, reported
and exported (and the export imports again)."""

from __future__ import annotations

import copy
import json
import sqlite3
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_compare import main_inprocess, make_result, make_run, noisy, noisy_trials

from gpuparity.results.figure import derive_rates

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def base_doc() -> dict:
    serving_info = {"curve_key": "c", "serving": {"interactivity": 30.0, "throughput_per_gpu": 100.0},
                    "table": {"title": "t", "columns": ["a", "b"], "rows": [["1", "2"]]}}
    results = [
        make_result("gemm", {"m": 512, "n": 512, "k": 512}, [], trials=noisy_trials(100, 0.01, 8, 1)),
        make_result("memory", {"op": "copy"}, noisy(2000, 0.01, 9, 2), dtype="fp32", unit="GB/s"),
        make_result("serving", {"concurrency": 4}, noisy(100, 0.02, 5, 3), dtype=None, unit="tokens/s/GPU",
                    category="serving", info=serving_info),
        make_result("attention", {"seq": 256}, [], status="failed", reason="kernel crashed"),
    ]
    results[0]["work"] = {"flop": 2.0 * 512**3}
    results[0]["info"] = {"peak_kind": "flop:bf16"}
    doc = make_run(results, run_id="fuzz-run")
    derive_rates(results[0], doc["fingerprint"]["spec"])     # tflops and % of peak, as `run` derives them
    return doc


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def paths(obj, prefix=()):
    """Every (container, key) position in a document."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield prefix + (i,)
            yield from paths(v, prefix + (i,))


@st.composite
def mutated(draw):
    doc = base_doc()
    for _ in range(draw(st.integers(1, 2))):
        where = draw(st.sampled_from(list(paths(doc))))
        parent = doc
        for k in where[:-1]:
            parent = parent[k]
        action = draw(st.sampled_from(["replace"] * 4 + ["delete"] * 4 + ["duplicate", "control", "bigstring"]))
        key = where[-1]
        if action == "replace":
            parent[key] = draw(JSONISH)
        elif action == "delete":
            del parent[key]
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif action == "control":
            parent[key] = "bad\x00\x1b[2Jvalue\n# heading"
        elif action == "bigstring":
            parent[key] = "x" * 200_000
    return doc


def counts(db: str) -> tuple:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM results)").fetchone()


def check(code: int, err: str, what: str) -> None:
    assert code in (0, 2), (what, code, err[-2000:])
    assert "Traceback" not in err, (what, err[-2000:])
    if code == 2:
        assert err.strip().startswith("error:") and len(err.strip().splitlines()) == 1, (what, err)


def timed(capsys, args: list[str]) -> tuple[int, str, str]:
    t0 = time.monotonic()
    out = main_inprocess(args, capsys)
    assert time.monotonic() - t0 < 10, (args, "took more than 10 s")
    return out


@pytest.mark.slow
@SETTINGS
@given(doc=mutated())
def test_mutated_documents_are_refused_cleanly_or_fully_usable(doc, tmp_path_factory, capsys):
    folder = tmp_path_factory.mktemp("fuzz")
    db, path = str(folder / "s.db"), str(folder / "run.json")
    with open(path, "w") as fh:
        fh.write(json.dumps(doc, allow_nan=True, default=str))
    main_inprocess(["list", "--db", db], capsys)              # create the store
    before = counts(db)
    code, _, err = timed(capsys, ["import", path, "--db", db])
    check(code, err, "import")
    if code == 2:
        assert counts(db) == before
        code, _, err = timed(capsys, ["compare", path, path, "-f", "json"])
        check(code, err, "compare of a refused file")
        return
    run_id = doc["run_id"]
    for args in (["show", run_id, "--db", db], ["show", run_id, "--json", "--db", db],
                 ["compare", path, path, "-f", "json"], ["compare", run_id, run_id, "--db", db],
                 ["compare", path, path, "-f", "markdown"],
                 ["report", path, path, "-o", str(folder / "r.html"), "--no-claims"],
                 ["export", run_id, "-o", str(folder / "out.json"), "--db", db]):
        code, _, err = timed(capsys, args)
        assert code == 0, (args, err[-2000:])
    code, _, err = timed(capsys, ["import", str(folder / "out.json"), "--db", str(folder / "again.db")])
    assert code == 0, err


@pytest.mark.parametrize("content", [b"", b"{", b"[1, 2]", b"null", b"\xff\xfe\x00", b'{"schema_version": 2}',
                                     b'{"schema_version": 2, "run_id": "../x", "started_at": "2026-01-01",'
                                     b' "fingerprint": {}, "results": []}',
                                     b"[" * 100_000 + b"]" * 100_000, b'{"a": NaN}'])
def test_garbage_files_are_one_line_errors(tmp_path, capsys, content):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    db = str(tmp_path / "s.db")
    code, _, err = main_inprocess(["import", str(path), "--db", db], capsys)
    check(code, err, content[:20])
    assert code == 2


def test_an_endless_file_is_refused_and_a_big_one_bounded_by_bytes_read(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GPUPARITY_MAX_IMPORT_BYTES", str(8 * 2**20))
    t0 = time.monotonic()
    code, _, err = main_inprocess(["import", "/dev/zero", "--db", str(tmp_path / "s.db")], capsys)
    assert code == 2 and "not a regular file" in err and time.monotonic() - t0 < 10
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(9 * 2**20)                  # sparse: 9 MiB of zeros, past the 8 MiB limit
    code, _, err = main_inprocess(["import", str(big), "--db", str(tmp_path / "s.db")], capsys)
    assert code == 2 and "limit" in err and time.monotonic() - t0 < 10


def test_run_ids_with_wildcards_name_one_run(tmp_path, capsys):
    db = str(tmp_path / "s.db")
    for run_id in ("run-1", "run_1", "run%1", "a/b"):
        doc = base_doc()
        doc["run_id"] = run_id
        path = tmp_path / "r.json"
        path.write_text(json.dumps(doc))
        code, _, err = main_inprocess(["import", str(path), "--db", db], capsys)
        if "%" in run_id or "/" in run_id:
            assert code == 2 and "run_id" in err             # ids are [A-Za-z0-9._:+-]: no patterns, no paths
        else:
            assert code == 0, err
    code, out, err = main_inprocess(["show", "run_", "--json", "--db", db], capsys)
    assert code == 0 and json.loads(out)["run_id"] == "run_1"  # '_' is itself, not a LIKE wildcard
    code, out, err = main_inprocess(["show", "run", "--db", db], capsys)
    assert code == 2 and "several runs" in err
