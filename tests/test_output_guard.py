"""No output is ever written over what a command is working with: every writer (`export -o` and
`export --requests -o`, `report -o` HTML and markdown, `run --json`, `port --json/--html/--csv`,
`port FILE --out`, the job log of `submit -o`) refuses, with one line
and exit 2 before any work, a target that is by any alias (the same path, `..`, a symlink, a hard
link, the store named as `sqlite:///` or through a symlink) the store or its -wal/-shm files, an
input of the command (a side or the --claims-file of `report`, a --workload-file or --like file of
`run`) or a file of a port source tree; a FIFO, a device or a folder as the output too. Files are written
beside the target and renamed: a failed write leaves the old file whole."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import chdir, contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_compare import main_inprocess, make_result, make_run, noisy

from gpuparity.results.store import Store

RUN = ["run", "memory", "--set", "op=copy", "--set", "elements=4096", "--in-process"]
WRITERS = ["export", "export-requests", "report-html", "report-md", "report-claims", "run-json", "run-like",
           "port-json", "port-html", "port-csv", "port-out", "submit-log"]
TARGETS = ["store", "wal", "shm", "input"]
ALIASES = ["same", "dotdot", "symlink", "hardlink", "absolute"]
STORE_NAMES = ["env", "db", "sqlite-url", "db-symlink"]


def sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


TINY = """
from gpuparity.workloads.base import Prepared, Workload

class Tiny(Workload):
    name, category, suites = "guard_tiny", "kernel", ()

    def cases(self, suite, ctx):
        return [{"n": 1024, "dtype": "fp32"}]

    def prepare(self, params, ctx):
        raise AssertionError("measured: the guard should have refused first")

WORKLOADS = [Tiny()]
"""


@contextmanager
def workspace():
    """A folder with a store holding one run (its -wal and -shm kept by an open reader), a run
    file, a workload file and a port source tree."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        db = root / "db.db"
        with Store(str(db)) as s:
            s.save_run(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 9, 1))], run_id="r-1"))
        reader = sqlite3.connect(db)             # another process's open connection: -wal and -shm exist
        reader.execute("SELECT COUNT(*) FROM runs").fetchone()
        (root / "run.json").write_text(json.dumps(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 9, 2))],
                                                           run_id="r-file")))
        (root / "mine.py").write_text(TINY)
        from gpuparity.evidence.claims import default_claims_text
        from gpuparity.results.schema import result_key

        (root / "claims.yaml").write_text(default_claims_text())
        params = {"op": "copy", "elements": 4096, "dtype": "fp32"}
        (root / "like.json").write_text(json.dumps({
            "kind": "gpuparity-plan", "plan_version": 1, "suite": "quick", "trials": 1,
            "cases": [{"workload": "memory", "params": params, "key": result_key("memory", params, "fp32")}]}))
        (root / "src").mkdir()
        (root / "src" / "a.cu").write_text("__global__ void k() {}\nint main() { cudaDeviceSynchronize(); }\n")
        (root / "sub").mkdir()
        try:
            yield root
        finally:
            reader.close()


def alias(root: Path, target: Path, how: str) -> str:
    """Another name for target: the same relative path, one through `..`, a symlink, a hard link
    (made beside it where the target does not exist yet: the name then is the target's own)."""
    if how == "same":
        return os.path.relpath(target, root)
    if how == "dotdot":
        return os.path.join("sub", "..", os.path.relpath(target, root))
    if how == "absolute":
        return str(target)
    link = root / "sub" / f"link-{target.name}"
    if how == "symlink":
        link.symlink_to(target)
    elif target.exists():
        os.link(target, link)
    else:
        return str(target)
    return os.path.relpath(link, root)


def command(writer: str, out: str, root: Path, target: str) -> list[str]:
    """The writer's command line, its input the one the target may alias."""
    if writer == "export":
        return ["export", "latest", "-o", out]
    if writer == "export-requests":
        return ["export", "latest", "--requests", "-o", out]
    if writer == "submit-log":             # the job's log, which SLURM writes: --dry-run, or a refusal
        return ["submit", "memory", "--dry-run", "-o", out]
    if writer == "port-out":               # one file's translation, written where --out says
        return ["port", "src/a.cu", "--out", out]
    if writer == "report-claims":
        return ["report", "latest", "--claims-file", "claims.yaml", "-o", out]
    if writer.startswith("report"):
        fmt = ["-f", "markdown"] if writer == "report-md" else []
        return ["report", "run.json", "latest", "-o", out, *fmt]
    if writer == "run-like":
        return ["run", "--like", "like.json", "--in-process", "--json", out]
    if writer == "run-json":
        if target == "input":
            return ["run", "guard_tiny", "--workload-file", "mine.py", "--in-process", "--json", out]
        return [*RUN, "--json", out]
    option = "--" + writer.split("-")[1]
    return ["port", "src", "--examine", option, out]


