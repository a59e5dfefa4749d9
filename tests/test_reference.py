"""MLPerf Inference summary import: the real v5.1 file, idempotent re-import, bad rows and files."""

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from gpuparity.analysis import mlperf
from gpuparity.analysis.reference import aggregate, import_file, per_gpu_rows
from gpuparity.errors import UserError
from gpuparity.results.store import Store

V51 = Path(__file__).parent / "data" / "mlperf_inference_v5.1_summary_results.json"


def records():
    return json.loads(V51.read_text())


def ref_count(db) -> int:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT COUNT(*) FROM reference_results").fetchone()[0]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The real v5.1 file imported once through the CLI, plus the import summary."""
    from tests.conftest import run_cli

    db = str(tmp_path_factory.mktemp("ref") / "ref.db")
    p = run_cli("reference", "import", "mlperf", str(V51), "--db", db, "--json")
    assert p.returncode == 0, p.stderr
    return db, json.loads(p.stdout)


def test_import_stores_every_row_and_is_idempotent(imported, cli):
    db, summary = imported
    assert summary["rows"] == summary["added"] == len(records()) == ref_count(db)
    assert summary["categories"] == {"closed": 609, "open": 839}
    again = cli("reference", "import", "mlperf", str(V51), "--db", db)
    assert again.returncode == 0, again.stderr
    assert "0 added" in again.stdout and f"{len(records())} already stored" in again.stdout
    assert ref_count(db) == len(records())


def test_unknown_accelerators_listed_not_guessed(imported, cli):
    db, summary = imported
    # H200 NVL is not the SXM part the spec row describes: kept raw, listed as unmapped.
    assert "NVIDIA H200-NVL-141GB" in summary["unmapped"]
    assert not any("MI325X" in name or "B200-SXM" in name for name in summary["unmapped"])
    p = cli("reference", "list", "--unmapped", "--json", "-n", "10000", "--db", db)
    rows = json.loads(p.stdout)
    assert len(rows) == sum(summary["unmapped"].values())
    assert all(r["spec_id"] is None and r["accelerator"] for r in rows)


def test_list_and_show(imported, cli):
    db, _ = imported
    p = cli("reference", "list", "--model", "llama2-70b-99", "--spec", "MI325X", "--scenario", "offline",
            "--category", "closed", "--json", "--db", db)
    rows = json.loads(p.stdout)
    assert rows and all(r["spec_id"] == "mi325x" and r["model"] == "llama2-70b-99" for r in rows)
    table = cli("reference", "list", "--model", "llama2-70b", "--spec", "h200", "--db", db)
    assert table.returncode == 0 and "5.1-0026" in table.stdout and "not verified by MLCommons" in table.stdout
    show = cli("reference", "show", "5.1-0002", "--json", "--db", db)
    shown = json.loads(show.stdout)
    assert {r["model"] for r in shown} >= {"llama2-70b-99", "mixtral-8x7b"}
    assert cli("reference", "show", "5.1-9999", "--db", db).returncode == 2


def test_row_fields_from_the_real_file():
    rows = {r["ref_id"]: r for r in mlperf.parse_rows(records())}
    raw = next(r for r in records() if r["ID"] == "5.1-0002" and r["Model"] == "llama2-70b-99"
               and r["Scenario"] == "Offline")
    row = rows["mlperf-inference:5.1-0002/llama2-70b-99/Offline"]
    assert row["spec_id"] == "mi325x" and row["category"] == "closed" and row["precision"] == "fp8"
    assert row["accelerators"] == raw["a#"] * raw["Nodes"]
    assert row["per_accelerator"] == pytest.approx(raw["Performance_Result"] / row["accelerators"])
    assert row["per_accelerator_derived"] and "not verified by MLCommons" in row["note"]
    assert row["versions"]["rocm"] == "6.4.1" and row["versions"]["vllm"].startswith("0.9.0")
    assert row["stack"] == "rocm"
    virtual = next(r for r in rows.values() if (r["accelerator"] or "").startswith("Virtualized"))
    assert virtual["spec_id"] == "h200-sxm"
    mixed = [r for r in rows.values() if r["mixed_accelerators"]]
    assert mixed and all(r["spec_id"] is None and r["per_accelerator"] is None for r in mixed)
    multi = [r for r in rows.values() if r["nodes"] > 1 and r["per_accelerator"] is not None]
    assert multi and not any(r["per_gpu_eligible"] for r in multi)
    latency = [r for r in rows.values() if r["units"].startswith("Latency")]
    assert latency and all(r["per_accelerator"] is None for r in latency)


def test_per_gpu_rows_keep_divisions_apart():
    rows = mlperf.parse_rows(records())
    closed = per_gpu_rows(rows, "mi355x", "llama2-70b-99", "Offline", "closed")
    opened = per_gpu_rows(rows, "mi355x", "llama2-70b-99", "Offline", "open")
    assert closed == [] and opened  # the v5.1 MI355X results are open division only
    assert all(r["nodes"] == 1 for r in opened)
    h100 = per_gpu_rows(rows, "h100-sxm", "llama2-70b-99", "Offline", "closed")
    assert h100 == []  # only multi-node H100 llama2-70b rows in v5.1
    values = [r["per_accelerator"] for r in per_gpu_rows(rows, "h200-sxm", "llama2-70b-99", "Offline", "closed")]
    assert aggregate(per_gpu_rows(rows, "h200-sxm", "llama2-70b-99", "Offline", "closed")) == max(values)


