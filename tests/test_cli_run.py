"""`gpuparity run` as a user drives it: --set axes, dtypes, exit codes, stdout, labels, notes."""

from __future__ import annotations

import json
import os
import re
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
    (["conv", "--set", "net=vgg"], "--set net=vgg: conv takes net in resnet50, unet"),
    (["conv", "--set", "layer=conv9"], "conv takes layer in conv1, res2_3x3"),
    (["conv", "--set", "net=resnet50,unet"], "conv takes one net per run"),
    (["conv", "--set", "net=resnet50", "--set", "layer=mid"], "resnet50's layers are conv1"),
    (["gemm", "--dtype", "fp8", "--set", "scaling=block"], "gemm takes scaling in tensor, row, mx"),
    (["serving", "--set", "dataset=nope"], "serving takes dataset in random, sharegpt, prefix"),
])
def test_bad_values_exit_2_before_measuring(tmp_db, capsys, args, message):
    code, out, err = run(capsys, *args)
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not os.path.exists(tmp_db) or sqlite3.connect(tmp_db).execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)


FREE_TEXT = {("llm", "model"): "smollm2, a PATH or synthetic:<arch>"}


def test_every_fixed_set_axis_declares_its_choices():
    """A string axis whose values are a fixed set is checked before measuring (run.check_sets)
    only if the workload declares its choices: every string value a suite's cases give an axis
    (on a CPU and on two GPUs) must be among them, and so must every value an axis' help lists as
    'a | b' or 'a, b' (serving's cases need a server, its help names its values)."""
    from gpuparity.cli.run import axis_names
    from gpuparity.execute.plan import spec_context
    from gpuparity.workloads.base import registry

    for name, w in registry().items():
        axes = axis_names(w) - {"dtype"}
        for key, allowed in w.choices.items():
            assert key in axes and allowed and all(isinstance(v, str) for v in allowed), (name, key)
        for key, text in w.axes.items():
            listed = re.fullmatch(r"([a-z][\w-]*)((, |(?: \([^)]*\))? \| )[a-z][\w-]*)+(?: \(.*\)| [a-z -]+)?",
                                  text)
            if key in axes and listed and (name, key) not in FREE_TEXT:
                values = set(re.findall(r"(?:^|, |\| )([a-z][\w-]*)", text)) - {"true", "false"}
                assert values <= set(w.choices.get(key, ())), (name, key, text)
        for suite in () if name == "serving" else w.suites:
            for spec in ("cpu", "h100-sxm", "mi300x"):
                for case in w.cases(suite, spec_context(spec, suite)):
                    for key, value in case.items():
                        if isinstance(value, str) and key in axes and (name, key) not in FREE_TEXT:
                            assert value in w.choices.get(key, ()), (name, suite, spec, key, value)


def test_run_table_fits_100_columns_and_wide_shows_every_column(tmp_db, tmp_path, capsys, monkeypatch):
    """At 100 columns every row's figure, CI and status are whole (the constant parameters and
    dtype are said once below); --wide prints every parameter, the dtype and the flags' names."""
    from gpuparity.results.figure_text import figure

    monkeypatch.setenv("COLUMNS", "100")
    args = ["gemm", "memory", "--dtype", "fp32", "--set", "m=256,512", "--set", "n=384", "--set", "k=128",
            "--set", "op=copy,triad", "--set", "elements=65536", "--no-store"]
    for wide in (False, True):
        path = tmp_path / f"run-{wide}.json"
        code, out, err = run(capsys, *args, "--json", str(path), *(["--wide"] if wide else []))
        assert code == 0, err
        doc = json.loads(path.read_text())
        lines = out.splitlines()
        assert "…" not in out and "not shown for lack of width" not in out
        assert (max(map(len, lines)) > 100) is wide, out
        header = next(line for line in lines if line.startswith("workload"))
        # "% peak" is shown where some result has one: a CPU's peak is an estimate that a warm run can
        # exceed (then the figure is flagged peak_exceeded and no share is shown)
        peak = ["%", "peak"] if any((r.get("derived") or {}).get("pct_peak") for r in doc["results"]) else []
        assert header.split() == ["workload", "params", *(["dtype"] if wide else []), "throughput", "95%", "CI",
                                  *peak, "trials", "median", "status"]
        for r in doc["results"]:
            m = r["metric"]
            row = next(line for line in lines if f" {figure(m['value'])} {m['unit']} " in line)
            assert f"{figure(m['ci_low'])} .. {figure(m['ci_high'])}" in row
            flags = r["flags"]
            status = f"ok ({', '.join(flags)})" if wide and flags else "ok*" if flags else "ok"
            assert row.rstrip().endswith(status), (row, status)
            shown = " ".join(f"{k}={v}" for k, v in r["params"].items() if k != "dtype")
            assert (shown in row) is wide and (f" {r['dtype']} " in row) is wide
        assert ("same in every row: gemm n=384 k=128 layout=nn; memory elements=65536; dtype fp32" in out) is not wide


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


def test_trend_table_fits_100_columns_and_wide_shows_the_counts(tmp_path, capsys, monkeypatch):
    """trend prints its steps through the same fitted table: at 100 columns each step's ratio, CI
    and verdict are whole on one line (the step wraps); --wide adds the counts, one line a step."""
    from test_trend import _runs

    from gpuparity.cli.tables import ratio_text
    from gpuparity.results.store import Store

    db = str(tmp_path / "t.db")
    with Store(db) as s:
        for d in _runs():
            s.save_run(d)
    code, out, err = main_inprocess(["trend", "--db", db, "--by", "all", "-f", "json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    steps = result["steps"] + [{**result["overall"], "from": "FIRST: " + result["overall"]["from"]}]
    monkeypatch.setenv("COLUMNS", "100")
    for wide in (False, True):
        code, out, err = main_inprocess(["trend", "--db", db, "--by", "all", *(["--wide"] if wide else [])], capsys)
        assert code == 0, err
        assert "…" not in out and ("not shown for lack of width: faster, slower, inconclusive" in out) is not wide
        for s in steps:
            (g,) = s["geomean"].values()
            figure = rf"{re.escape(ratio_text(g['ratio'], g['ci_low'], g['ci_high']))}\s+{g['verdict']}"
            counts = r"\s+".join(str(s["counts"][k]) for k in ("faster", "slower", "inconclusive"))
            line = re.search(rf"^.*{figure}.*$", out, re.M)
            assert line and bool(re.search(rf"{figure}\s+{counts}\s*$", line[0])) is wide, out
            assert (f"{s['from']} -> {s['to']}" in line[0]) is wide
