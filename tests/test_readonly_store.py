"""A store this process cannot write (a team share mounted read-only, a 0444 file in a 0555
folder as a user other than root): every reader (list, show, export, compare, report, trend)
works, every writer (import, reference import, run) refuses in one line with exit 2 before any
work, and no file appears beside the store, whatever its name (issue 45). Real mounts and a real
other user: the commands run in a private mount namespace (unshare) or as uid 65534 (setpriv);
each test is skipped where this machine does not allow that."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_compare import make_result, make_run, noisy

ROOT = Path(__file__).resolve().parents[1]
V41 = ROOT / "tests" / "data" / "mlperf_inference_v4.1_excerpt.json"
NAMES = ("s.db", "q?x.db", "h#x.db", "r?mode=rwc&x.db")     # '?', '#', '&': part of the name, not a URI's
# Each command in this process (one interpreter start for all): [exit code, stdout tail, stderr].
DRIVER = """
import contextlib, io, json, sys
from gpuparity.cli.main import main
said = []
for args in json.loads(sys.argv[1]):
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
    said.append([code, o.getvalue()[-3000:], e.getvalue()])
print(json.dumps(said))
"""


def make_share(folder: Path) -> dict:
    """Stores named NAMES in `folder`, two runs each; a run file to import; what the folder holds."""
    from gpuparity.results.store import Store

    folder.mkdir()
    for name in NAMES:
        with Store(str(folder / name)) as s:
            for i, day in enumerate(("2026-01-01", "2026-02-01")):
                s.save_run(make_run([make_result("gemm", {"m": 1}, noisy(10 + i, 0.01, 5, i + 1))],
                                    run_id=f"run-{i}", started_at=f"{day}T00:00:00+00:00"))
    return {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in sorted(os.listdir(folder))}


def commands(share: str, out: Path, run_file: Path) -> tuple[list, list]:
    db = f"{share}/s.db"
    readers = [["list", "--json", "--db", db], ["show", "run-0", "--db", db], ["export", "run-1", "--db", db],
               ["compare", "run-0", "run-1", "-f", "json", "--db", db], ["trend", "-f", "json", "--db", db],
               ["report", "run-0", "run-1", "-f", "markdown", "-o", str(out / "r.md"), "--db", db]]
    readers += [["list", "--json", "--db", f"{share}/{name}"] for name in NAMES[1:]]
    writers = [["import", str(run_file), "--db", db], ["reference", "import", "mlperf", str(V41), "--db", db],
               ["run", "memory", "--set", "op=copy", "--set", "elements=4096", "--db", db]]
    return readers, writers


def check(said: list, readers: list, writers: list) -> None:
    for args, (code, out, err) in zip(readers, said, strict=False):
        assert code == 0 and "Traceback" not in err, (args, err)
        if args[0] == "list":
            assert [r["run_id"] for r in json.loads(out)] == ["run-1", "run-0"], args
    for args, (code, out, err) in zip(writers, said[len(readers):len(readers) + len(writers)], strict=True):
        assert code == 2 and err.count("\n") == 1 and "read-only" in err, (args, err)
        assert "cases" not in err and out == "", (args, out)          # refused before measuring


def run_driver(prefix: list[str], calls: list, env: dict) -> list:
    p = subprocess.run([*prefix, sys.executable, "-c", DRIVER, json.dumps(calls)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.splitlines()[-1])


def base_env(tmp_path: Path, owner: int | None = None) -> dict:
    spool, home, out = tmp_path / "spool", tmp_path / "home", tmp_path / "out"
    for d in (home, out, spool):
        d.mkdir(mode=0o700)
        if owner is not None:
            os.chown(d, owner, owner)
    env = {**os.environ, "GPUPARITY_SPOOL": str(spool), "HOME": str(home), "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("GPUPARITY_DB", None)
    return env


@pytest.fixture
def run_file(tmp_path) -> Path:
    path = tmp_path / "new-run.json"
    path.write_text(json.dumps(make_run([make_result("gemm", {"m": 2}, noisy(9, 0.01, 5, 9))], run_id="run-new")))
    return path


def bind_mounted(src: Path, at: Path, read_only: bool) -> list[str]:
    """The command prefix that runs a command with `src` bind-mounted at `at` (read-only or not), in
    a mount namespace of its own (gone with it: nothing to clean up); skips where not permitted."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a bind mount needs root and unshare")
    mount = f"mount --bind {src} {at}" + (f" && mount -o remount,ro,bind {at}" if read_only else "")
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount + ' && exec "$0" "$@"']
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"mounting is not permitted here: {probe.stderr.strip()[:200]}")
    return prefix


def test_a_store_on_a_read_only_mount_reads_and_refuses_writes(tmp_path, run_file):
    src, share = tmp_path / "src", tmp_path / "share"
    before = make_share(src)
    share.mkdir()
    # a live writer on the writable side: its runs wait in the WAL, which a reader of the share reads
    from gpuparity.results.store import Store

    live = Store(str(src / "live.db"))
    live._conn.execute("PRAGMA wal_autocheckpoint=0")
    live.save_run(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 5, 3))], run_id="run-live"))
    env = base_env(tmp_path)
    readers, writers = commands(str(share), tmp_path / "out", run_file)
    calls = readers + writers + [["list", "--json", "--db", f"{share}/live.db"]]
    try:
        said = run_driver(bind_mounted(src, share, read_only=True), calls, env)
    finally:
        live.close()
    check(said, readers, writers)
    assert [r["run_id"] for r in json.loads(said[-1][1])] == ["run-live"]
    after = {n: hashlib.sha256((src / n).read_bytes()).hexdigest() for n in sorted(os.listdir(src))
             if not n.startswith("live.db")}
    assert after == before          # no file beside any store, none changed