def input_of(writer: str, root: Path) -> Path | None:
    return {"export": None, "export-requests": None, "submit-log": None, "report-html": root / "run.json", "report-md": root / "run.json",
            "report-claims": root / "claims.yaml", "run-json": root / "mine.py",
            "run-like": root / "like.json"}.get(writer, root / "src" / "a.cu")


@settings(max_examples=250, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writer=st.sampled_from(WRITERS), target=st.sampled_from(TARGETS), how=st.sampled_from(ALIASES),
       store_name=st.sampled_from(STORE_NAMES))
def test_no_writer_writes_over_the_store_or_an_input_by_any_alias(capsys, monkeypatch, writer, target, how,
                                                                  store_name):
    with workspace() as root:
        db = root / "db.db"
        victim = {"store": db, "wal": root / "db.db-wal", "shm": root / "db.db-shm"}.get(target) \
            or input_of(writer, root)
        if victim is None:              # export and submit read no file but the store
            victim = db
        files = [db, root / "db.db-wal", root / "db.db-shm", root / "run.json", root / "mine.py", root / "claims.yaml",
                 root / "like.json", root / "src" / "a.cu"]
        before = {f: sha(f) for f in files}
        assert before[root / "db.db-wal"] and before[root / "db.db-shm"]     # they exist: the guard sees them
        out = alias(root, victim, how)
        args = command(writer, out, root, target)
        monkeypatch.setenv("GPUPARITY_SPOOL", str(root / "spool"))
        if store_name == "env":
            monkeypatch.setenv("GPUPARITY_DB", str(db))
        else:
            monkeypatch.setenv("GPUPARITY_DB", str(root / "elsewhere.db"))
            if store_name == "db-symlink":
                (root / "db-link.db").symlink_to(db)
            named = {"db": "db.db", "sqlite-url": f"sqlite:///{db}", "db-symlink": "db-link.db"}[store_name]
            args += ["--db", named] if not writer.startswith("port") else []
            if writer.startswith("port"):           # port has no --db: the default store is what it must spare
                monkeypatch.setenv("GPUPARITY_DB", named)
        with chdir(root):
            code, stdout, err = main_inprocess(args, capsys)
        assert code == 2, (args, code, err)
        assert err.startswith("error:") and err.count("\n") == 1, (args, err)
        assert "refusing to write over it" in err or "is a file of the source tree" in err, (args, err)
        assert "cases x" not in err and not (root / "spool").exists()       # nothing measured, no journal
        assert {f: sha(f) for f in files} == before, args                      # every byte where it was
        assert not (root / "elsewhere.db").exists()


