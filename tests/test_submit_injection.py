"""`gpuparity submit` writes no value into its batch script that could run as shell, add or end an
#SBATCH directive, put a password in the script or point SLURM's log at the store (issue 45).
The scripts are run by real bash with a stub srun / scontrol: what they would do is what runs."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PG = "postgresql://bench@db.example/gpuparity"
STUBS = {
    "srun": '#!/bin/sh\nprintf "%s\\0" "$@" > "$RECORD"\n',
    "scontrol": '#!/bin/sh\ncase "$2" in hostnames) echo n1 ;; *) echo "NodeName=n1 NodeAddr=127.0.0.1" ;; esac\n',
}


def submit(*args: str) -> tuple[int, str, str]:
    """`gpuparity submit --dry-run ARGS` in this process: (exit code, the script, stderr)."""
    from gpuparity.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["submit", *args, "--dry-run"])
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
    return code, out.getvalue(), err.getvalue()


def directives(script: str) -> list[str]:
    """The #SBATCH lines sbatch reads: those before the first line that is neither blank nor a comment."""
    out = []
    for line in script.splitlines()[1:]:
        if line.strip() and not line.startswith("#"):
            break
        if line.startswith("#SBATCH"):
            out.append(line)
    return out


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    root = tmp_path_factory.mktemp("submit")
    stubs = root / "bin"
    stubs.mkdir()
    for name, text in STUBS.items():
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    return root


def run_script(sandbox: Path, script: str) -> list[str]:
    """The script run by bash in an empty folder, as SLURM would start it: the srun command line it ran.
    The folder stays empty (nothing the script does but srun)."""
    work = sandbox / "work"
    work.mkdir()
    (sandbox / "job.sh").write_text(script)
    record = sandbox / "srun.args"
    env = {"PATH": f"{sandbox / 'bin'}:/usr/bin:/bin", "RECORD": str(record), "SLURM_CPUS_ON_NODE": "4",
           "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_ID": "77"}
    try:
        p = subprocess.run(["bash", str(sandbox / "job.sh")], cwd=work, env=env, capture_output=True, text=True,
                           timeout=20)
        assert p.returncode == 0, p.stderr
        assert sorted(os.listdir(work)) == [], "the script made files"
        assert sorted(os.listdir(sandbox)) == ["bin", "job.sh", "srun.args", "work"], "the script made files"
        return record.read_text().split("\0")[:-1]
    finally:
        for leftover in work.iterdir():
            leftover.unlink()
        work.rmdir()
        record.unlink(missing_ok=True)


def run_words(argv: list[str]) -> list[str]:
    """The `gpuparity run` arguments srun was given (between 'gpuparity run' and '--db')."""
    at = max(i for i in range(len(argv) - 1) if argv[i:i + 2] == ["gpuparity", "run"])
    end = len(argv) - 1 - argv[::-1].index("--db")
    return argv[at + 2:end]


