"""A full disk anywhere (the spool and journal, the store, an output file, port's --out tree): one
line, a non-zero exit, and nothing that finished is lost (issue 45). The disks are real: small
tmpfs file systems mounted for the test (skipped where mounting is not permitted)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from test_compare import main_inprocess, make_result, make_run, noisy

from gpuparity.results.store import Store

WORKLOADS = str(Path(__file__).parent / "data" / "slow_workloads.py")     # t_quick, t_fill
ROOT = str(Path(__file__).resolve().parent.parent)


def _top_under_tmp(path: str) -> Path | None:
    """/tmp/X (or /var/tmp/X) when `path` lies under it, else None."""
    real = Path(os.path.realpath(path))
    for base in (Path("/tmp"), Path("/var/tmp")):
        if base in real.parents:
            return base / real.relative_to(base).parts[0]
    return None


@pytest.fixture
def tiny_fs(tmp_path):
    """make(name, size): a tmpfs of `size` at tmp_path/name, unmounted when the test ends."""
    mounts = []

    def make(name: str, size: str) -> Path:
        at = tmp_path / name
        at.mkdir()
        if os.geteuid() != 0:
            pytest.skip("mounting a small file system needs root")
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(at)],
                           capture_output=True, text=True)
        if p.returncode != 0:
            pytest.skip(f"mounting is not permitted here: {p.stderr.strip()[:200]}")
        mounts.append(at)
        return at

    yield make
    for at in reversed(mounts):
        subprocess.run(["umount", "-l", str(at)], capture_output=True)


def fill(folder: Path, leave: int = 0) -> Path:
    """Take all the room of the file system of `folder` but `leave` bytes; returns the filler file."""
    room = os.statvfs(folder)
    filler = folder / "filler"
    with open(filler, "wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, max(1, room.f_bavail * room.f_frsize - leave))
    return filler


def errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def test_a_full_spool_is_refused_before_measuring(tiny_fs, tmp_path, capsys, monkeypatch):
    spool = tiny_fs("spool", "256k")
    fill(spool)
    monkeypatch.setenv("GPUPARITY_SPOOL", str(spool / "gp"))
    db = tmp_path / "s.db"
    code, out, err = main_inprocess(["run", "memory", "--set", "op=copy", "--set", "elements=4096", "--db", str(db)],
                                    capsys)
    assert code == 2 and err.count("\n") == 1 and "disk is full" in err and "No space left" in err, err
    assert "cases x" not in err and out == ""               # nothing measured
    assert not db.exists() and sorted(os.listdir(spool)) == ["filler"]


def test_a_disk_that_fills_during_a_run_stops_it_and_the_finished_trials_are_saved(tiny_fs, tmp_path, cli):
    spool = tiny_fs("spool", "1m")
    db = tmp_path / "s.db"
    env = {"GPUPARITY_SPOOL": str(spool / "gp"), "GPUPARITY_TEST_FILL": str(spool / "filler")}
    p = cli("run", "t_quick", "t_fill", "--in-order", "--workload-file", WORKLOADS, "--db", str(db), env=env)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    said = errors(p.stderr)
    assert len(said) == 1 and "journal" in said[0] and "No space left on device" in said[0], p.stderr
    with Store(str(db)) as store:               # the store is on another disk: both results are in it
        (row,) = store.list_runs()
        doc = store.get_run(row["run_id"])
    assert doc["status"] == "interrupted" and [r["workload"] for r in doc["results"]] == ["t_quick", "t_fill"]
    assert not list((spool / "gp" / "journal").glob("*.jsonl"))     # saved: its journal is gone


def test_a_run_whose_store_spool_and_temp_dir_fill_keeps_its_journal(tiny_fs):
    """Store, spool and the temp dir (the spool's fallback) all on one disk that fills mid-run: the
    run cannot be saved anywhere, says so in one line (exit 2), and its journal keeps the trials
    that finished; once there is room, the next command stores them. The disk is /tmp itself in a
    mount namespace of the command's own (and /var/tmp, and the working folder: every temp dir
    Python would fall back to), so the fallback cannot escape to the real /tmp."""
    import shutil
    import sys

    disk = tiny_fs("disk", "2m")
    if not shutil.which("unshare"):
        pytest.skip("needs unshare")
    Store(str(disk / "s.db")).close()
    # a checkout or interpreter under /tmp or /var/tmp (a CI clone) stays visible: its top folder is
    # bound into the disk first and carried over with it (--rbind)
    keep = sorted({top for top in map(_top_under_tmp, (ROOT, sys.prefix, sys.base_prefix, sys.executable)) if top})
    binds = "".join(f"mkdir -p {disk / t.name} && mount --bind {t} {disk / t.name} && " for t in keep)
    as_tmp = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
              f'{binds}mount --rbind {disk} /var/tmp && mount --rbind {disk} /tmp && cd /tmp && '
              'exec "$0" "$@"']
    probe = subprocess.run([*as_tmp, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"mounting is not permitted here: {probe.stderr.strip()[:200]}")
    as_tmp += [sys.executable, "-m", "gpuparity"]
    env = {**os.environ, "GPUPARITY_SPOOL": "/tmp/gp", "GPUPARITY_TEST_FILL": "/tmp/filler", "COLUMNS": "200"}
    env.pop("TMPDIR", None)
    p = subprocess.run([*as_tmp, "run", "t_quick", "t_fill", "--in-order", "--workload-file", WORKLOADS,
                        "--db", "/tmp/s.db"], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    said = errors(p.stderr)
    assert len(said) == 1 and "stays in its journal" in said[0] and "No space left" in said[0], p.stderr
    assert "disk is full" in p.stderr           # the store's failure said as what it is
    (journal,) = (disk / "gp" / "journal").glob("*.jsonl")
    records = [json.loads(line) for line in journal.read_text().splitlines()]       # whole records only
    assert [r["type"] for r in records] == ["header", "start", "trial", "start"]
    # room again: the next command stores what finished (t_quick) from the journal
    (disk / "filler").unlink()
    p = subprocess.run([*as_tmp, "list", "--json", "--db", "/tmp/s.db"], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    (row,) = json.loads(p.stdout)
    assert row["status"] == "crashed" and row["n_results"] == 1


def test_an_output_file_on_a_full_disk_is_one_line_and_the_old_file_stays(tiny_fs, tmp_path, capsys):
    out = tiny_fs("out", "256k")
    db = str(tmp_path / "s.db")
    with Store(db) as s:
        s.save_run(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 50, 1))], run_id="run-a"))
    (out / "run.json").write_text("old")
    fill(out)
    for args in (["export", "run-a", "-o", str(out / "run.json")], ["list", "-o", str(out / "run.json")],
                 ["report", "run-a", "-f", "markdown", "-o", str(out / "run.json")]):
        code, _, err = main_inprocess([*args, "--db", db], capsys)
        assert code == 2 and err.count("\n") == 1 and "No space left on device" in err, (args, err)
        assert (out / "run.json").read_text() == "old" and sorted(os.listdir(out)) == ["filler", "run.json"]


def test_port_out_on_a_full_disk_exits_non_zero_and_keeps_the_files_written(tiny_fs, tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    body = "__global__ void k%d(float *x) { x[0] = 1.0f; }\n" + "// padding\n" * 900      # ~10 KB each
    for i in range(3):
        (src / f"k{i}.cu").write_text(body % i)
    out = tiny_fs("out", "256k")
    fill(out, leave=16 * 1024)          # room for one translated file, not for the next
    code, _, err = main_inprocess(["port", str(src), "--out", str(out / "hip")], capsys)
    assert code == 2 and err.count("\n") == 1 and "disk is full" in err, err
    written = sorted(os.listdir(out / "hip"))
    assert len(written) == 1 and not [n for n in written if n.startswith(".")], written      # no temporary left
    assert (out / "hip" / written[0]).read_text().startswith("#include")
