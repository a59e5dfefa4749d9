"""The PostgreSQL store against a real server.

Same behaviour as SQLite; 8 processes writing at once into a fresh database (the CREATE TABLE
race included) lose no rows; a server stopped in the middle of a run leaves the run in the spool
and `gpuparity import` later stores exactly that document.

The server: $GPUPARITY_TEST_PG if set, else a private cluster that scripts/ci/postgres.sh
starts for this session (initdb + pg_ctl on a free port, as the postgres user under root) and
stops at the end. The tests skip, saying why, only when neither is possible.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from gpuparity.errors import UserError
from gpuparity.results.schema import new_result, new_run
from gpuparity.results.spool import save_or_spool
from gpuparity.results.store import Store
from gpuparity.results.store_connect import StoreUnavailable
from gpuparity.results.store_schema import STORE_VERSION

psycopg = pytest.importorskip("psycopg", reason="psycopg not installed: pip install 'psycopg[binary]'")

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "ci" / "postgres.sh"


@pytest.fixture(scope="session")
def pg_server():
    """{'url': admin URL, 'dir': cluster folder or None, 'port': ...} of a running server."""
    url = os.environ.get("GPUPARITY_TEST_PG")
    if url:
        yield {"url": url, "dir": os.environ.get("GPUPARITY_TEST_PG_DIR"), "port": urlsplit(url).port}
        return
    p = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=180)
    if p.returncode != 0:
        pytest.skip("GPUPARITY_TEST_PG is unset and no local PostgreSQL server could be started "
                    f"({SCRIPT.name} exit {p.returncode}: {p.stderr.strip()[-300:]})")
    env = dict(line.removeprefix("export ").split("=", 1) for line in p.stdout.splitlines()
               if line.startswith("export "))
    server = {"url": env["GPUPARITY_TEST_PG"], "dir": env["GPUPARITY_TEST_PG_DIR"],
              "port": urlsplit(env["GPUPARITY_TEST_PG"]).port}
    yield server
    subprocess.run(["bash", str(SCRIPT), "stop", server["dir"]], capture_output=True, timeout=60)
    shutil.rmtree(server["dir"], ignore_errors=True)


def with_db(url: str, name: str, query: str = "") -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name, query=query or parts.query))


@pytest.fixture
def pg_db(pg_server):
    """A fresh, empty database on the server (no tables yet); dropped afterwards."""
    name = "gp_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_server["url"], autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield with_db(pg_server["url"], name)
    with psycopg.connect(pg_server["url"], autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def make_doc(run_id: str, started: str, host: str, value: float) -> dict:
    fp = {"host": host, "vendor": "NVIDIA", "product": "H100 SXM", "backend": "cuda", "cuda_version": "12.4",
          "torch_version": "2.5.1", "spec": {"id": "h100-sxm"}}
    doc = new_run(fp, ["run"])
    doc.update(run_id=run_id, started_at=started, finished_at=started, status="complete")
    for i, op in enumerate(("all_reduce", "broadcast", "all_gather")):
        r = new_result("collectives", "comm", {"op": op, "bytes": 1024 * 4**i, "ranks": 8}, "fp32")
        r["work"] = {"bytes": 1024.0 * 4**i}
        r["samples"] = [r["work"]["bytes"] / (value * (i + 1) * 1e9)] * 2     # the samples give the figure
        r["metric"] = {"name": "bytes", "unit": "GB/s", "value": value * (i + 1), "higher_is_better": True}
        doc["results"].append(r)
    return doc


def test_same_behaviour_as_sqlite(pg_db, tmp_path):
    docs = [make_doc("20260101-000000-aaaa", "2026-01-01T00:00:00+00:00", "h1", 1.2345678901234567),
            make_doc("20260102-000000-bbbb", "2026-01-02T00:00:00+00:00", "h2", 98765.4321012345)]
    refs = [{"ref_id": "mlperf:1", "source": "mlperf", "model": "llama2-70b"},
            {"ref_id": "mlperf:2", "source": "mlperf", "model": "gpt-j"}]
    seen = []
    for url in (str(tmp_path / "same.db"), pg_db):
        with Store(url) as s:
            out = {
                "added": [s.save_run(d) for d in docs] + [s.save_run(docs[0])],
                "list": s.list_runs(), "by_host": s.list_runs(host="h2"), "by_gpu": s.list_runs(gpu="h100"),
                "since": s.run_ids(since="2026-01-02"), "latest": s.resolve_run_id("latest"),
                "prefix": s.resolve_run_id("20260102"), "get": s.get_run("20260101-000000-aaaa"),
                "counts": (s.count("runs"), s.count("results")),
                "rows": s.query("SELECT run_id, key, workload, status, unit, value, samples FROM results"
                                " ORDER BY run_id, key"),
                "refs": (s.save_references(refs), s.save_references(refs),
                         sorted(r["ref_id"] for r in s.references("mlperf"))),
                "fingerprints": s.run_fingerprints([d["run_id"] for d in docs]),
            }
            for bad in ("2026010", "nope"):  # ambiguous prefix, unknown id: one-line errors on both
                with pytest.raises(UserError):
                    s.resolve_run_id(bad)
        seen.append(out)
    sqlite_out, pg_out = seen
    assert pg_out == sqlite_out
    assert pg_out["added"] == [True, True, False] and pg_out["counts"] == (2, 6)
    assert pg_out["get"] == docs[0]
    assert 1.2345678901234567 in {row[5] for row in pg_out["rows"]}  # 8-byte floats (REAL is 4 in PostgreSQL)
    assert pg_out["refs"][:2] == (2, 0)


WRITER = textwrap.dedent("""
    import copy, json, os, sys, time
    from gpuparity.results.store import Store
    from gpuparity.results.store_schema import STORE_VERSION
    url, wid, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    docs = json.loads(sys.stdin.read())
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.005)
    with Store(url) as store:                   # first contact: all 8 race to CREATE TABLE
        added = [store.save_run(dict(d, run_id=f"{d['run_id']}-w{wid}")) for d in docs]
        shared = store.save_run(docs[0])        # the same run id from every writer
    print(json.dumps({"added": added, "shared": shared}))
