"""Spooling: a run the store cannot take goes to a JSON file, and `gpuparity import` stores it unchanged.

No server needed: an unreachable PostgreSQL URL is a free port on 127.0.0.1 with nothing behind it.
"""

from __future__ import annotations

import io
import json
import os
import socket
import tempfile
import textwrap

import pytest
from rich.console import Console

from gpuparity.results.schema import new_result, new_run
from gpuparity.results.spool import redact, save_or_spool
from gpuparity.results.store import Store

_HELD: list[socket.socket] = []


def dead_pg_url() -> str:
    """A port this process holds bound and never listens on: connections are refused, and no
    server another test starts meanwhile can take it."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _HELD.append(s)
    return f"postgresql://gp:secret@127.0.0.1:{s.getsockname()[1]}/gpuparity"


def small_doc() -> dict:
    doc = new_run({"host": "h", "backend": "cpu"}, ["run"])
    r = new_result("memory", "kernel", {"op": "copy", "elements": 1024}, "fp32")
    r.update(samples=[1e-6, 1e-6], work={"bytes": 8192.0},
             metric={"name": "bytes", "unit": "GB/s", "value": 8.192, "higher_is_better": True})
    doc["results"].append(r)
    doc["status"] = "complete"
    return doc


def test_unreachable_postgres_spools_and_import_stores_the_same(tmp_db, cli):
    doc = small_doc()
    buf = io.StringIO()
    path = save_or_spool(doc, dead_pg_url(), Console(file=buf, width=300))
    assert path == os.path.join(os.environ["GPUPARITY_SPOOL"], f"{doc['run_id']}.json")
    said = buf.getvalue()
    assert "unreachable" in said and f"gpuparity import {path}" in said
    assert "secret" not in said
    with open(path) as fh:
        assert json.load(fh) == doc
    p = cli("import", path)  # into the default store (tmp_db)
    assert p.returncode == 0, p.stderr
    with Store(tmp_db) as s:
        assert s.get_run(doc["run_id"]) == doc


def test_unusable_sqlite_file_spools_instead_of_losing_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPARITY_SPOOL", str(tmp_path / "spool"))
    bad = tmp_path / "notes.db"
    bad.write_text("not a database " * 100)
    path = save_or_spool(small_doc(), str(bad))
    assert path.startswith(str(tmp_path / "spool"))
    assert bad.read_text().startswith("not a database")  # left as it was


def test_unwritable_spool_folder_falls_back_to_the_temp_dir(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("GPUPARITY_SPOOL", str(blocker / "spool"))  # a folder inside a file: cannot exist
    doc = small_doc()
    path = save_or_spool(doc, dead_pg_url())
    try:
        # a folder of this user's (0700; never one another user made in the shared temp dir), the file 0600
        assert path == os.path.join(tempfile.gettempdir(), f"gpuparity-spool-{os.getuid()}", f"{doc['run_id']}.json")
        assert os.stat(path).st_mode & 0o777 == 0o600 and os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700
        with open(path) as fh:
            assert json.load(fh) == doc
    finally:
        os.remove(path)


def test_redact():
    assert redact("postgresql://bob:pw@db:5432/x") == "postgresql://bob:***@db:5432/x"
    assert redact("postgresql://bob@db/x") == "postgresql://bob@db/x"
    assert redact("/data/gpuparity.db") == "/data/gpuparity.db"


@pytest.mark.slow
def test_cli_run_against_a_dead_server_spools(tmp_db, tmp_path, cli):
    wl = tmp_path / "tiny.py"
    wl.write_text(textwrap.dedent("""
        from gpuparity.workloads.base import Prepared, Workload

        class Tiny(Workload):
            name, category, suites = "tiny", "kernel", ()

            def cases(self, suite, ctx):
                return [{"n": 1024, "dtype": "fp32"}]

            def prepare(self, params, ctx):
                import torch
                x = torch.rand(params["n"])
                return Prepared(fn=lambda: x.sum(), work={"bytes": 4.0 * params["n"]})

        WORKLOADS = [Tiny()]
    """))
    p = cli("run", "tiny", "--workload-file", str(wl), "--db", dead_pg_url())
    assert p.returncode == 0, p.stderr
    (spooled,) = (tmp_path / "spool").glob("*.json")
    assert "gpuparity import" in p.stderr and spooled.name in p.stderr
    assert cli("import", str(spooled)).returncode == 0
    with Store(tmp_db) as s:
        assert s.get_run(spooled.stem) == json.loads(spooled.read_text())
