"""trend: versions ordered by first run, consecutive steps, change points, first -> last."""

from __future__ import annotations

import json

import pytest
from test_compare import main_inprocess, make_result, make_run, noisy

from gpuparity.comparison.trend import trend, version_label
from gpuparity.results.store import Store


def _runs():
    out = []
    plan = [("6.2.4", "2.5.1", 100.0, 1), ("6.2.4", "2.5.1", 100.0, 2), ("7.0.0", "2.5.1", 350.0, 3),
            ("7.0.0", "2.7.0", 352.0, 4)]
    for i, (rocm, torch, gemm, day) in enumerate(plan):
        results = [make_result("gemm", {"m": 8192}, noisy(gemm, 0.01, 12, 10 * i)),
                   make_result("memory", {"op": "copy"}, noisy(4000.0, 0.005, 12, 10 * i + 1), unit="GB/s",
                               dtype="fp32")]
        out.append(make_run(results, run_id=f"r{i}", started_at=f"2026-03-0{day}T00:00:00+00:00",
                            stack={"hip_version": rocm, "rocm_version": rocm, "torch_version": torch},
                            product="AMD Instinct MI300X"))
    return out


@pytest.fixture
def store(tmp_path):
    with Store(str(tmp_path / "t.db")) as s:
        for d in _runs():
            s.save_run(d)
        yield s


def test_trend_finds_the_rocm_step_and_nothing_else(store):
    result = trend(store, store.run_ids(), by="stack")
    assert [v["label"] for v in result["versions"]] == ["rocm 6.2.4", "rocm 7.0.0"]
    assert result["versions"][0]["runs"] == ["r0", "r1"]
    (step,) = result["steps"]
    (change,) = step["changes"]
    assert change["workload"] == "gemm" and change["verdict"] == "faster"
    assert 1.05 < change["ci_low"] < change["ratio"] < change["ci_high"]
    assert change["ratio"] == pytest.approx(3.5, rel=0.05)
    assert step["counts"]["parity"] == 1 and result["overall"] is None and result["note"] is None


def test_trend_by_all_has_overall_first_to_last(store):
    result = trend(store, store.run_ids(), by="all")
    assert len(result["versions"]) == 3 and len(result["steps"]) == 2
    assert version_label({"stack": "rocm 7.0.0", "torch": "2.7.0", "driver": None}) == \
        "rocm 7.0.0 | torch 2.7.0 | driver ?"
    assert not result["steps"][1]["changes"]                    # torch 2.5 -> 2.7: no change point
    assert result["overall"]["changes"][0]["ratio"] == pytest.approx(3.52, rel=0.05)