""")


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_eight_concurrent_writers_lose_nothing(backend, pg_db, tmp_path):
    url = pg_db if backend == "postgresql" else str(tmp_path / "many.db")
    docs = [make_doc(f"run{i}", f"2026-01-01T00:00:0{i}+00:00", "h", 1.5) for i in range(5)]
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, url, str(w), str(go)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(8)]
    for p in procs:
        p.stdin.write(json.dumps(docs))
        p.stdin.close()
    for p in procs:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    go.touch()
    outs = []
    for p in procs:
        p.wait(timeout=120)
        assert p.returncode == 0, p.stderr.read()[-2000:]
        outs.append(json.loads(p.stdout.read().strip().splitlines()[-1]))
    assert all(o["added"] == [True] * 5 for o in outs)
    assert sum(o["shared"] for o in outs) == 1  # exactly one writer stored the shared run; no errors
    with Store(url) as s:
        assert s.count("runs") == 8 * 5 + 1
        assert s.count("results") == (8 * 5 + 1) * 3
        assert s.query("SELECT COUNT(DISTINCT run_id) FROM results")[0][0] == 41


def test_refused_write_after_connecting_is_spooled(pg_db, tmp_path, monkeypatch):
    """The server is up but will not take the write (read-only): the run goes to the spool, not lost."""
    monkeypatch.setenv("GPUPARITY_SPOOL", str(tmp_path / "spool"))
    doc = make_doc("20260103-000000-cccc", "2026-01-03T00:00:00+00:00", "h", 2.0)
    read_only = with_db(pg_db, urlsplit(pg_db).path.lstrip("/"),
                        query="options=-c%20default_transaction_read_only%3Don")
    path = save_or_spool(doc, read_only)
    assert path == str(tmp_path / "spool" / f"{doc['run_id']}.json")
    assert json.loads(Path(path).read_text()) == doc
    assert save_or_spool(json.loads(Path(path).read_text()), pg_db) == "stored"
    with Store(pg_db) as s:
        assert s.get_run(doc["run_id"]) == doc


def test_connection_killed_before_save_leaves_no_partial_run(pg_db, pg_server):
    doc = make_doc("20260104-000000-dddd", "2026-01-04T00:00:00+00:00", "h", 3.0)
    store = Store(pg_db)
    with psycopg.connect(pg_server["url"], autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (store._conn.info.backend_pid,))
    with pytest.raises(StoreUnavailable, match="the PostgreSQL store was lost"):     # one line, not a traceback
        store.save_run(doc)
    store.close()
    with Store(pg_db) as s:
        assert s.count("runs") == 0 and s.count("results") == 0


GATE = textwrap.dedent("""
    import os, time
    from gpuparity.workloads.base import Prepared, Workload

    class Gate(Workload):
        \"\"\"A real measured sum that first waits until the test has stopped the server.\"\"\"
        name, category, suites = "gate", "kernel", ()

        def cases(self, suite, ctx):
            return [{"n": 4096, "dtype": "fp32"}]

        def prepare(self, params, ctx):
            import torch
            open(os.environ["GATE_STARTED"], "w").close()
            while not os.path.exists(os.environ["GATE_GO"]):
                time.sleep(0.05)
            x = torch.rand(params["n"])
            return Prepared(fn=lambda: x.sum(), work={"bytes": 4.0 * params["n"]})

    WORKLOADS = [Gate()]
