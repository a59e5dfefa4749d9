"""A team's PostgreSQL store, its credentials and its failures, on the real server of the tests
(test_store_pg's fixtures): a password given in the URL is in no document, export, spool,
journal, list or error; spool and journal files are 0600 in 0700 folders; a role without table
privileges, a server stopped in the middle of an import and an empty database each end in one
line that says what was kept; readers never create the tables."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from test_store_pg import GATE, SCRIPT, make_doc, pg_db, pg_server, with_db  # noqa: F401 - fixtures

from gpuparity.results.store import Store

psycopg = pytest.importorskip("psycopg")

RUN = ["run", "memory", "--set", "op=copy", "--set", "elements=4096", "--in-process"]


def cli(args: list, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    full = dict(os.environ, COLUMNS="200", HF_HUB_OFFLINE="1", **env)
    full.pop("PGPASSWORD", None)
    return subprocess.run([sys.executable, "-m", "gpuparity", *args], capture_output=True, text=True, timeout=timeout,
                          env=full)


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.fixture
def role_db(pg_server):  # noqa: F811 - the session's fixtures
    """(url with the password SECRET, admin url of its database, whether the server checks it): a
    role that owns a fresh database; where the test cluster's pg_hba.conf can be written, the
    server asks that role for its password (scram), everyone else stays trusted."""
    role, name = "gp_u_" + uuid.uuid4().hex[:8], "gp_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_server["url"], autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'SECRET'")
        admin.execute(f"CREATE DATABASE {name} OWNER {role}")
        hba = Path(admin.execute("SHOW hba_file").fetchone()[0])
        rules = f"host all {role} 127.0.0.1/32 scram-sha-256\nhost all {role} ::1/128 scram-sha-256\n"
        checked = bool(pg_server["dir"]) and os.access(hba, os.W_OK)
        if checked:
            hba.write_text(rules + hba.read_text())
            admin.execute("SELECT pg_reload_conf()")
    try:
        yield (f"postgresql://{role}:SECRET@127.0.0.1:{pg_server['port']}/{name}", with_db(pg_server["url"], name),
               checked)
    finally:
        with psycopg.connect(pg_server["url"], autocommit=True) as admin:
            if checked:
                hba.write_text(hba.read_text().replace(rules, ""))
                admin.execute("SELECT pg_reload_conf()")
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.execute(f"DROP ROLE IF EXISTS {role}")


def test_a_password_in_the_url_never_leaves_the_process(role_db, tmp_path, pg_server):  # noqa: F811 - the session's fixtures
    url, admin_url, _ = role_db
    spool = tmp_path / "spool"
    env = {"GPUPARITY_SPOOL": str(spool), "GPUPARITY_DB": str(tmp_path / "default.db"),
           "GATE_STARTED": str(tmp_path / "started"), "GATE_GO": str(tmp_path / "go")}
    said: list[str] = []

    def run(args, code=0):
        p = cli(args, env)
        said.extend([p.stdout, p.stderr])
        assert p.returncode == code, (args, p.returncode, p.stderr[-2000:])
        return p

    run([*RUN, "--db", url, "--json", str(tmp_path / "run.json")])
    run(["list", "--db", url])
    run(["list", "--db", url, "--json"])
    run(["show", "latest", "--db", url, "--json"])
    run(["export", "latest", "-o", str(tmp_path / "export.json"), "--db", url])
    assert "***" in run(["show", "nope", "--db", url], 2).stderr          # the store named, masked
    in_query = url.replace(":SECRET@", "@") + "?password=SECRET"             # libpq's other place for it
    for args in (["list"], ["claims", "check"], ["compare", "latest", "latest"],
                 ["report", "latest", "-o", str(tmp_path / "report.html")],
                 ["report", "latest", "-f", "markdown", "-o", str(tmp_path / "report.md")]):
        run([*args, "--db", in_query])
    run(["trend", "--db", in_query], 2)                                        # one run: an error that names it
    assert "password=***" in run(["show", "nope", "--db", in_query], 2).stderr
    host = url.split("@", 1)[1]
    run(["list", "--db", url.replace(host, "[::1/x")], 2)                   # a malformed IPv6 host
    run([*RUN, "--db", url.replace(host, "127.0.0.1:notaport/x")], 2)
    # A server that is down: the run is spooled (0600 in a 0700 folder), the password not with it.
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    try:
        p = run([*RUN, "--db", url.replace(host, f"127.0.0.1:{dead.getsockname()[1]}/gpuparity")])
    finally:
        dead.close()
    (spooled,) = spool.glob("*.json")
    assert "spooled run" in p.stderr and mode(spooled) == 0o600 and mode(spool) == 0o700
    # A run whose process dies: its journal (0600, 0700) keeps the store without the password, and
    # the next command on that store (with its password) stores the run.
    gate = tmp_path / "gate.py"
    gate.write_text(GATE)
    proc = subprocess.Popen([sys.executable, "-m", "gpuparity", "run", "gate", "--workload-file", str(gate),
                             "--db", url], env=dict(os.environ, HF_HUB_OFFLINE="1", **env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 240
        while not (tmp_path / "started").exists():
            assert proc.poll() is None and time.time() < deadline, proc.stderr.read() if proc.poll() else "timeout"
            time.sleep(0.05)
        (journal,) = (spool / "journal").glob("*.jsonl")
        journal_text = journal.read_text()
        assert mode(journal) == 0o600 and mode(spool / "journal") == 0o700
        assert json.loads(journal_text.splitlines()[0])["db"] == url.replace(":SECRET@", "@")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    p = run(["list", "--db", url])
    assert "recovered run" in p.stderr, p.stderr
    run(["show", journal.stem, "--db", url, "--json"])
    files = [tmp_path / "run.json", tmp_path / "export.json", spooled, tmp_path / "report.html", tmp_path / "report.md"]
    with psycopg.connect(admin_url) as c:
        stored = [row[0] for row in c.execute("SELECT doc FROM runs").fetchall()]
    assert len(stored) == 2
    for text in [*said, journal_text, *stored, *(f.read_text() for f in files)]:
        assert "SECRET" not in text, text[:3000]
    assert all("Traceback" not in text for text in said)


def test_a_role_without_table_privileges_is_one_line_and_a_run_is_spooled(pg_db, pg_server, tmp_path):  # noqa: F811 - the session's fixtures
    with Store(pg_db) as s:
        s.save_run(make_doc("20260101-000000-priv", "2026-01-01T00:00:00+00:00", "h", 1.5))
    role = "gp_np_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_server["url"], autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
    try:
        url = pg_db.replace("postgres@", f"{role}@", 1)
        env = {"GPUPARITY_SPOOL": str(tmp_path / "spool"), "GPUPARITY_DB": str(tmp_path / "default.db")}
        doc = tmp_path / "run.json"
        doc.write_text(json.dumps(make_doc("20260102-000000-priv", "2026-01-02T00:00:00+00:00", "h", 1.5)))
        for args in (["list", "--db", url], ["show", "latest", "--db", url], ["import", str(doc), "--db", url],
                     ["compare", "latest", "latest", "--db", url]):
            p = cli(args, env)
            assert p.returncode == 2 and p.stderr.count("\n") == 1 and "permission denied" in p.stderr, \
                (args, p.stderr)
        p = cli([*RUN, "--db", url], env)
        assert p.returncode == 0 and "permission denied" in p.stderr and "spooled run" in p.stderr, p.stderr
        assert len(list((tmp_path / "spool").glob("*.json"))) == 1 and "Traceback" not in p.stderr
    finally:
        with psycopg.connect(pg_server["url"], autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def _runs(url: str) -> int | None:
    try:
        with psycopg.connect(url, connect_timeout=2) as c:
            return c.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except psycopg.Error:
        return None


def test_postgresql_stopped_mid_import_says_what_it_stored(pg_server, pg_db, tmp_path):  # noqa: F811 - the session's fixtures
    if not pg_server["dir"]:
        pytest.skip("needs a cluster this session can stop and start (GPUPARITY_TEST_PG_DIR unset)")
    n = 3000
    files = []
    for i in range(n):
        path = tmp_path / f"r{i:04d}.json"
        path.write_text(json.dumps(make_doc(f"2026{i:04d}-000000-imp", "2026-01-01T00:00:00+00:00", "h", 1.5)))
        files.append(str(path))
    env = dict(os.environ, HF_HUB_OFFLINE="1", GPUPARITY_SPOOL=str(tmp_path / "spool"))
    proc = subprocess.Popen([sys.executable, "-m", "gpuparity", "import", *files, "--db", pg_db], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 240
        while not _runs(pg_db):               # the first batch is committed
            assert proc.poll() is None and time.time() < deadline, "the import ended before a batch was seen"
            time.sleep(0.05)
        subprocess.run(["bash", str(SCRIPT), "stop", pg_server["dir"]], check=True, timeout=60)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
        subprocess.run(["bash", str(SCRIPT), "start", pg_server["dir"], str(pg_server["port"])],
                       check=True, capture_output=True, timeout=120)
    last = err.strip().splitlines()[-1]
    assert proc.returncode == 2 and "Traceback" not in err, err[-3000:]
    assert last.startswith("error:") and "import again to add the rest" in last, last
    kept = int(re.search(r"stored (\d+) of \d+ runs", last).group(1))
    assert f"stored {kept} of {n} runs" in last and 0 < kept < n, last
    assert _runs(pg_db) == kept                 # what it says it stored is what is there
    p = subprocess.run([sys.executable, "-m", "gpuparity", "import", *files, "--db", pg_db], env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0 and p.stderr.count("already stored") == kept, p.stderr[-2000:]
    assert _runs(pg_db) == n


def test_an_empty_database_is_no_store_to_a_reader_and_stays_empty(pg_db, tmp_path):  # noqa: F811 - the session's fixtures
    env = {"GPUPARITY_SPOOL": str(tmp_path / "spool"), "GPUPARITY_DB": str(tmp_path / "default.db")}
    for args in (["list"], ["show", "latest"], ["trend"], ["claims", "check"], ["reference", "list"],
                 ["compare", "latest", "latest"]):
        p = cli([*args, "--db", pg_db], env)
        assert p.returncode == 2 and "no store in" in p.stderr and p.stderr.count("\n") == 1, (args, p.stderr)
    with psycopg.connect(pg_db) as c:
        assert c.execute("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)
    doc = tmp_path / "run.json"
    doc.write_text(json.dumps(make_doc("20260101-000000-new", "2026-01-01T00:00:00+00:00", "h", 1.5)))
    assert cli(["import", str(doc), "--db", pg_db], env).returncode == 0       # a writer makes them
    assert cli(["list", "--db", pg_db], env).returncode == 0


def test_a_url_without_its_password_takes_it_from_pgpassword(role_db, tmp_path):
    """The README's way to keep a password off the command line: libpq reads PGPASSWORD (or
    ~/.pgpass, or a service file) for a URL without one."""
    url, _, checked = role_db
    bare = url.replace(":SECRET@", "@")
    env = {"GPUPARITY_SPOOL": str(tmp_path / "spool"), "GPUPARITY_DB": str(tmp_path / "default.db")}
    if checked:             # the server does ask: without the password the store is refused in one line
        p = cli(["list", "--db", bare], env)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "password" in p.stderr, p.stderr
        p = cli(["list", "--db", url.replace(":SECRET@", ":WRONG@")], env)
        assert p.returncode == 2 and "WRONG" not in p.stderr and "password authentication failed" in p.stderr, p.stderr
    doc = tmp_path / "run.json"
    doc.write_text(json.dumps(make_doc("20260101-000000-pgpw", "2026-01-01T00:00:00+00:00", "h", 1.5)))
    full = dict(os.environ, COLUMNS="200", PGPASSWORD="SECRET", **env)
    p = subprocess.run([sys.executable, "-m", "gpuparity", "import", str(doc), "--db", bare], env=full,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "imported" in p.stderr, p.stderr
    p = subprocess.run([sys.executable, "-m", "gpuparity", "list", "--db", bare], env=full, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0 and "20260101-000000-pgpw" in p.stdout and "SECRET" not in p.stdout + p.stderr