def test_trend_cli(store, capsys):
    code, out, err = main_inprocess(["trend", "--db", store.url, "--by", "stack", "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["steps"][0]["changes"][0]["workload"] == "gemm"
    code, out, err = main_inprocess(["trend", "--db", store.url, "--by", "stack"], capsys)
    assert code == 0 and "change rocm 6.2.4 -> rocm 7.0.0: gemm" in out
    code, out, _ = main_inprocess(["trend", "--db", store.url, "--format", "markdown"], capsys)
    assert code == 0 and "### Change points" in out
    code, _, err = main_inprocess(["trend", "--db", store.url, "--since", "2026-03-04", "--by", "stack"], capsys)
    assert code == 2 and "only one run matches (r3)" in err and "--by date" not in err
    code, _, err = main_inprocess(["trend", "--db", store.url, "--by", "kernel"], capsys)
    assert code == 2 and "--by" in err


def _labelled(store, labels: dict):
    """Runs r0..r3 of _runs() stored with labels (r3 unlabelled), in a new store."""
    for d in _runs():
        if d["run_id"] in labels:
            d["label"] = labels[d["run_id"]]
        store.save_run(d)
    return store


def test_trend_by_date_and_by_label(tmp_path):
    with Store(str(tmp_path / "l.db")) as s:
        _labelled(s, {"r0": "baseline", "r1": "baseline", "r2": "new-kernel"})
        by_date = trend(s, s.run_ids(), by="date")
        assert [v["label"] for v in by_date["versions"]] == ["2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04"]
        assert [st["changes"][0]["workload"] if st["changes"] else None for st in by_date["steps"]] == \
            [None, "gemm", None]                                       # the ROCm 7 day is the change point
        by_label = trend(s, s.run_ids(), by="label")
        assert [(v["label"], v["runs"]) for v in by_label["versions"]] == [
            ("baseline", ["r0", "r1"]), ("new-kernel", ["r2"]), ("(no label)", ["r3"])]
        assert by_label["steps"][0]["changes"][0]["ratio"] == pytest.approx(3.5, rel=0.05)


def test_trend_label_read_from_the_document_when_the_store_has_no_column(tmp_path):
    """A store written before runs.label existed: the label comes from the run document."""
    import sqlite3

    from gpuparity.comparison.frame import run_labels

    path = str(tmp_path / "old.db")
    with Store(path) as s:
        _labelled(s, {"r0": "before", "r2": "after"})
    con = sqlite3.connect(path)
    if "label" in {r[1] for r in con.execute("PRAGMA table_info(runs)")}:
        con.execute("ALTER TABLE runs DROP COLUMN label")
        con.commit()
    con.close()

    class Old:
        """The store as an older version left it (no upgrade on open)."""
        postgres = False

        def __init__(self, path):
            self.con = sqlite3.connect(path)

        def query(self, sql, args=()):
            return self.con.execute(sql, tuple(args)).fetchall()

        columns = Store.columns        # the store's own column lookup, on the unupgraded file

    old = Old(path)
    assert "label" not in old.columns("runs")
    assert run_labels(old, ["r0", "r1", "r2"]) == {"r0": "before", "r1": None, "r2": "after"}


def test_trend_cli_by_label_and_choices(tmp_path, capsys):
    with Store(str(tmp_path / "c.db")) as s:
        _labelled(s, {"r0": "a", "r1": "a", "r2": "b", "r3": "b"})
        url = s.url
    code, out, err = main_inprocess(["trend", "--db", url, "--by", "label", "-f", "json"], capsys)
    assert code == 0, err
    assert [v["label"] for v in json.loads(out)["versions"]] == ["a", "b"]
    code, out, err = main_inprocess(["trend", "--db", url, "--by", "label", "-f", "markdown"], capsys)
    assert code == 0 and "| label | runs | first run |" in out
    code, _, err = main_inprocess(["trend", "--db", url, "--by", "commit"], capsys)
    assert code == 2 and "'commit' is not one of 'all', 'date', 'label', 'stack', 'torch', 'driver'" in err


def test_trend_of_one_group_shows_its_runs_over_time(store, capsys):
    """One stack (here: only the ROCm 7 runs) is one group: each run becomes a point in time, said so,
    and the step between them is measured; --by date with every run on one day does the same."""
    result = trend(store, ["r2", "r3"], by="stack")
    assert result["by"] == "run" and result["grouped_by"] == "stack"
    assert [v["runs"] for v in result["versions"]] == [["r2"], ["r3"]]
    assert "one stack group (rocm 7.0.0)" in result["note"] and len(result["steps"]) == 1
    assert result["steps"][0]["counts"]["parity"] + result["steps"][0]["counts"]["inconclusive"] == 2
    code, out, err = main_inprocess(["trend", "--db", store.url, "--since", "2026-03-03", "--by", "stack"], capsys)
    assert code == 0, err
    assert "each run is shown on its own" in out and "2026-03-03 00:00 r2" in out and "--by date" not in out
    code, out, err = main_inprocess(["trend", "--db", store.url, "--since", "2026-03-03", "--by", "date",
                                     "-f", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["by"] == "date"                      # two days: two groups, no fallback
    assert version_label({"run_id": "r9", "started_at": "2026-03-05T10:20:30+00:00"}, "run") == "2026-03-05 10:20 r9"


def test_trend_counts_are_adjusted_and_one_run_groups_take_the_store_history(tmp_path, capsys):
    """Six runs of one platform, each its own group: a step of one run a side takes its run-to-run
    spread from the store's other runs (as compare does) and says so; of 40 kernels, one 7.5% up
    reads 'faster' on its own row, but not after Benjamini-Hochberg over the step's 40 results,
    so the step counts no faster result and lists no change point (the counts are compare's)."""
    import math

    import numpy as np

    rng = np.random.default_rng(1)
    rocm = {"hip_version": "6.2.4", "rocm_version": "6.2.4"}
    db = str(tmp_path / "t.db")
    with Store(db) as s:
        for day in range(1, 7):
            shift = math.exp(0.003 * rng.standard_normal())
            s.save_run(make_run([make_result("gemm", {"m": m}, noisy(100 * (1 + m / 40) * shift * (1.075 if day == 6 and m == 0 else 1),
                                                                   0.003, 20, 100 + 10 * day + m)) for m in range(40)],
                                run_id=f"r{day}", started_at=f"2026-03-0{day}T00:00:00+00:00", stack=rocm))
        result = trend(s, s.run_ids(), by="all")
    step = result["steps"][-1]
    code, out, err = main_inprocess(["compare", "r5", "r6", "--db", db, "-f", "json"], capsys)
    doc = json.loads(out)
    assert doc["rows"][0]["verdict"] == "faster" and doc["counts"]["faster"] == 0       # raw vs adjusted
    assert doc["rows"][0]["fdr_verdict"] != "faster"
    assert step["counts"] == {v: doc["counts"][v] for v in ("faster", "parity", "slower", "inconclusive")}
    assert step["counts_method"].startswith("Benjamini-Hochberg over 40 result(s)") and step["changes"] == []
    (spread,) = step["spread"]
    assert spread.startswith("run-to-run ") and spread.endswith("from 4 runs on 1 host over 4 days of mi300x/rocm 6.2.4"), spread
    code, out, err = main_inprocess(["trend", "--db", db], capsys)
    text = " ".join(out.split())
    assert code == 0 and "counts adjusted by Benjamini-Hochberg" in text and "from 4 runs on 1 host over 4 days of mi300x/rocm 6.2.4" in text
    assert "parity band 0.952-1.05" in text and not any(line.startswith("change ") for line in out.splitlines())