""")


def test_server_stopped_mid_run_spools_and_import_restores(pg_server, pg_db, tmp_path, cli):
    if not pg_server["dir"]:
        pytest.skip("needs a cluster this session can stop and start (GPUPARITY_TEST_PG_DIR unset)")
    gate = tmp_path / "gate.py"
    gate.write_text(GATE)
    spool = tmp_path / "spool"
    env = dict(os.environ, GPUPARITY_SPOOL=str(spool), GATE_STARTED=str(tmp_path / "started"),
               GATE_GO=str(tmp_path / "go"), COLUMNS="200", HF_HUB_OFFLINE="1")
    run = subprocess.Popen([sys.executable, "-m", "gpuparity", "run", "gate", "--workload-file", str(gate),
                            "--db", pg_db], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not (tmp_path / "started").exists():
            assert run.poll() is None and time.time() < deadline, run.stderr.read() if run.poll() else "timeout"
            time.sleep(0.05)
        subprocess.run(["bash", str(SCRIPT), "stop", pg_server["dir"]], check=True, timeout=60)
        (tmp_path / "go").touch()
        _, err = run.communicate(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
        subprocess.run(["bash", str(SCRIPT), "start", pg_server["dir"], str(pg_server["port"])],
                       check=True, capture_output=True, timeout=120)
    assert run.returncode == 0, err[-2000:]
    (spooled,) = spool.glob("*.json")
    assert f"spooled run {spooled.stem} to {spooled}" in " ".join(err.split())
    assert "gpuparity import" in err
    doc = json.loads(spooled.read_text())
    assert doc["status"] == "complete" and doc["results"][0]["status"] == "ok"

    p = cli("import", str(spooled), "--db", pg_db)
    assert p.returncode == 0 and "imported" in p.stderr, p.stderr
    assert "already stored" in cli("import", str(spooled), "--db", pg_db).stderr
    # The same document and result rows as an uninterrupted save of that run.
    direct = str(tmp_path / "direct.db")
    assert save_or_spool(doc, direct) == "stored"
    rows = "SELECT key, workload, category, dtype, params, status, reason, unit, value, samples FROM results"
    with Store(pg_db) as s, Store(direct) as d:
        assert s.get_run(doc["run_id"]) == doc
        assert s.query(rows) == d.query(rows)


def _scan_counts(admin_url: str, db_url: str) -> dict[str, int]:
    """Sequential scans of runs and results so far (the server's statistics, as its backends flush them)."""
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute("SELECT pg_stat_clear_snapshot()")
        rows = c.execute("SELECT relname, seq_scan FROM pg_stat_user_tables WHERE relname IN ('runs', 'results')")
        return dict(rows.fetchall())


def test_opening_a_postgresql_store_reads_the_version_row_not_the_tables(pg_db, pg_server):
    """A store at this version opens with one look at gpuparity_meta: the server counts no
    sequential scan of runs or results for it (a scan made on purpose after it is counted)."""
    docs = [make_doc(f"2026010{i}-000000-scan", f"2026-01-0{i}T00:00:00+00:00", "h", 1.0 + i) for i in range(1, 6)]
    with Store(pg_db) as s, s.writer() as w:
        assert [w.save_run(d) for d in docs] == [True] * 5
    with Store(pg_db) as s:
        assert s.version == STORE_VERSION and s.query("SELECT value FROM gpuparity_meta WHERE name = 'schema'") == [
            (str(STORE_VERSION),)]
        indexes = {r[0] for r in s.query("SELECT indexname FROM pg_indexes WHERE tablename = 'runs'")}
        assert {"runs_started", "runs_spec", "runs_product", "runs_host", "runs_platform"} <= indexes
    time.sleep(1.5)                          # the earlier sessions' statistics are flushed by now
    before = _scan_counts(pg_server["url"], pg_db)
    for _ in range(3):
        Store(pg_db).close()                 # three opens: no scan
    with Store(pg_db) as s:                  # one scan of results on purpose: the counters do move
        s.query("SELECT COUNT(*) FROM results WHERE unit IS NULL OR unit IS NOT NULL")
    deadline = time.time() + 10
    while _scan_counts(pg_server["url"], pg_db)["results"] == before["results"] and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(1.5)                          # and every earlier session has flushed as well
    after = _scan_counts(pg_server["url"], pg_db)
    assert after == {"runs": before["runs"], "results": before["results"] + 1}, (before, after)


def test_postgresql_store_of_version_2_is_upgraded_and_reads_the_columns(pg_db, tmp_path, cli):
    """A store written before the metadata row (no indexes, no results.work) is upgraded once;
    compare, report and load() of named runs then read the columns, on PostgreSQL as on SQLite."""
    import gpuparity

    docs = [make_doc("20260101-000000-old1", "2026-01-01T00:00:00+00:00", "h1", 1.0),
            make_doc("20260102-000000-old2", "2026-01-02T00:00:00+00:00", "h2", 1.5)]
    lite = str(tmp_path / "same.db")
    for url in (pg_db, lite):
        with Store(url) as s:
            for d in docs:
                s.save_run(d)
    with psycopg.connect(pg_db, autocommit=True) as c:     # back to version 2's layout
        c.execute("DROP TABLE gpuparity_meta")
        for index in ("runs_started", "runs_spec", "runs_product", "runs_host"):
            c.execute(f"DROP INDEX {index}")
        c.execute("ALTER TABLE results DROP COLUMN work")
    with Store(pg_db) as s:
        assert s.version == STORE_VERSION and "work" in s.columns("results")
        assert s.query("SELECT COUNT(*) FROM results WHERE work IS NULL")[0][0] == 6   # rows written before it
    for url in (pg_db, lite):
        p = cli("report", docs[0]["run_id"], docs[1]["run_id"], "--db", url, "-o", str(tmp_path / "r.md"),
                "-f", "markdown", "--no-claims")
        assert p.returncode == 0, p.stderr
    with Store(pg_db) as s:
        s.save_run(make_doc("20260103-000000-new3", "2026-01-03T00:00:00+00:00", "h3", 2.0))
        assert s.query("SELECT COUNT(*) FROM results WHERE work IS NULL")[0][0] == 6
    with Store(lite) as s:
        s.save_run(make_doc("20260103-000000-new3", "2026-01-03T00:00:00+00:00", "h3", 2.0))
    cols = ["run_id", "key", "value", "n", "pct_peak"]
    pg, sq = gpuparity.load(pg_db, columns=cols), gpuparity.load(lite, columns=cols)
    assert len(pg) == 9 and pg.equals(sq)
    md = [cli("compare", docs[0]["run_id"], "20260103-000000-new3", "--db", url, "-f", "json").stdout
          for url in (pg_db, lite)]
    assert json.loads(md[0])["rows"] == json.loads(md[1])["rows"] and len(json.loads(md[0])["rows"]) == 3
