"""MLPerf Training: the real v5.0 and v5.1 samples scored as MLPerf's result summarizer scores them
(every result_*.txt, logs with bytes that are not UTF-8), a submitter's summary JSON, and trees
with runs that did not converge, missing descriptions and broken files."""

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from gpuparity.evidence import mlperf_training
from tests.test_reference import cli_inprocess, one_line_error, ref_rows

DATA = Path(__file__).parent / "data"
TREE = DATA / "mlperf_training_v5.0"
TREE51 = DATA / "mlperf_training_v5.1"
SUMMARY = DATA / "mlperf_training_v5.1_Quanta_summary.json"
NOT_UTF8 = [TREE51 / "Dell" / "results" / "1xXE7745x8RTXPro6000-PCIe-96GB" / "retinanet" / f"result_{i}.txt"
            for i in (0, 3, 4)]


def run_minutes(path: Path) -> float | None:
    """Independently of the importer: every byte read as Latin-1 (each byte one character) in text
    mode, the MLLOG events' time_ms of run_start and run_stop; None if not a success."""
    start = stop = None
    with open(path, encoding="latin-1") as fh:      # universal newlines: \r ends a line too
        for line in fh:
            if ":::MLLOG" not in line:
                continue
            event = json.loads(line.rsplit(":::MLLOG", 1)[1])
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
    group = json.loads(out)["groups"][0]     # B / A as `compare` reads it: A's time over B's
    assert group["accelerators"] == 8 and group["ratio"] == pytest.approx(
        by_spec["mi325x"]["time_to_train_min"] / by_spec["h200-sxm"]["time_to_train_min"])


def test_v51_sample_imports_every_submission_with_the_summarizers_scores(tmp_path):
    db = str(tmp_path / "s.db")
    code, out, err = cli_inprocess("reference", "import", "mlperf-training", str(TREE51), "--db", db, "--json")
    assert code == 0, err
    summary = json.loads(out)
    folders = sorted(b for b in TREE51.glob("*/results/*/*") if b.is_dir())
    assert summary["unreadable"] == [] and summary["added"] == len(folders) == 10
    rows = {r["location"]: r for r in stored(db)}
    assert set(rows) == {str(b.relative_to(TREE51)) for b in folders}
    for bench in folders:
        row = rows[str(bench.relative_to(TREE51))]
        mean, score = expected_score(bench)
        assert row["olympic_mean_min"] == pytest.approx(mean, rel=1e-12), bench
        assert row["time_to_train_min"] == pytest.approx(score, rel=1e-12), bench
        n = len(list(bench.glob("result_*.txt")))
        assert row["runs_valid"] == n and row["runs_dropped"] == 0 and row["runs_counted"] == n - 2
        assert row["required_runs"] == n and row["complete"], bench     # retinanet 5, the LLMs 10
    # the logs with bytes that are not UTF-8 are scored like the others: no run, no file dropped
    for path in NOT_UTF8:
        with pytest.raises(UnicodeDecodeError):
            path.read_bytes().decode("utf-8")
    retinanet = rows["Dell/results/1xXE7745x8RTXPro6000-PCIe-96GB/retinanet"]
    assert all(r["valid"] for r in retinanet["runs"]) and retinanet["model"] == "retinanet"
    # the published scores (MLPerf Training v5.1 results 5.1-0017 and 5.1-0018, minutes)
    assert round(rows["AMD/results/MI350X_EPYC_9575F_pytorch/llama31_8b"]["result"], 3) == 122.929
    assert round(rows["AMD/results/MI355X_EPYC_9575F_pytorch/llama31_8b"]["result"], 3) == 99.709


def test_every_result_file_name_counts(tmp_path):
    """Submitters name logs result_<id>_01.txt and so on: the summarizer reads every result_*.txt."""
    dst = tmp_path / "training_results_v5.1" / "AMD"
    shutil.copytree(TREE51 / "AMD", dst)
    bench = dst / "results" / "MI355X_EPYC_9575F_pytorch" / "llama31_8b"
    for i, f in enumerate(sorted(bench.glob("result_*.txt"))):
        f.rename(bench / f"result_{'a1b2c3d4e5f6' * 3}_{i:02d}.txt")
    (bench / "notes.txt").write_text("not a run")
    (bench / "results_summary.txt").write_text("not a run either")
    rows, problems = mlperf_training.read(str(dst.parent))
    assert problems == []
    row = next(r for r in rows if r["location"] == "AMD/results/MI355X_EPYC_9575F_pytorch/llama31_8b")
    assert row["runs_valid"] == 10 and row["time_to_train_min"] == pytest.approx(expected_score(bench)[1])
    assert all(r["file"].startswith("result_a1b2") for r in row["runs"])


def test_log_lines_are_read_as_the_summarizer_reads_them():
    start = ':::MLLOG {"key": "run_start", "time_ms": 0}'
    stop = ':::MLLOG {"key": "run_stop", "time_ms": 120000, "metadata": {"status": "success"}}'
    nan = ':::MLLOG {"key": "train_loss", "time_ms": 5, "value": NaN}'
    cases = [
        # progress-bar bytes and carriage returns around the MLLOG events
        "\r 12%|\ufffd\ufffd  | 3/25\r" + start + "\r 50%|##\n" + stop + "\r100%\n",
        # rank prefixes, a token twice on a line (the last counts), NaN in an event the score does not use
        "0: " + start + "\n1: noise :::MLLOG garbage " + stop + "\n" + nan,
    ]
    for text in cases:
        run = mlperf_training.parse_log(text)
        assert run["valid"] and run["minutes"] == 2.0, run
    raw = b"\xff\xfe progress \x96\r" + start.encode() + b"\n\xe2\x96" + b"\n" + stop.encode()
    assert mlperf_training.parse_log(mlperf_training.read_log(raw))["minutes"] == 2.0
    for text, reason in ((start + "\n" + start + "\n" + stop, "exactly one"),
                         (start + "\n:::MLLOG {not json\n" + stop, "not JSON"),
                         (start + '\n:::MLLOG {"key": "x", "time_ms": "soon"}\n' + stop, "numeric time_ms"),
                         (start + "\n" + stop.replace("success", "aborted"), "did not converge")):
        run = mlperf_training.parse_log(text)
        assert not run["valid"] and reason in run["reason"], run