@pytest.fixture
def open_folder():
    """A folder every user can reach (pytest's tmp_path lies in root's 0700 folder)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="gpuparity-ro-"))
    folder.chmod(0o755)
    yield folder
    for sub in folder.rglob("*"):
        if sub.is_dir():
            sub.chmod(0o755)
    shutil.rmtree(folder)


def test_a_0444_store_in_a_0555_folder_reads_as_another_user(open_folder):
    """As uid 65534 (not root: file modes apply to its writes). It is given CAP_DAC_READ_SEARCH,
    reading only, so that it can start this Python wherever it is installed (under /root)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("switching to another user needs root and setpriv")
    nobody, tmp_path = 65534, open_folder
    run_file = tmp_path / "new-run.json"
    run_file.write_text(json.dumps(make_run([make_result("gemm", {"m": 2}, noisy(9, 0.01, 5, 9))],
                                            run_id="run-new")))
    src = tmp_path / "src"
    before = make_share(src)
    for name in os.listdir(src):
        os.chmod(src / name, 0o444)
    os.chmod(src, 0o555)
    env = base_env(tmp_path, owner=nobody)
    os.chown(run_file, nobody, nobody)
    readers, writers = commands(str(src), tmp_path / "out", run_file)
    as_user = ["setpriv", f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups",
               "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    probe = subprocess.run([*as_user, sys.executable, "-c", "import os, gpuparity; print(os.geteuid())"],
                           capture_output=True, text=True, env=env)
    if probe.returncode != 0 or probe.stdout.strip() != str(nobody):
        pytest.skip(f"cannot run as uid {nobody} here: {probe.stderr.strip()[:200]}")
    try:
        said = run_driver(as_user, readers + writers, env)
    finally:
        os.chmod(src, 0o755)
    check(said, readers, writers)
    after = {n: hashlib.sha256((src / n).read_bytes()).hexdigest() for n in sorted(os.listdir(src))}
    assert after == before


def test_a_wal_with_writes_and_no_shm_on_a_read_only_store_is_one_line(tmp_path):
    """Writes waiting in a -wal that this process cannot read without a -shm it cannot make: refused in
    one line, never read as if they were not there (a store named with '?' and '#' too)."""
    from gpuparity.results import store_connect

    for name in ("w.db", "w?x#y.db"):
        db = tmp_path / name
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("CREATE TABLE runs (run_id TEXT, started_at TEXT, doc TEXT)")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("INSERT INTO runs VALUES ('r', '2026', '{}')")          # waits in the WAL
        shutil.copy(db, tmp_path / "copy.db")
        shutil.copy(f"{db}-wal", tmp_path / "copy.db-wal")
        conn.close()
        os.replace(tmp_path / "copy.db", db)
        os.replace(tmp_path / "copy.db-wal", f"{db}-wal")
        assert not os.path.exists(f"{db}-shm") and os.path.getsize(f"{db}-wal") > 0
        with pytest.raises(Exception) as got:
            store_connect.read_only_uri(str(db))
        assert "-wal file holds writes" in str(got.value) and "\n" not in str(got.value)
        # with no -wal, the URI names this very file, read-only and immutable
        os.remove(f"{db}-wal")
        uri = store_connect.read_only_uri(str(db))
        assert uri.endswith("?mode=ro&immutable=1") and "?" not in uri[:-len("?mode=ro&immutable=1")]
        got_tables = sqlite3.connect(uri, uri=True).execute("SELECT name FROM sqlite_master").fetchall()
        assert got_tables == [("runs",)]
    assert sorted(os.listdir(tmp_path)) == ["w.db", "w?x#y.db"]


def test_a_store_file_not_made_yet_is_guarded_through_a_bind_mount_of_its_folder(tmp_path):
    """The store's -wal, -shm and -journal names under another mount of its folder (no symlink, no
    file yet to compare by inode) are the store's: no output is written there."""
    src, alias = tmp_path / "src", tmp_path / "alias"
    make_share(src)
    alias.mkdir()
    db = str(src / "s.db")
    calls = [["export", "run-0", "-o", f"{alias}/s.db-wal", "--db", db],
             ["report", "run-0", "run-1", "-f", "markdown", "-o", f"{alias}/s.db-shm", "--db", db],
             ["list", "-o", f"{alias}/s.db-journal", "--db", db],
             ["submit", "memory", "--dry-run", "--output", f"{alias}/s.db-wal", "--db", db],
             ["submit", "memory", "--dry-run", "--output", f"{alias}/%x", "--job-name", "s.db-shm", "--db", db]]
    said = run_driver(bind_mounted(src, alias, read_only=False), calls, base_env(tmp_path))
    for args, (code, _, err) in zip(calls, said, strict=True):
        assert code == 2 and err.count("\n") == 1 and "refusing to write over it" in err, (args, err)
    assert sorted(os.listdir(src)) == sorted(NAMES)         # nothing written beside the stores