@pytest.mark.parametrize("text, spec_id, mixed", [
    ("AMD Instinct MI300X-NPS1-SPX-192GB-750W", "mi300x", False),
    ("Virtualized NVIDIA H200-SXM-141GB", "h200-sxm", False),
    ("NVIDIA H100-NVL-94GB", None, False),
    ("NVIDIA GB300", None, False),
    ("AMD Instinct MI325X 256GB HBM3E (x16), AMD Instinct MI300X 192GB HBM3 (x8)", None, True),
    ("NVIDIA B200-SXM-180GB (x8), NVIDIA B200-SXM-180GB (x8)", "b200", False),
])
def test_accelerator_names(text, spec_id, mixed):
    got = mlperf.map_accelerator(text)
    assert (got["spec_id"], got["mixed"]) == (spec_id, mixed)


@pytest.mark.parametrize("text, expected", [
    ("TensorRT 10.11, CUDA 12.9", {"tensorrt": "10.11", "cuda": "12.9"}),
    ("TensorRT-LLM 0.21.0, CUDA 12.9", {"tensorrt_llm": "0.21.0", "cuda": "12.9"}),
    ("vLLM 0.9.0.2.dev108+g71faa1880.d20250730.rocm641, Pytorch 2.7.0+gitf717b2a, ROCm 6.4.1.60401-83~22.04",
     {"vllm": "0.9.0.2.dev108", "pytorch": "2.7.0", "rocm": "6.4.1"}),
    ("vLLM 0.9.1.dev2+g790cf6584.d20250519.rocm650, Pytorch 2.8.0a0+git37f92bb",
     {"vllm": "0.9.1.dev2", "pytorch": "2.8.0a0", "rocm": "6.5.0"}),
    ("SGLang v0.4.9", {"sglang": "0.4.9"}),
    ("tflite vmaster", {}),
])
def test_software_versions(text, expected):
    assert mlperf.parse_software(text) == expected


def test_earlier_round_shape():
    rec = dict(records()[0], ID="v4.1-0001", version="", **{"a#": "8", "Nodes": "1"})
    row = mlperf.parse_rows([rec])[0]
    assert row["round"] == "4.1" and row["ref_id"].startswith("mlperf-inference:v4.1-0001/")
    assert row["accelerators"] == 8


def test_gzip_accepted(tmp_path):
    gz = tmp_path / "summary.json.gz"
    with open(V51, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    with Store(str(tmp_path / "g.db")) as store:
        assert import_file(store, "mlperf", gz)["added"] == len(records())


def test_bad_row_names_it_and_stores_nothing(tmp_path, cli):
    db = str(tmp_path / "s.db")
    first = tmp_path / "first.json"
    first.write_text(json.dumps(records()[:10]))
    assert cli("reference", "import", "mlperf", str(first), "--db", db).returncode == 0
    recs = records()
    recs[98]["Performance_Result"] = "fast"  # row 99, ID 5.1-0017
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(recs))
    p = cli("reference", "import", "mlperf", str(bad), "--db", db)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "row 99 (ID 5.1-0017): field 'Performance_Result' is not a number" in p.stderr
    assert ref_count(db) == 10


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r.pop("Model"), "field 'Model' is missing"),
    (lambda r: r.update({"a#": "eight"}), "field 'a#' is not a whole number"),
    (lambda r: r.update({"Nodes": 0}), "field 'Nodes' is less than 1"),
    (lambda r: r.update({"Performance_Result": True}), "field 'Performance_Result' is not a number"),
])
def test_bad_fields(mutate, message):
    recs = records()[:3]
    mutate(recs[2])
    with pytest.raises(UserError, match=rf"row 3 \(ID 5\.1-\d+\): {message}"):
        mlperf.parse_rows(recs)


def test_bad_files(tmp_path, cli):
    db = str(tmp_path / "s.db")
    cases = {
        "notjson.json": (b"{not json", "not JSON"),
        "object.json": (b'{"ID": "5.1-0001"}', "top level is not an array"),
        "broken.json.gz": (b"not gzip at all", "cannot read"),
    }
    with Store(db) as store:
        for name, (data, message) in cases.items():
            (tmp_path / name).write_bytes(data)
            with pytest.raises(UserError, match=message):
                import_file(store, "mlperf", tmp_path / name)
        with pytest.raises(UserError, match="no such file"):
            import_file(store, "mlperf", tmp_path / "missing.json")
        with pytest.raises(UserError, match="unknown reference format"):
            import_file(store, "nosuch", V51)
    p = cli("reference", "import", "mlperf", str(tmp_path / "notjson.json"), "--db", db)
    assert p.returncode == 2 and p.stderr.startswith("error:") and "Traceback" not in p.stderr
    assert ref_count(db) == 0