# -- the cases the issue found, each refused in one line ----------------------------------------------
@pytest.mark.parametrize("args", [
    ("--label", "x\ntouch PWNED #"),
    ("--label", "x\rtouch PWNED"),
    ("--label", "a\\\ntouch PWNED"),                               # backslash-newline
    ("--label", "x\n#SBATCH --output=/tmp/store.db"),             # a directive
    ("gemm", "--set", "m=256\ntouch PWNED"),
    ("serving", "--set", "url=http://h:1/\ntouch PWNED"),
    ("collectives", "--suite", "comm", "--nodes", "2", "--label", "x\ntouch PWNED"),     # the torchrun script
    ("--python", "/usr/bin/python3\ntouch PWNED"),
    ("--time", "\u0661\u0660"),                                   # Arabic-Indic 10: sbatch reads no digit there
    ("--time", "01:00:00\n#SBATCH --output=x"),
    ("--sbatch", "--qos=a\u2028b"),
])
def test_a_value_that_would_break_the_script_is_refused(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = PG if "--nodes" in args else str(tmp_path / "s.db")
    code, script, err = submit(*args, "--db", db)
    assert code == 2 and script == "" and err.count("\n") == 1 and err.startswith("error: "), (args, err)


def test_the_comment_line_quotes_the_words_the_command_runs(sandbox, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    label = "it's $(touch PWNED) `x` #not a comment"
    for extra in ((), ("collectives", "--suite", "comm", "--nodes", "2")):
        code, script, err = submit(*extra, "--label", label, "--db", PG if extra else str(tmp_path / "s.db"))
        assert code == 0, err
        comment = script.splitlines()[1]
        words = run_words(run_script(sandbox, script))
        assert words[words.index("--label") + 1] == label
        import shlex

        assert "`gpuparity run " + " ".join(shlex.quote(w) for w in words) + "`" in comment


@pytest.mark.parametrize("db", ["postgresql://u@host/db?password=S3cr", "postgresql://u@host/db?sslpassword=S3cr",
                                "postgresql://u@host/db?PassWord=S3cr", "postgresql://u@host/db?%70assword=S3cr",
                                "postgresql://u@host/db?a=1#&password=S3cr", "postgresql://u:S3cr@host/db",
                                "host=h password=S3cr"])
def test_a_password_in_any_form_stays_out_of_the_script(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, script, err = submit("--db", db)
    assert code == 2 and script == "" and "S3cr" not in err and err.count("\n") == 1, err
    assert "pgpass" in err.lower()


def test_a_passfile_is_how_the_password_travels(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, script, err = submit("--db", PG + "?passfile=/home/u/.pgpass&sslmode=require")
    assert code == 0 and "passfile=/home/u/.pgpass" in script, err


# -- SLURM's log never lands on the store ----------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ("--sbatch=--output=STORE",), ("--sbatch=--error=STORE",), ("--sbatch=--input=STORE",),
    ("--sbatch=--output=STORE-wal",), ("--sbatch=--out=STORE-shm",), ("--sbatch=--err=STORE-journal",),
    ("--job-name", "s.db", "--output", "DIR/%x"), ("--job-name", "s", "--output", "DIR/%x.db"),
    ("--sbatch=--job-name=s.db", "--output", "DIR/%x"), ("--output", "DIR/%j.db"), ("--output", "DIR/s.%u"),
    ("--output", "DIR/%%x/../s.db"), ("--output", "ALIAS/s.db-wal"), ("--output", "ALIAS/%4j%N.db"),
    ("--sbatch=--chdir=DIR", "--output", "s.db"), ("--output", "DIR/%x/../s.db"),
])
def test_slurm_never_writes_its_log_over_the_store(args, tmp_path, monkeypatch):
    store = tmp_path / "st" / "s.db"
    store.parent.mkdir()
    (tmp_path / "alias").symlink_to(store.parent)
    monkeypatch.chdir(tmp_path)
    words = [a.replace("STORE", str(store)).replace("DIR", str(store.parent)).replace("ALIAS", "alias")
             for a in args]
    code, script, err = submit(*words, "--db", str(store))
    assert code == 2 and script == "" and "could be the store" in err, (words, err)
    monkeypatch.setenv("SBATCH_OUTPUT", str(store))           # sbatch's environment overrides the script
    code, _, err = submit("--db", str(store))
    assert code == 2 and "SBATCH_OUTPUT" in err
    monkeypatch.delenv("SBATCH_OUTPUT")
    code, script, err = submit("--output", str(store.parent / "%x-%j.log"), "--db", str(store))
    assert code == 0 and directives(script), err


# -- any value: no script that runs anything but srun, adds a directive or drops one --------------------------
_NASTY = list("ab1/ -_.=%#$`'\";|&<>()\\\n\r\t\x0b\x1b\u2028\u0661:") + ["#SBATCH --output=x", "\\\n", "$(touch P)"]
VALUES = st.one_of(st.lists(st.sampled_from(_NASTY), min_size=1, max_size=8).map("".join),
                   st.text(min_size=1, max_size=12))
FIELDS = {
    "--label": lambda v: ["--label", v],
    "--set": lambda v: ["gemm", "--set", f"m={v}"],
    "--job-name": lambda v: ["--job-name", v],
    "--partition": lambda v: ["--partition", v],
    "--account": lambda v: ["--account", v],
    "--output": lambda v: ["--output", v],
    "--time": lambda v: ["--time", v],
    "--sbatch": lambda v: [f"--sbatch=--qos={v}"],
    "--python": lambda v: ["--python", "/opt/" + v],
    "--db": lambda v: ["--db", "store-" + v],
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(sorted(FIELDS)), value=VALUES, torchrun=st.booleans())
def test_no_value_runs_as_shell_or_moves_a_directive(sandbox, tmp_path, monkeypatch, field, value, torchrun):
    monkeypatch.chdir(tmp_path)          # relative --db / --output values: in this test's folder
    comm = ["collectives", "--suite", "comm", "--nodes", "2", "--db", PG] if torchrun else []
    if torchrun and field in ("--set", "--db"):
        field = "--label"
    code, script, err = submit(*comm, *FIELDS[field](value))
    if code != 0:
        assert code == 2 and script == "" and err.count("\n") == 1 and "Traceback" not in err, err
        return
    base_code, base, _ = submit(*comm, *FIELDS[field]("10" if field == "--time" else "v"))  # a value it takes
    assert base_code == 0
    # the same directives, each one option on one line; none anywhere else
    names = [re.match(r"#SBATCH (--[a-z-]+)(=\S+)?$", d) for d in directives(script)]
    assert all(names), directives(script)
    assert [m.group(1) for m in names] == [d.split("=")[0].split()[1] for d in directives(base)]
    assert [line for line in script.splitlines() if line.startswith("#SBATCH")] == directives(script)
    assert len(directives(script)) == len(directives(base))
    assert {"--exclusive", "--time", "--no-requeue", "--signal"} <= {m.group(1) for m in names}
    # run by bash: srun is called with the value as one word, nothing else happens
    argv = run_script(sandbox, script)
    words = run_words(argv)
    if field == "--label":
        assert words[words.index("--label") + 1] == value
    if field == "--set":
        assert words[words.index("--set") + 1] == f"m={value}"
    if field == "--python":
        assert "/opt/" + value in argv
