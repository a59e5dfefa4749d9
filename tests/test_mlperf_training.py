"""MLPerf Training: the shipped v5.0 sample scored as MLPerf scores it, a submitter's summary JSON,
and trees with runs that did not converge, missing descriptions and broken files."""

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from gpuparity.analysis import mlperf_training
from tests.test_reference import cli_inprocess, one_line_error, ref_rows

DATA = Path(__file__).parent / "data"
TREE = DATA / "mlperf_training_v5.0"
SUMMARY = DATA / "mlperf_training_v5.1_Quanta_summary.json"


def run_minutes(path: Path) -> float | None:
    """Independently of the importer: time_ms of run_start and run_stop, None if not a success."""
    start = stop = None
    for line in path.read_text().splitlines():
        if ":::MLLOG" not in line:
            continue
        event = json.loads(line.split(":::MLLOG", 1)[1])
        if event["key"] == "run_start":
            start = event["time_ms"]
        if event["key"] == "run_stop":
            stop = event["time_ms"] if event["metadata"].get("status") == "success" else None
            break
    return (stop - start) / 60000 if start is not None and stop is not None else None


def expected_score(bench_dir: Path) -> tuple[float, float]:
    """(olympic mean, score): drop the fastest and the slowest (a failed run is the slowest)."""
    times = [run_minutes(p) for p in sorted(bench_dir.glob("result_*.txt"))]
    ok = sorted(t for t in times if t is not None)
    kept = ok[1:] if len(ok) < len(times) else ok[1:-1]
    mean = sum(kept) / len(kept)
    scaling = bench_dir / "scaling.json"
    factor = json.loads(scaling.read_text())["scaling_factor"] if scaling.exists() else 1.0
    return mean, mean * factor


def stored(db) -> list[dict]:
    return [json.loads(doc) for _, doc in ref_rows(db)]


@pytest.fixture
def tree(tmp_path):
    """A writable copy of the sample under a folder that names the round."""
    dst = tmp_path / "training_results_v5.0"
    shutil.copytree(TREE, dst)
    for p in dst.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return dst