@pytest.mark.parametrize("out_name", ["o", "o-link"])
def test_port_out_never_writes_a_translation_over_a_store_inside_the_tree(tmp_path, capsys, monkeypatch, out_name):
    """A tree's --out folder holding the store where a source's translation would go (o/a.cu as
    the store, the folder named itself or through a symlink): refused before any file is written."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "src" / "b.cu").write_text("__global__ void j() {}\n")
    (tmp_path / "o").mkdir()
    (tmp_path / "o-link").symlink_to(tmp_path / "o")
    store = tmp_path / "o" / "a.cu"
    with Store(str(store)) as s:
        s.save_run(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 9, 1))], run_id="r-1"))
    before = sha(store)
    monkeypatch.setenv("GPUPARITY_DB", str(store))
    code, _, err = main_inprocess(["port", str(tmp_path / "src"), "--out", str(tmp_path / out_name)], capsys)
    assert code == 2 and err.count("\n") == 1 and "a.cu there is the store: refusing" in err, err
    assert sha(store) == before and sorted(p.name for p in (tmp_path / "o").iterdir()) == ["a.cu"]
    monkeypatch.setenv("GPUPARITY_DB", str(tmp_path / "elsewhere.db"))     # another store: the tree is written
    code, _, err = main_inprocess(["port", str(tmp_path / "src"), "--out", str(tmp_path / "p")], capsys)
    assert code == 0 and (tmp_path / "p" / "b.cu").read_text().startswith("#include <hip/hip_runtime.h>"), err


def cli(args: list, env: dict, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    full = dict(os.environ, COLUMNS="200", HF_HUB_OFFLINE="1", **env)
    return subprocess.run([sys.executable, "-m", "gpuparity", *args], capture_output=True, text=True,
                          timeout=timeout, env=full, cwd=cwd)


def test_the_reported_overwrites_are_refused_by_the_real_command(tmp_path):
    """The issue's own cases, as a user types them: each exits 2 with one line, nothing changes."""
    with workspace() as root:
        env = {"GPUPARITY_DB": "db.db", "GPUPARITY_SPOOL": str(root / "spool")}
        (root / "other").mkdir()
        os.link(root / "src" / "a.cu", root / "other" / "a-link.cu")      # a hard link outside the tree
        files = [root / "db.db", root / "db.db-wal", root / "run.json", root / "src" / "a.cu"]
        before = {f: sha(f) for f in files}
        for args in (["export", "latest", "-o", "db.db"], ["export", "latest", "-o", "./sub/../db.db"],
                     ["export", "latest", "-o", "db.db", "--db", "sqlite:///db.db"],
                     ["export", "latest", "-o", "db.db-wal"], ["report", "latest", "-o", "db.db"],
                     ["report", "latest", "-o", "db.db", "-f", "markdown"],
                     ["report", "run.json", "latest", "-o", "run.json"],
                     ["port", "src", "--examine", "--json", "db.db"], ["port", "src", "--examine", "--html", "src/a.cu"],
                     ["port", "src", "--examine", "--json", "other/a-link.cu"], [*RUN, "--json", "db.db"]):
            p = cli(args, env, root)
            assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, (args, p.stderr)
            assert "gpuparity AMD" not in p.stderr and "cases x" not in p.stderr, args     # never measured
        assert {f: sha(f) for f in files} == before
        assert not (root / "spool").exists()
        # and the same writers still write where they may: a new file, whole
        p = cli(["export", "latest", "-o", "sub/out.json"], env, root)
        assert p.returncode == 0 and json.loads((root / "sub" / "out.json").read_text())["run_id"] == "r-1", p.stderr


@pytest.mark.parametrize("args", [["export", "latest", "-o", "{out}"], ["report", "latest", "-o", "{out}"],
                                  [*RUN, "--json", "{out}"], ["port", "{src}", "--examine", "--csv", "{out}"]])
@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_pipe_a_device_or_a_folder_is_never_an_output(tmp_path, capsys, monkeypatch, args, kind):
    db = tmp_path / "db.db"
    with Store(str(db)) as s:
        s.save_run(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 9, 1))], run_id="r-1"))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cu").write_text("int main() {}\n")
    out = {"fifo": tmp_path / "pipe", "device": Path("/dev/null"), "folder": tmp_path / "dir"}[kind]
    if kind == "fifo":
        os.mkfifo(out)
    elif kind == "folder":
        out.mkdir()
    monkeypatch.setenv("GPUPARITY_DB", str(db))
    monkeypatch.setenv("GPUPARITY_SPOOL", str(tmp_path / "spool"))
    t0 = time.monotonic()
    code, _, err = main_inprocess([a.format(out=out, src=tmp_path / "src") for a in args], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert ("not a regular file" if kind != "folder" else "is a folder") in err, err
    assert time.monotonic() - t0 < 30 and "cases x" not in err and not (tmp_path / "spool").exists()


def test_a_failed_write_leaves_the_old_file_and_a_hard_link_is_replaced_not_written_through(tmp_path):
    from gpuparity.validate import write_file

    target, other = tmp_path / "report.json", tmp_path / "other.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    with pytest.raises(UnicodeEncodeError):
        write_file(str(target), "new \udcff")       # fails while writing: nothing but the old file remains
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    os.link(target, other)
    write_file(str(target), "new")
    assert target.read_text() == "new" and other.read_text() == "old"    # the other name keeps its file
    assert target.stat().st_mode & 0o777 == 0o640                          # the old file's permissions
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_file(str(link), "through the link")
    assert link.is_symlink() and target.read_text() == "through the link"