SHARED = Path(__file__).parent.parent.parent / "shared" / "reference"
# The benchmarks of each round in the data (the MLPerf Training rules of v5.0 and v5.1).
ROUNDS = {
    "5.0": {"bert", "dlrm_dcnv2", "llama2_70b_lora", "llama31_405b", "retinanet", "rgat", "stable_diffusion"},
    "5.1": {"dlrm_dcnv2", "flux1", "llama2_70b_lora", "llama31_405b", "llama31_8b", "retinanet", "rgat"},
}


def test_required_runs_cover_every_benchmark_of_the_rounds_in_the_data():
    trees = [TREE, TREE51] + [SHARED / f"mlperf_training_v{r}" for r in ROUNDS if (SHARED / f"mlperf_training_v{r}").is_dir()]
    benches = {b.name for tree in trees for b in tree.glob("*/results/*/*") if b.is_dir()}
    benches |= {k for r in json.loads(SUMMARY.read_text()) for k in r if k not in mlperf_training.DESCRIPTOR_FIELDS}
    assert benches <= set().union(*ROUNDS.values())          # the data holds these rounds' benchmarks only
    for rnd, names in ROUNDS.items():
        assert names <= set(mlperf_training.REQUIRED_RUNS), (rnd, names - set(mlperf_training.REQUIRED_RUNS))
    assert mlperf_training.REQUIRED_RUNS["llama31_405b"] == 3 and mlperf_training.REQUIRED_RUNS["llama31_8b"] == 10
    assert mlperf_training.REQUIRED_RUNS["flux1"] == 10 and mlperf_training.REQUIRED_RUNS["retinanet"] == 5


def test_completeness_is_unknown_where_the_run_count_is_not_known(tree, tmp_path):
    """A benchmark without a required count, and a summary row (no runs), read complete None: unknown."""
    bench = tree / "AMD" / "results" / "MI300X_EPYC_9575F_pytorch" / "llama2_70b_lora"
    bench.rename(bench.with_name("new_benchmark"))
    (tree / "AMD" / "results" / "MI325X_EPYC_9575F_pytorch" / "llama2_70b_lora" / "result_9.txt").unlink()
    rows, problems = mlperf_training.read(str(tree))
    assert problems == []
    by_model = {(r["system_id"], r["model"]): r for r in rows}
    new = by_model[("MI300X_EPYC_9575F_pytorch", "new_benchmark")]
    assert new["required_runs"] is None and new["complete"] is None and new["runs_valid"] == 10
    assert mlperf_training.completeness(new) == "unknown"
    short = by_model[("MI325X_EPYC_9575F_pytorch", "llama2_70b_lora")]
    assert short["complete"] is False and mlperf_training.completeness(short) == "incomplete (9 of 10 required runs)"
    assert by_model[("1xXE9680Lx8B200-SXM-180GB", "llama2_70b_lora")]["complete"] is True
    summary_rows, _ = mlperf_training.read(str(SUMMARY))
    assert summary_rows and all(r["complete"] is None and r["required_runs"] for r in summary_rows)
    db = str(tmp_path / "s.db")
    code, out, err = cli_inprocess("reference", "import", "mlperf-training", str(SUMMARY), "--db", db, "--json")
    assert code == 0, err
    assert {s["complete"] for s in json.loads(out)["scores"]} == {None}
    from gpuparity.evidence.reference import describe

    assert all("[runs: unknown]" in describe(r) for r in stored(db))
    assert "[runs: incomplete (9 of 10 required runs)]" in describe(short)
    assert "[runs:" not in describe(by_model[("1xXE9680Lx8B200-SXM-180GB", "llama2_70b_lora")])


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


def test_reimport_names_rows_an_earlier_version_scored_otherwise(tmp_path):
    """A store filled before this importer read every log keeps its rows; the import says which differ."""
    import sqlite3

    db = str(tmp_path / "s.db")
    assert cli_inprocess("reference", "import", "mlperf-training", str(TREE51), "--db", db)[0] == 0
    ref_id = "mlperf-training:5.1/Dell/1xXE7745x8RTXPro6000-PCIe-96GB/retinanet"
    with sqlite3.connect(db) as c:
        (doc,) = c.execute("SELECT doc FROM reference_results WHERE ref_id = ?", (ref_id,)).fetchone()
        c.execute("UPDATE reference_results SET doc = ? WHERE ref_id = ?",
                  (json.dumps({**json.loads(doc), "result": 81.5}), ref_id))
    code, out, err = cli_inprocess("reference", "import", "mlperf-training", str(TREE51), "--db", db, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["added"] == 0 and summary["stored_differently"] == [ref_id]
    code, out, _ = cli_inprocess("reference", "import", "mlperf-training", str(TREE51), "--db", db)
    assert "1 rows are stored with another figure" in out and "retinanet" in out
