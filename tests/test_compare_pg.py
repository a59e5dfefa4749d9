"""The compare fast path (Store.run_fingerprints + results columns) on a real PostgreSQL server."""

from __future__ import annotations

import uuid

from test_compare import make_result, make_run, noisy
from test_store_pg import pg_server, psycopg, with_db  # noqa: F401  (the session's server fixture)

from gpuparity.comparison.compare import compare_runs, compare_sides
from gpuparity.comparison.sides import side_from_store
from gpuparity.results.store import Store


def test_postgres_fast_path_matches_documents(pg_server):  # noqa: F811
    name = "cmp_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_server["url"], autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    docs_a = [make_run([make_result("gemm", {"m": m}, noisy(100, 0.02, 8, m + i)) for m in range(3)],
                       run_id=f"a{i}", started_at=f"2026-01-0{i + 1}T00:00:00+00:00") for i in range(2)]
    doc_b = make_run([make_result("gemm", {"m": m}, noisy(250, 0.02, 8, 10 + m)) for m in range(4)], run_id="b",
                     spec_id="h100-sxm")
    with Store(with_db(pg_server["url"], name)) as store:
        for d in (*docs_a, doc_b):
            store.save_run(d)
        assert store.run_fingerprints(["a0", "b"])["b"]["spec"]["id"] == "h100-sxm"
        fast = compare_sides(side_from_store(store, ["a0", "a1"], "A"), side_from_store(store, ["b"], "B"))
    slow = compare_runs(docs_a, [doc_b])
    assert fast["rows"] == slow["rows"] and fast["only_b"] == slow["only_b"]
    assert [r["verdict"] for r in fast["rows"]] == ["faster"] * 3
    assert all(r["a_runs"] == 2 for r in fast["rows"])


def test_postgres_contention_and_history(pg_server):  # noqa: F811
    """A contended run's reasons come from its document (SQL on PostgreSQL's json), and a one-run
    side's spread from earlier runs of its product and stack in the same database."""
    name = "cmp_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_server["url"], autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    old = [make_run([make_result("gemm", {"m": m}, noisy(100 * (1 + d / 200), 0.002, 8, 10 * d + m)) for m in range(4)],
                    run_id=f"old{d}", started_at=f"2026-01-0{d + 1}T00:00:00+00:00") for d in range(4)]
    busy = make_run([make_result("gemm", {"m": m}, noisy(130, 0.002, 8, 90 + m), flags=["contended"])
                     for m in range(4)], run_id="busy", spec_id="h100-sxm", started_at="2026-02-01T00:00:00+00:00")
    busy["machine"] = {"contention": {"contended": True, "reasons": ["other processes used 90% of the CPUs"]}}
    url = with_db(pg_server["url"], name)
    with Store(url) as store:
        for d in (*old, busy):
            store.save_run(d)
        fast = compare_sides(side_from_store(store, ["old3"], "A"), side_from_store(store, ["busy"], "B"),
                             history="auto")
    assert fast["contended"] == [{"side": "B", "reasons": ["other processes used 90% of the CPUs"], "runs": ["busy"]}]
    assert {r["verdict"] for r in fast["rows"]} == {"inconclusive"}
    spread = fast["run_spread"]["A"]["kernel"]
    assert spread["source"] == "history" and spread["runs"] == 3 and "from 3 runs on 1 host over 3 days of mi300x/" in spread["text"]




def test_postgres_reads_every_runs_machine_state_even_from_a_document_with_nan(pg_server):  # noqa: F811
    """Contention and boot ids are read from every run's document in SQL; a document an older
    writer stored with NaN (which PostgreSQL's json refuses) is read in Python instead, and the
    connection stays usable."""
    name = "nan_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_server["url"], autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    a = make_run([make_result("gemm", {"m": 1}, [100.0])], run_id="a")          # one sample: its log se is NaN
    b = make_run([make_result("gemm", {"m": 1}, noisy(100, 0.01, 8, 1))], run_id="b")
    b["machine"] = {"start": {"boot_id": "boot-b"}, "contention": {"contended": True, "reasons": ["busy"]}}
    with Store(with_db(pg_server["url"], name)) as store:
        store.save_run(a)
        store.save_run(b)
        side = side_from_store(store, ["a", "b"], "A")
        assert [c["run_id"] for c in side.contended] == ["b"]
        assert {r["run_id"]: r["boot"] for r in side.runs} == {"a": None, "b": "boot-b"}
        assert store.run_fingerprints(["a"])          # still answering
