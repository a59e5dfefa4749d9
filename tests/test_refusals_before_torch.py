"""A refused `run` costs no torch import: its options are judged before anything heavy loads
(issue 40: `run gemm --db notastore` exited 2 only after importing torch, 2 to 11 s of CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# The CLI entry called in-process; what the refusal printed, its exit status and whether torch loaded.
PROBE = """
import json, sys
from gpuparity.cli.main import main
try:
    main(sys.argv[1:])
    code = 0
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "torch": "torch" in sys.modules}))
"""


def refuse(args: list[str], cwd: str, env: dict) -> tuple[dict, str]:
    p = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=300,
                       cwd=cwd, env={**os.environ, **env})
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


@pytest.fixture
def place(tmp_path):
    (tmp_path / "notastore.txt").write_text("these are notes, not a store\n")
    (tmp_path / "a-folder").mkdir()
    return tmp_path


REFUSALS = {
    "--db a text file": (["run", "gemm", "--db", "notastore.txt"], "not a usable SQLite store"),
    "--db a folder": (["run", "gemm", "--db", "a-folder"], "is a folder"),
    "--db in no folder": (["run", "gemm", "--db", "no/such/folder/s.db"], "does not exist"),
    "--db empty": (["run", "gemm", "--db="], "--db is empty"),
    "--dtype unknown": (["run", "gemm", "--dtype", "fp7"], "unknown dtype fp7"),
    "--set unknown key": (["run", "gemm", "--set", "mm=512"], "unknown --set key mm"),
    "--set not a number": (["run", "gemm", "--set", "m=abc"], "m takes a whole number"),
    "--set below range": (["run", "gemm", "--set", "m=0"], "m takes a whole number"),
    "--set not a choice": (["run", "gemm", "--set", "layout=zz"], "layout in"),
    "--set not a bool": (["run", "conv", "--set", "channels_last=maybe"], "true or false"),
    "--profile a file": (["run", "gemm", "--profile", "notastore.txt"], "not a folder"),
    "--profile in no folder": (["run", "gemm", "--profile", "no/such/dir"], "does not exist"),
    "unknown workload": (["run", "gemmm"], "unknown workload 'gemmm'"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_a_refusal_imports_no_torch(case, place, tmp_db):
    args, words = REFUSALS[case]
    out, err = refuse(args, str(place), {"GPUPARITY_DB": tmp_db})
    assert out["code"] == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], err
    assert out["torch"] is False, f"{case}: torch was imported before the refusal"
    assert not os.path.exists(tmp_db)          # nothing was measured or stored
    assert sorted(os.listdir(place)) == ["a-folder", "notastore.txt"]      # no store made on the way


def test_the_probe_sees_torch_where_it_loads(place, tmp_db):
    """The probe can fail: a verb that gets past its checks to this machine's context imports torch."""
    out, err = refuse(["plan", "gemm", "--set", "m=64"], str(place), {"GPUPARITY_DB": tmp_db})
    assert out["code"] == 0 and out["torch"] is True, err


def test_plan_refuses_a_bad_value_before_torch(place, tmp_db):
    out, err = refuse(["plan", "gemm", "--set", "m=abc"], str(place), {"GPUPARITY_DB": tmp_db})
    assert out["code"] == 2 and out["torch"] is False, err
