"""The Python API on a real SQLite store with two runs: gpuparity.load() (tidy, typed, the stored
figure with its CI, n, trials, flags) and gpuparity.compare() (the comparison rows as a DataFrame)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_compare import make_result, make_run, noisy, noisy_trials

import gpuparity
from gpuparity.errors import UserError
from gpuparity.platform.specs import all_specs
from gpuparity.results.store import Store


def _docs() -> tuple[dict, dict]:
    """A: MI300X, three trials per case, one result flagged unstable; B: H100, one trial, 1.5x on
    GEMM (one run a side: well beyond the 6% run-to-run prior), memory at parity. Both: a failed case."""
    a = make_run([make_result("gemm", {"m": 1024, "n": 1024}, None, trials=noisy_trials(400, 0.01, 8, 1)),
                  make_result("gemm", {"m": 4096, "n": 4096}, None, trials=noisy_trials(600, 0.01, 8, 2),
                              flags=["unstable"]),
                  make_result("memory", {"op": "copy"}, None, trials=noisy_trials(4000, 0.01, 8, 3), dtype="fp32",
                              unit="GB/s"),
                  make_result("gemm", {"m": 8192, "n": 8192}, [], status="failed", reason="out of memory")],
                 run_id="run-mi", spec_id="mi300x", stack={"hip_version": "6.4", "rocm_version": "6.4.1"})
    a["label"] = "baseline"
    b = make_run([make_result("gemm", {"m": 1024, "n": 1024}, noisy(600, 0.01, 12, 4)),
                  make_result("gemm", {"m": 4096, "n": 4096}, noisy(750, 0.01, 12, 5)),
                  make_result("memory", {"op": "copy"}, noisy(4000, 0.01, 12, 6), dtype="fp32", unit="GB/s"),
                  make_result("gemm", {"m": 8192, "n": 8192}, [], status="failed", reason="out of memory")],
                 run_id="run-h1", spec_id="h100-sxm", started_at="2026-02-01T00:00:00+00:00",
                 stack={"cuda_version": "12.8"})
    return a, b


@pytest.fixture
def store(tmp_path):
    db = str(tmp_path / "api.db")
    a, b = _docs()
    with Store(db) as s:
        s.save_run(a)
        s.save_run(b)
    return db, a, b


def test_load_is_tidy_typed_and_shows_the_stored_figure(store):
    db, a, b = store
    df = gpuparity.load(db=db)
    assert len(df) == 8 and list(df.columns) == [
        "run_id", "started_at", "label", "host", "vendor", "product", "spec_id", "stack", "torch", "workload",
        "category", "key", "dtype", "params", "status", "reason", "value", "ci_low", "ci_high", "unit", "n",
        "trials", "flags", "pct_peak"]
    assert str(df["started_at"].dtype).startswith("datetime64") and df["trials"].dtype == "Int64"
    docs = {(d["run_id"], r["key"]): r for d in (a, b) for r in d["results"]}
    for row in df.itertuples():
        r = docs[(row.run_id, row.key)]
        if row.status != "ok":
            assert pd.isna(row.value) and row.reason == "out of memory" and pd.isna(row.trials)
            continue
        m = r["metric"]
        assert row.value == m["value"] and row.ci_low == pytest.approx(m["ci_low"])      # the one stored number
        assert row.ci_low < row.value < row.ci_high and row.n == len(m["samples"])
        assert row.trials == (3 if row.run_id == "run-mi" else 1) and row.unit == m["unit"]
    gemm = df[(df.run_id == "run-mi") & (df.key == a["results"][1]["key"])].iloc[0]
    assert gemm.params == {"m": 4096, "n": 4096} and type(gemm.params["m"]) is int
    assert gemm["flags"] == ("unstable",)          # df["flags"]: `.flags` is pandas' own attribute
    assert gemm.pct_peak == pytest.approx(100 * gemm.value / all_specs()["mi300x"]["bf16_tflops"])
    assert gemm.label == "baseline" and gemm.stack == "rocm 6.4.1"
    mem = df[(df.run_id == "run-mi") & (df.workload == "memory")].iloc[0]
    assert mem.pct_peak == pytest.approx(100 * mem.value / (all_specs()["mi300x"]["memory_bw_tbs"] * 1000))
    above = df[(df.run_id == "run-h1") & (df.workload == "memory")].iloc[0]    # 4,000 GB/s on a 3,350 GB/s H100
    assert pd.isna(above.pct_peak) and "peak_exceeded" in above["flags"]
    assert pd.isna(df[df.run_id == "run-h1"].label).all()


def test_load_wide_filters_and_samples(store):
    db, a, _ = store
    wide = gpuparity.load(db=db, wide=True)
    assert "params" not in wide.columns and {"m", "n", "op"} <= set(wide.columns)
    assert wide["m"].dtype == "Int64" and pd.api.types.is_string_dtype(wide["op"])
    assert wide["m"].isna().sum() == 2 and set(wide["m"].dropna()) == {1024, 4096, 8192}
    assert list(gpuparity.load(db=db, gpu="h100-sxm").run_id.unique()) == ["run-h1"]
    assert list(gpuparity.load(db=db, label="baseline").run_id.unique()) == ["run-mi"]
    ok = gpuparity.load(db=db, stack="rocm", status="ok", samples=True)
    assert len(ok) == 3 and ok.iloc[0].samples == next(
        r for r in a["results"] if r["key"] == ok.iloc[0].key)["metric"]["samples"]
    assert gpuparity.load(db=db, gpu="b200").empty
    with pytest.raises(UserError, match="unknown filter"):
        gpuparity.load(db=db, colour="red")
    with pytest.raises(UserError, match="ISO date"):
        gpuparity.load(db=db, since="yesterday")


def test_load_reads_figures_of_an_older_store_from_documents(store):
    """Rows stored before the trial columns existed (upgraded: NULL there) take CI, trials and
    flags from the run document."""
    import sqlite3

    db, a, _ = store
    con = sqlite3.connect(db)
    con.execute("UPDATE results SET ci_low = NULL, ci_high = NULL, trials = NULL, flags = NULL WHERE run_id = 'run-mi'")
    con.commit()
    con.close()
    df = gpuparity.load(db=db, gpu="mi300x", status="ok")
    assert (df.trials == 3).all() and df.ci_low.notna().all()
    assert df[df.key == a["results"][1]["key"]].iloc[0]["flags"] == ("unstable",)


def test_compare_returns_the_comparison_rows(store):
    db, a, b = store
    df = gpuparity.compare("gpu=mi300x", "gpu=h100-sxm", db=db, run_spread=0.02)    # one run a side: a known spread
    assert len(df) == 3 and list(df.columns[:11]) == [
        "workload", "category", "params", "dtype", "unit", "a_value", "b_value", "ratio", "ci_low", "ci_high",
        "verdict"]
    small = df[df.params.apply(lambda p: p.get("m") == 1024)].iloc[0]
    assert small.ratio == pytest.approx(1.5, rel=0.03) and small.verdict == "faster"
    assert small.a_trials == 3 and small.b_trials == 1
    assert small.a_value == pytest.approx(a["results"][0]["metric"]["value"], rel=1e-9)    # the same number
    assert small.b_value == pytest.approx(b["results"][0]["metric"]["value"], rel=1e-9)
    flagged = df[df.params.apply(lambda p: p.get("m") == 4096)].iloc[0]
    assert flagged.verdict == "inconclusive"                   # unstable: at most inconclusive
    mem = df[df.workload == "memory"].iloc[0]
    assert mem.verdict in ("parity", "inconclusive") and mem.ratio == pytest.approx(1.0, abs=0.03)
    assert df.attrs["headline"].startswith("B is ") and df.attrs["geomean"]["kernel"]["n"] == 3
    assert df.attrs["sides"]["a"]["run_ids"] == ["run-mi"] and df.attrs["not_compared"] == 2
    json.dumps(df.attrs, default=str)                           # plain data, safe to keep or send


def test_compare_takes_documents_filters_and_wide(store, tmp_path):
    db, a, b = store
    by_store = gpuparity.compare("gpu=mi300x", "gpu=h100-sxm", db=db)
    by_docs = gpuparity.compare([a], b)
    by_dict = gpuparity.compare({"gpu": "mi300x"}, {"gpu": "h100-sxm", "stack": "cuda"}, db=db)
    for other in (by_docs, by_dict):
        assert other.ratio.tolist() == pytest.approx(by_store.ratio.tolist(), rel=1e-9)
        assert other.verdict.tolist() == by_store.verdict.tolist()
    path = tmp_path / "b.json"
    path.write_text(json.dumps(b))
    assert gpuparity.compare("run-mi", str(path), db=db).ratio.tolist() == pytest.approx(by_store.ratio.tolist())
    wide = gpuparity.compare("gpu=mi300x", "gpu=h100-sxm", db=db, wide=True)
    assert wide["m"].dtype == "Int64" and "params" not in wide.columns and "op" in wide.columns
    with pytest.raises(UserError, match="side A"):
        gpuparity.compare(42, b)
    with pytest.raises(UserError, match="unknown filter"):
        gpuparity.compare({"colour": "red"}, b, db=db)
    with pytest.raises(UserError, match="no stored run matches"):
        gpuparity.compare("gpu=b200", "gpu=h100-sxm", db=db)


def test_api_stays_import_light():
    import subprocess
    import sys

    code = "import sys, gpuparity; print(sorted(m for m in ('pandas', 'numpy', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_load_selects_columns_and_filters_in_sql(store, monkeypatch):
    """columns= builds only those columns (samples blobs and documents are not read for them); the
    label filter is a WHERE clause; an unknown column is a one-line error."""
    db, a, b = store
    full = gpuparity.load(db=db)
    narrow = gpuparity.load(db=db, columns=["run_id", "key", "value", "n"])
    assert list(narrow.columns) == ["run_id", "key", "value", "n"]
    pd.testing.assert_frame_equal(narrow, full[["run_id", "key", "value", "n"]])
    seen = []
    real = Store.query

    def spy(self, sql, params=()):
        seen.append(sql)
        return real(self, sql, params)

    monkeypatch.setattr(Store, "query", spy)
    assert list(gpuparity.load(db=db, label="baseline", columns=["run_id"]).run_id.unique()) == ["run-mi"]
    assert any("label = ?" in q for q in seen) and not any("SELECT doc" in q for q in seen)
    assert not any(" samples" in q.split("FROM")[0] for q in seen if "FROM results" in q)
    with pytest.raises(UserError, match="unknown column"):
        gpuparity.load(db=db, columns=["value", "colour"])


def _traced(monkeypatch) -> list[str]:
    """Every SQL statement the stores opened from here on run (sqlite3's trace callback)."""
    seen: list[str] = []
    from gpuparity.results import store as store_mod

    real = store_mod.connect_sqlite

    def connect(store):
        conn = real(store)
        conn.set_trace_callback(seen.append)
        return conn

    monkeypatch.setattr(store_mod, "connect_sqlite", connect)
    return seen


def _selected(sql: str) -> set[str]:
    """The column expressions of a SELECT."""
    return {c.strip() for c in sql.split(" FROM ", 1)[0].removeprefix("SELECT ").split(",")}


@pytest.mark.parametrize("columns, results, runs", [
    (["run_id", "key", "value"], {"value"}, set()),
    (["product", "reason"], {"reason"}, {"product"}),
    (["n"], {"LENGTH(samples) / 8"}, set()),
    (["pct_peak"], {"value", "unit", "peak_kind", "status", "trials"}, set()),
    (["stack", "ci_low", "trials"], {"status", "ci_low", "trials"}, {"stack"}),
])
def test_a_narrow_load_selects_only_what_it_needs(tmp_path, monkeypatch, columns, results, runs):
    """columns= builds the SELECT lists: the rows' identity (what they are sorted by) and the
    asked-for columns with what they are figured from; the frame's values are those of a full load.
    On the recorded CPU quick run and a run of constructed results."""
    import gzip
    from pathlib import Path

    db = str(tmp_path / "real.db")
    with gzip.open(Path(__file__).parent / "data" / "quick-run-cpu.json.gz", "rt") as fh:
        quick = json.load(fh)
    with Store(db) as s:
        s.save_run(quick)
        s.save_run(_docs()[0])
    full = gpuparity.load(db=db)
    assert len(full) > 10 and full.value.notna().any()
    seen = _traced(monkeypatch)
    narrow = gpuparity.load(db=db, columns=columns)
    pd.testing.assert_frame_equal(narrow, full[columns])
    (res_sql,) = [q for q in seen if " FROM results " in q]
    (run_sql,) = [q for q in seen if " FROM runs " in q and "ORDER BY started_at" in q]
    identity = {"run_id", "workload", "category", "dtype", "key", "params"}
    assert _selected(res_sql) == identity | results, res_sql
    assert _selected(run_sql) == {"run_id"} | runs, run_sql
    assert not any("doc" in _selected(q) for q in seen if q.startswith("SELECT"))    # no document read