def test_shipped_sample_scores_equal_the_olympic_mean_of_the_runs(tmp_path):
    db = str(tmp_path / "s.db")
    code, out, err = cli_inprocess("reference", "import", "mlperf-training", str(TREE), "--db", db, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["unreadable"] == [] and summary["rounds"] == {"5.0": 4} and summary["added"] == 4
    rows = {r["ref_id"]: r for r in json.loads(cli_inprocess("reference", "list", "--db", db, "--json",
                                                             "--source", "mlperf-training")[1])}
    systems = sorted(TREE.glob("*/results/*/llama2_70b_lora"))
    assert len(systems) == len(rows) == 4
    for bench_dir in systems:
        submitter, system = bench_dir.parts[-4], bench_dir.parts[-2]
        row = rows[f"mlperf-training:5.0/{submitter}/{system}/llama2_70b_lora"]
        mean, score = expected_score(bench_dir)
        assert row["olympic_mean_min"] == pytest.approx(mean, rel=1e-12)
        assert row["time_to_train_min"] == pytest.approx(score, rel=1e-12) == pytest.approx(row["result"])
        assert (row["runs_valid"], row["runs_counted"], row["required_runs"], row["complete"]) == (10, 8, 10, True)
        desc = json.loads((TREE / submitter / "systems" / f"{system}.json").read_text())
        assert row["accelerators"] == int(desc["accelerators_per_node"]) * int(desc["number_of_nodes"]) == 8
        assert row["accelerator"] == desc["accelerator_model_name"] and row["submitter"] == desc["submitter"]
        assert row["category"] == "closed" and row["units"] == "minutes" and row["lower_is_better"]
    by_spec = {r["spec_id"]: r for r in rows.values()}
    assert set(by_spec) == {"mi300x", "mi325x", "h200-sxm", "b200"}
    assert by_spec["mi300x"]["stack"] == "rocm" and by_spec["mi300x"]["versions"]["rocm"] == "6.4"
    assert by_spec["b200"]["stack"] == "cuda" and by_spec["b200"]["versions"]["cuda"].startswith("12.8")
    # the same tree again: nothing new; a submitter folder and its results/ folder read the same rows
    for path in (TREE, TREE / "AMD", TREE / "AMD" / "results"):
        code, out, _ = cli_inprocess("reference", "import", "mlperf-training", str(path), "--db", db,
                                     "--round", "5.0", "--json")
        assert code == 0 and json.loads(out)["added"] == 0
    code, out, _ = cli_inprocess("reference", "compare", "mi325x", "h200", "--db", db, "--json")
    group = json.loads(out)["groups"][0]
    assert group["accelerators"] == 8 and group["ratio"] == pytest.approx(
        by_spec["h200-sxm"]["time_to_train_min"] / by_spec["mi325x"]["time_to_train_min"])


def test_summary_json(tmp_path):
    db = str(tmp_path / "s.db")
    code, out, err = cli_inprocess("reference", "import", "mlperf-training", str(SUMMARY), "--db", db, "--json")
    assert code == 0, err
    raw = json.loads(SUMMARY.read_text())
    descriptors = mlperf_training.DESCRIPTOR_FIELDS
    expected = {(r["system"], k): v for r in raw for k, v in r.items() if k not in descriptors and v is not None}
    rows = stored(db)
    assert {(r["system"], r["model"]): r["time_to_train_min"] for r in rows} == expected
    assert all(r["round"] == "5.1" and r["accelerators"] == 8 and r["origin"] == "summary JSON" for r in rows)
    assert {r["system_id"] for r in rows} == {"D74H-7U", "D75T-7U"}
    assert {r["spec_id"] for r in rows} == {"h200-sxm", "mi325x"}


def _status(path: Path, status: str) -> None:
    text = path.read_text()
    path.write_text(re.sub(r'("key": "run_stop".*?"status": ")success(")', rf"\g<1>{status}\g<2>", text))


def test_runs_that_did_not_converge_are_dropped_as_mlperf_drops_them(tree, tmp_path):
    bench = tree / "AMD" / "results" / "MI300X_EPYC_9575F_pytorch" / "llama2_70b_lora"
    _status(bench / "result_3.txt", "aborted")
    lines = (bench / "result_5.txt").read_text().splitlines()
    (bench / "result_5.txt").write_text("\n".join(lines[:3] + [":::MLLOG {broken"] + lines[3:]))
    b200 = tree / "Dell" / "results" / "1xXE9680Lx8B200-SXM-180GB" / "llama2_70b_lora"
    _status(b200 / "result_0.txt", "aborted")
    db = str(tmp_path / "s.db")
    code, out, err = cli_inprocess("reference", "import", "mlperf-training", str(tree), "--db", db, "--json")
    assert code == 0, err
    summary = json.loads(out)
    # two failed MI300X runs: more than the one MLPerf drops, so no score; the others stand
    assert [u["where"] for u in summary["unreadable"]] == ["AMD/results/MI300X_EPYC_9575F_pytorch/llama2_70b_lora"]
    assert "2 of 10 runs did not converge" in summary["unreadable"][0]["reason"]
    rows = {r["spec_id"]: r for r in stored(db)}
    assert set(rows) == {"mi325x", "h200-sxm", "b200"}
    b = rows["b200"]
    assert (b["runs_valid"], b["runs_dropped"], b["runs_counted"]) == (9, 1, 8)
    mean, score = expected_score(b200)
    assert b["olympic_mean_min"] == pytest.approx(mean) and b["time_to_train_min"] == pytest.approx(score)
    failed = next(r for r in b["runs"] if r["file"] == "result_0.txt")
    assert not failed["valid"] and "did not converge" in failed["reason"] and "aborted" in failed["reason"]
    # --strict: nothing stored
    db2 = str(tmp_path / "strict.db")
    code, _, err = cli_inprocess("reference", "import", "mlperf-training", str(tree), "--db", db2, "--strict")
    assert one_line_error(code, err) and "did not converge" in err
    assert not Path(db2).exists() or ref_rows(db2) == []


def test_broken_trees_fail_in_one_line_or_list_what_was_left_out(tree, tmp_path):
    db = str(tmp_path / "s.db")
    assert cli_inprocess("reference", "import", "mlperf", str(DATA / "mlperf_inference_v4.1_excerpt.json"),
                         "--db", db)[0] == 0
    before = ref_rows(db)
    (tree / "Dell" / "systems" / "1xXE9680Lx8H200-SXM-141GB.json").unlink()
    (tree / "AMD" / "systems" / "MI325X_EPYC_9575F_pytorch.json").write_text('{"number_of_nodes": "1", '
                                                                             '"accelerators_per_node": "-8"}')
    (tree / "AMD" / "results" / "MI300X_EPYC_9575F_pytorch" / "llama2_70b_lora" / "scaling.json").write_text(
        '{"scaling_factor": "Infinity"}')
    (tree / "Dell" / "results" / "1xXE9680Lx8B200-SXM-180GB" / "llama2_70b_lora" / "loop").symlink_to(tree)
    code, out, err = cli_inprocess("reference", "import", "mlperf-training", str(tree), "--db", db, "--json")
    assert code == 0, err
    reasons = {u["where"]: u["reason"] for u in json.loads(out)["unreadable"]}
    assert "no system description" in reasons["Dell/results/1xXE9680Lx8H200-SXM-141GB"]
    assert "negative" in reasons["AMD/results/MI325X_EPYC_9575F_pytorch"]
    assert "finite" in reasons["AMD/results/MI300X_EPYC_9575F_pytorch/llama2_70b_lora"]
    assert len(ref_rows(db)) == len(before) + 1           # only B200 was readable
    cases = [
        (str(tmp_path / "nowhere"), "No such file"),
        (str(tmp_path), "not an MLPerf Training results tree"),
    ]
    plain = tmp_path / "plain"
    shutil.copytree(TREE, plain)
    cases.append((str(plain), "give --round"))
    junk = tmp_path / "junk.json"
    junk.write_text('[{"submitter": "x", "system": "y", "number_of_nodes": 1, "accelerators_count": 8, '
                    '"llama2_70b_lora": -3}]')
    cases.append((str(junk), "no readable reference rows"))
    for path, message in cases:
        code, _, err = cli_inprocess("reference", "import", "mlperf-training", path, "--db", db)
        assert one_line_error(code, err) and message in err, (path, err)
    assert len(ref_rows(db)) == len(before) + 1


def test_scoring_rules():
    assert mlperf_training.olympic_mean([5.0, 1.0, 3.0, 2.0, 4.0], 0) == pytest.approx(3.0)
    assert mlperf_training.olympic_mean([1.0, 2.0, 3.0, 4.0], 1) == pytest.approx(3.0)   # 5th run failed
    assert mlperf_training.olympic_mean([1.0, 2.0, 3.0], 2) is None
    assert mlperf_training.olympic_mean([float(i) for i in range(40)], 0, 4) == pytest.approx(19.5)
    run = mlperf_training.parse_log(':::MLLOG {"key": "run_start", "time_ms": 0}\n'
                                    ':::MLLOG {"key": "run_stop", "time_ms": 60000, "metadata": {"status": "success"}}')
    assert run["valid"] and run["minutes"] == 1.0
    for text, reason in (('', "no run_start"), (':::MLLOG {"key": "run_start", "time_ms": 5}', "no run_stop"),
                         (':::MLLOG {"key": "run_start", "time_ms": 1e999}', "finite"),
                         (':::MLLOG [1]', "not an object")):
        assert reason in mlperf_training.parse_log(text)["reason"]


def test_a_pipe_among_the_results_is_listed_not_read(tree, tmp_path):
    bench = tree / "Dell" / "results" / "1xXE9680Lx8B200-SXM-180GB" / "llama2_70b_lora"
    (bench / "result_9.txt").unlink()
    os.mkfifo(bench / "result_9.txt")           # opening it would wait for a writer forever
    db = str(tmp_path / "s.db")
    code, out, err = cli_inprocess("reference", "import", "mlperf-training", str(tree), "--db", db, "--json")
    assert code == 0, err
    (problem,) = json.loads(out)["unreadable"]
    assert problem["where"].endswith("1xXE9680Lx8B200-SXM-180GB/llama2_70b_lora")
    assert "not regular files: result_9.txt" in problem["reason"] and len(ref_rows(db)) == 3
