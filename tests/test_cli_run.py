"""`gpuparity run` as a user drives it: --set axes, dtypes, exit codes, stdout, labels, notes."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from test_compare import main_inprocess


def run(capsys, *args):
    return main_inprocess(["run", *args], capsys)


def test_unknown_set_key_names_the_valid_ones(tmp_db, capsys):
    code, out, err = run(capsys, "gemm", "--set", "mm=5")
    assert code == 2 and err.count("\n") == 1
    assert "unknown --set key mm for gemm" in err and "m, n" in err and "layout" in err


def test_set_values_replace_the_suites_axes(tmp_db, capsys):
    code, out, err = run(capsys, "gemm", "--dtype", "fp32", "--set", "m=256,1024", "--set", "n=384",
                         "--set", "k=128", "--json", "-")
    assert code == 0, err
    doc = json.loads(out)                         # --json -: stdout is the document alone
    shapes = sorted((r["params"]["m"], r["params"]["n"], r["params"]["k"]) for r in doc["results"])
    assert shapes == [(256, 384, 128), (1024, 384, 128)]
    assert all(r["dtype"] == "fp32" and r["status"] == "ok" for r in doc["results"])
    code, out, err = run(capsys, "memory", "--set", "op=copy", "--set", "elements=65536", "--json", "-")
    assert code == 0, err
    assert [(r["params"]["op"], r["params"]["elements"]) for r in json.loads(out)["results"]] == [("copy", 65536)]


@pytest.mark.parametrize("args, message", [
    (["gemm", "--dtype", "fp33"], "unknown dtype fp33"),
    (["gemm", "--set", "m=abc"], "--set m=abc: m takes a whole number >= 1"),
    (["gemm_search", "--set", "budget_s=-1"], "budget_s takes a number >= 0"),
    (["gemm", "--json", "/nonexistent/folder/x.json"], "does not exist"),
    (["gemm", "--set", "m"], "--set takes key=value"),
])
def test_bad_values_exit_2_before_measuring(tmp_db, capsys, args, message):
    code, out, err = run(capsys, *args)
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not os.path.exists(tmp_db) or sqlite3.connect(tmp_db).execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)


def test_no_ok_result_exits_1_and_is_stored(tmp_db, capsys):
    code, out, err = run(capsys, "gemm", "--dtype", "tf32")        # a CPU has no TF32: every case skipped
    assert code == 1 and "no result is ok" in err
    with sqlite3.connect(tmp_db) as c:
        assert c.execute("SELECT COUNT(*) FROM runs").fetchone() == (1,)


def test_label_best_shape_and_profile_are_reported(tmp_db, tmp_path, capsys):
    code, out, err = run(capsys, "gemm_search", "--set", "budget_s=0.5", "--label", "before upgrade",
                         "--profile", str(tmp_path / "traces"))
    assert code == 0, err
    assert "best shape m=" in err and "trace " in err and str(tmp_path / "traces") in err
    with sqlite3.connect(tmp_db) as c:
        (label, doc) = c.execute("SELECT label, doc FROM runs").fetchone()
    assert label == "before upgrade" and json.loads(doc)["label"] == "before upgrade"
    assert any(f.endswith(".json") for f in os.listdir(tmp_path / "traces"))


def test_trials_are_interleaved_shuffled_and_recorded(tmp_db, capsys):
    code, out, err = run(capsys, "memory", "--set", "op=copy,scale", "--set", "elements=65536", "--trials", "2",
                         "--in-process", "--seed", "7", "--json", "-")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["plan"] == {**doc["plan"], "trials": 2, "seed": 7, "mode": "in-process", "shuffled": True}
    for r in doc["results"]:
        assert [t["trial"] for t in r["trials"]] == [1, 2] and r["metric"]["trials"] == 2
        assert sum(t["n"] for t in r["trials"]) == len(r["samples"])
        assert r["metric"]["ci_basis"] == "trials"
    again = json.loads(run(capsys, "memory", "--set", "op=copy,scale", "--set", "elements=65536", "--trials", "2",
                           "--in-process", "--seed", "7", "--json", "-", "--no-store")[1])
    order = [[t["position"] for t in r["trials"]] for r in doc["results"]]
    assert order == [[t["position"] for t in r["trials"]] for r in again["results"]]   # the seed fixes it


def test_dash_means_stdout_for_port_reports(tmp_path, capsys):
    src = str(__import__("pathlib").Path(__file__).parent / "data" / "cuda_samples" / "vector_add_streams.cu")
    code, out, err = main_inprocess(["port", src, "--out", str(tmp_path / "o"), "--json", "-"], capsys)
    assert code == 0, err
    assert json.loads(out)["summary"]["score"] > 0 and not (tmp_path / "-").exists()
    code, out, err = main_inprocess(["port", src, "--examine", "--csv", "-"], capsys)
    assert code == 0 and out.startswith("file,family,converted,not_converted")
    code, out, err = main_inprocess(["port", src, "--json", "-"], capsys)     # dry run: stdout is the diff
    assert code == 2 and err.count("\n") == 1


def test_dash_means_stdout_for_export_and_compare_help_lists_choices(tmp_db, capsys):
    code, out, err = run(capsys, "memory", "--set", "op=copy", "--set", "elements=4096")
    assert code == 0, err
    code, out, err = main_inprocess(["export", "latest", "-o", "-"], capsys)
    assert code == 0 and json.loads(out)["results"][0]["workload"] == "memory"
    code, out, err = main_inprocess(["compare", "--help"], capsys)
    assert "[table|markdown|csv|json]" in out and "\\[default" not in out
    code, out, err = main_inprocess(["run", "--help"], capsys)
    assert "[quick|standard|full|comm]" in out and "--trials" in out and "--isolate" in out
