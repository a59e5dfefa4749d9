"""MLPerf Inference v6.1 as MLCommons publishes it, on a constructed file in that layout
(tests/data/mlperf_inference_v6.1_layout.json: an object of rows keyed by index, the submission
checker's field names, no result ID, lower-case scenarios, latencies in s and ms, a " + " and an
"(x2x8) and" system, B300 / GB300 / Vera Rubin rows): every row imported, per-accelerator figures,
the checker's benchmark names, like-for-like and latency comparisons, and claims on the newest parts."""

import json
import re

import pytest

from gpuparity.errors import UserError
from gpuparity.evidence import mlperf
from gpuparity.evidence.claims import evaluate_claims
from gpuparity.evidence.reference import import_file
from gpuparity.results.store import Store
from tests.test_reference import DATA, V51, cli_inprocess, one_line_error, ref_rows

V61 = DATA / "mlperf_inference_v6.1_layout.json"
THROUGHPUT = {"Tokens/s", "Samples/s", "Queries/s", "Tasks/s"}


def raw() -> dict:
    return json.loads(V61.read_text())


def location_path(rec: dict) -> str:
    return rec["Location"].removeprefix("./")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """The v6.1-layout file imported through the CLI."""
    path = str(tmp_path_factory.mktemp("v61") / "ref.db")
    code, out, err = cli_inprocess("reference", "import", "mlperf", str(V61), "--db", path, "--json")
    assert code == 0, err
    return path, json.loads(out)


def stored(path: str) -> dict:
    """Every stored row by the Location it was read from."""
    with Store(path) as store:
        return {r["location"]: r for r in store.references()}


def listed(path: str, *args: str) -> list[dict]:
    code, out, err = cli_inprocess("reference", "list", "--db", path, "--json", "-n", "100000", *args)
    assert code == 0, err
    return json.loads(out)


def compared(path: str, a: str, b: str, *args: str) -> dict:
    code, out, err = cli_inprocess("reference", "compare", a, b, "--db", path, "--json", *args)
    assert code == 0, err
    return json.loads(out)


def test_the_fixture_is_the_published_layout():
    data = raw()
    assert isinstance(data, dict) and list(data) == [str(i) for i in range(len(data))]
    fields = {"Organization", "Availability", "Division", "SystemType", "SystemName", "Platform", "Model",
              "MlperfModel", "Scenario", "Result", "Units", "Accuracy", "number_of_nodes", "accelerator_model_name",
              "accelerators_per_node", "total_accelerators", "Location", "framework", "compliance", "version",
              "inferred", "weight_data_types", "PrivateID"}
    assert all(fields <= set(r) and not {"ID", "Public ID"} & set(r) for r in data.values())
    scenarios = {r["Scenario"] for r in data.values()}
    assert {"offline", "singlestream", "multistream"} <= scenarios
    assert {"Latency (s)", "Latency (ms)", "Tasks/s"} <= {r["Units"] for r in data.values()}
    names = {r["accelerator_model_name"] for r in data.values()}
    assert any(" + " in n for n in names) and any("(x2x8) and" in n for n in names)
    assert {"NVIDIA B300-SXM-270GB", "Nvidia B300-SXM-270GB", "NVIDIA GB300", "NVIDIA Vera Rubin"} <= names


def test_every_row_imported_and_named_by_its_location(db):
    path, summary = db
    data = raw()
    assert summary["rows"] == summary["added"] == len(data) == len(ref_rows(path)) == 38
    assert summary["unreadable"] == [] and summary["rounds"] == {"6.1": 38}
    assert summary["named_by_location"] == 38 and summary["mixed"] == 2
    assert summary["unmapped"] == {"Intel(R) Arc(TM) Pro B70": 1}
    rows = stored(path)
    assert set(rows) == {r["Location"] for r in data.values()}
    for rec in data.values():
        row = rows[rec["Location"]]
        assert row["ref_id"] == f"mlperf-inference:v6.1/{location_path(rec)}"
        system = "/".join(location_path(rec).split("/")[:4])       # division/submitter/results/system
        assert row["result_id"] == f"v6.1/{system}" and row["round"] == "6.1"
        assert row["submitter"] == rec["Organization"] and row["category"] == rec["Division"]
        assert row["system"] == rec["SystemName"] and row["suite"] == rec["SystemType"]
    code, out, _ = cli_inprocess("reference", "import", "mlperf", str(V61), "--db", path)   # again: nothing new
    assert code == 0 and "0 added" in out and "38 already stored" in out and "named by their Location: 38" in out
    system = "v6.1/closed/NVIDIA/results/B300-SXM-270GBx8_TRT"          # a result cited by its system folder
    code, out, err = cli_inprocess("reference", "show", system, "--json", "--db", path)
    assert code == 0, err
    assert len(json.loads(out)) == sum(1 for r in data.values() if r["Platform"] == "B300-SXM-270GBx8_TRT") == 8
    assert [r["accelerator"] for r in listed(path, "--unmapped")] == ["Intel(R) Arc(TM) Pro B70"]


def test_per_accelerator_is_the_result_over_total_accelerators_of_single_part_systems(db):
    rows = stored(db[0])
    for rec in raw().values():
        row = rows[rec["Location"]]
        one_part = not re.search(r" \+ | and |,", rec["accelerator_model_name"])
        expected = rec["Result"] / rec["total_accelerators"] if rec["Units"] in THROUGHPUT and one_part else None
        assert row["per_accelerator"] == (pytest.approx(expected) if expected is not None else None), rec["Location"]
        assert row["accelerators"] == rec["total_accelerators"] and row["nodes"] == rec["number_of_nodes"]
        assert row["mixed_accelerators"] == (not one_part)
        assert row["per_gpu_eligible"] == (expected is not None and rec["number_of_nodes"] == 1)


def test_benchmarks_under_the_checkers_names_with_the_label_beside(db):
    path = db[0]
    data = raw()
    rows = stored(path)
    assert {r["model"] for r in rows.values()} == {r["Model"] for r in data.values()}
    labels = {r["model"]: r["benchmark_label"] for r in rows.values() if r["benchmark_label"]}
    assert labels == {"wan-2.2-t2v-a14b": "text_to_video", "qwen3-vl-235b-a22b": "VLM",
                      "qwen3-8b-agentic": "agentic edge"}
    assert db[1]["benchmark_labels"]["text_to_video -> wan-2.2-t2v-a14b"] == 8
    assert {r["scenario"] for r in rows.values()} == {"Offline", "Server", "SingleStream", "MultiStream"}
    wan = [r for r in data.values() if r["Model"] == "wan-2.2-t2v-a14b" and r["Division"] == "closed"]
    found = listed(path, "--benchmark", "wan-2.2")
    assert sorted(r["location"] for r in found) == sorted(r["Location"] for r in wan) and len(found) == 8
    assert sorted(r["location"] for r in listed(path, "--benchmark", "text_to_video")) == \
        sorted(r["Location"] for r in wan)
    single = listed(path, "--benchmark", "wan-2.2", "--scenario", "singlestream")
    assert len(single) == sum(1 for r in wan if r["Scenario"] == "singlestream")


def test_compare_mi355x_b300_like_for_like(db):
    path = db[0]
    result = compared(path, "mi355x", "b300", "--round", "6.1")
    groups = {(g["benchmark"], g["scenario"]): g for g in result["groups"]}
    data = [r for r in raw().values() if r["Division"] == "closed" and r["Availability"] == "available"]

    def best(word: str, model: str, scenario: str) -> float:   # from the raw file: one part, 8 accelerators
        return max(r["Result"] / r["total_accelerators"] for r in data
                   if r["Model"] == model and r["Scenario"].lower() == scenario.lower()
                   and r["accelerator_model_name"].lower().startswith(word) and r["total_accelerators"] == 8)

    for model, scenario in (("gpt-oss-120b", "Offline"), ("gpt-oss-120b", "Server"), ("deepseek-r1", "Offline"),
                            ("wan-2.2-t2v-a14b", "Offline")):
        g = groups[(model, scenario)]
        ratio = best("nvidia b300", model, scenario) / best("amd instinct mi355x", model, scenario)
        assert g["ratio"] == pytest.approx(ratio) and g["round"] == "6.1" and g["accelerators"] == 8
        assert not g["lower_is_better"] and "ratio B / A" in g["metric"]
    # mxfp4 against "nvfp4, fp8 (kv cache)"; "fp4 weights, fp8 KV cache" against "nvfp4 (E2M1 ...)": one class
    assert groups[("gpt-oss-120b", "Offline")]["precision"] == groups[("deepseek-r1", "Offline")]["precision"] == "fp4"
    assert groups[("gpt-oss-120b", "Offline")]["b"]["rows"] == 2                # both spellings of B300
    assert result["left_out"] == {"open division": 1}
    code, out, _ = cli_inprocess("reference", "compare", "mi355x", "b300", "--round", "6.1", "--db", path)
    assert code == 0 and "gpt-oss-120b" in out and "deepseek-r1" in out
    assert "ratio = B / A" in out and "A/B" in out and "lower is better" in out
    assert f"{12.4 / 5.7:.3g} A/B" in out and f"{152000 / 98000:.3g}" in out
    for part in ("gb300", "vr200", "mi350p", "rtx-pro-6000-blackwell", "gb10"):
        code, _, err = cli_inprocess("reference", "compare", "mi355x", part, "--round", "6.1", "--db", path)
        assert code == 0, err


def test_latency_compared_system_against_system_with_the_direction(db):
    path = db[0]
    result = compared(path, "mi355x", "b300", "--round", "6.1")
    (g,) = [g for g in result["groups"] if g["scenario"] == "SingleStream"]
    assert g["lower_is_better"] and g["units"] == "Latency (s)" and "lower is better" in g["metric"]
    assert g["ratio"] == pytest.approx(12.4 / 5.7)        # A's seconds per video / B's best: B faster
    assert (g["a"]["value"], g["b"]["value"], g["b"]["rows"]) == (12.4, 5.7, 2)
    rows = stored(path)
    seconds = [r for r in rows.values() if r["units"] == "Latency (s)"]
    assert len(seconds) == 5 and not any(r.get("units_flag") for r in listed(path, "--benchmark", "wan-2.2")
                                         if r["units"] == "Latency (s)")
    # the one submitter publishing it in ms is marked, and never meets the seconds
    (ms,) = [r for r in listed(path, "--benchmark", "wan-2.2") if r["units"] == "Latency (ms)"]
    assert "4 of 5 submitters" in ms["units_flag"] and "latency (s)" in ms["units_flag"]
    assert any(u["scenario"] == "SingleStream" and u["side"] == "a" for u in result["unpaired"])
    # ms latencies at one accelerator each, and throughput of the agentic benchmark in Tasks/s
    edge = compared(path, "rtx-pro-4500-blackwell", "gb10")
    by = {(x["benchmark"], x["scenario"]): x for x in edge["groups"]}
    assert by[("llama3.1-8b", "SingleStream")]["ratio"] == pytest.approx(512.0 / 731.0)
    assert by[("retinanet", "MultiStream")]["b"]["inferred"] == 1
    assert by[("qwen3-8b-agentic", "Offline")]["ratio"] == pytest.approx(2.1 / 3.2)
    assert not by[("qwen3-8b-agentic", "Offline")]["lower_is_better"]


def test_mixed_systems_never_stand_for_a_part(db):
    path = db[0]
    mixed = [r for r in stored(path).values() if r["mixed_accelerators"]]
    assert len(mixed) == 2 and all(r["spec_id"] is None and r["per_accelerator"] is None for r in mixed)
    assert listed(path, "--accelerator", "h200") == []          # the H200 + MI350X system is no H200
    assert not any(r["mixed_accelerators"] for r in listed(path, "--accelerator", "mi355x", "--division", "all"))
    assert not any(r["mixed_accelerators"] for r in listed(path, "--accelerator", "mi350x"))


def test_b300_is_not_gb300(db):
    path = db[0]
    b300 = listed(path, "--accelerator", "b300")
    assert b300 and {r["spec_id"] for r in b300} == {"b300"}
    assert {r["accelerator"] for r in b300} == {"NVIDIA B300-SXM-270GB", "Nvidia B300-SXM-270GB"}
    gb300 = listed(path, "--accelerator", "gb300")
    assert gb300 and {r["accelerator"] for r in gb300} == {"NVIDIA GB300"}
    assert {r["spec_id"] for r in listed(path, "--accelerator", "Nvidia B300-SXM-270GB")} == {"b300"}
    vr = listed(path, "--accelerator", "vr200", "--status", "preview")
    assert {r["accelerator"] for r in vr} == {"NVIDIA Vera Rubin", "NVIDIA VR200"}


def test_precision_classes_by_the_weight_format(db):
    rows = listed(db[0], "--division", "all", "--status", "all")
    by_text = {r["precision"]: (r["precision_class"], r["kv_cache_precision"]) for r in rows}
    assert by_text["nvfp4, fp8 (kv cache)"] == ("fp4", "fp8")
    assert by_text["fp4 weights, fp8 kv cache"] == ("fp4", "fp8")
    assert by_text["nvfp4, fp8-kv"] == ("fp4", "fp8")
    assert by_text["nvfp4 (e2m1 values with e4m3 block scales)"] == ("fp4", None)
    assert by_text["mxfp4"] == by_text["fp4"] == by_text["nvfp4"] == ("fp4", None)
    assert all(r["precision_class"] for r in rows)           # every row names a format, so each is classed


def test_rocm_preview_line_is_a_release(db):
    rows = [r for r in stored(db[0]).values() if "7.13.0" in r["software"]]
    assert rows and all(r["versions"]["rocm"] == "7.13.0" and r["version_notes"] == [] for r in rows)
    assert all(r["rocm_line"] == "preview (TheRock)" and r["stack"] == "rocm" for r in rows)
    assert {r["rocm_line"] for r in stored(db[0]).values() if r["versions"].get("rocm", "").startswith("7.2")} == \
        {"production"}
    from gpuparity.evidence.reference import describe, marks_of

    assert "ROCm preview line (TheRock)" in marks_of(rows[0]) and "rocm 7.13.0" in describe(rows[0])


CLAIMS = """
claims:
  - id: b300-gpt-oss
    text: B300 delivers at least 1.5x the per-GPU throughput of MI355X on gpt-oss-120b.
    kind: mlperf
    subject: {gpu: b300}
    baseline: {gpu: mi355x}
    expected: {min: 1.5}
    tolerance: 0
    mlperf: {model: gpt-oss-120b, scenario: Offline, round: "6.1"}
  - id: b300-video
    text: B300 generates a Wan 2.2 video at least twice as fast as MI355X.
    kind: mlperf
    subject: {gpu: B300}
    baseline: {gpu: mi355x}
    expected: {min: 2}
    tolerance: 0
    mlperf: {model: text_to_video, scenario: SingleStream}
  - id: mi355x-video
    text: MI355X makes videos faster than B300.
    kind: mlperf
    subject: {gpu: mi355x}
    baseline: {gpu: b300}
    expected: {direction: higher}
    mlperf: {model: wan-2.2-t2v-a14b, scenario: SingleStream}
  - id: gb300-b300
    text: GB300 beats B300 per GPU on gpt-oss-120b.
    kind: mlperf
    subject: {gpu: gb300}
    baseline: {gpu: b300}
    expected: {direction: higher}
    mlperf: {model: gpt-oss-120b, scenario: Offline}
  - id: vera-rubin
    text: Vera Rubin doubles B300 on gpt-oss-120b.
    kind: [mlperf, spec]
    subject: {gpu: vera rubin}
    baseline: {gpu: b300}
    expected: {min: 2}
    spec: {field: memory_bw_tbs}
    mlperf: {model: gpt-oss-120b, scenario: Offline, status: preview}
"""


def test_claims_naming_the_newest_parts_are_decided_from_the_file(tmp_path):
    path = str(tmp_path / "ref.db")
    with Store(path) as store:
        import_file(store, "mlperf", V51)          # an older round too: a claim naming none is checked in each
        import_file(store, "mlperf", V61)
    claims = tmp_path / "new.yaml"
    claims.write_text(CLAIMS)
    with Store(path) as store:
        out = {c["id"]: c for c in evaluate_claims(store, claims)}
    gpt = out["b300-gpt-oss"]
    assert gpt["verdict"] == "supported" and f"{152000 / 98000:.3g}" in gpt["reasoning"]
    assert {(r["side"], r["round"]) for r in gpt["rows"]} == {("subject", "6.1"), ("baseline", "6.1")}
    video = out["b300-video"]                     # the display label finds the benchmark; latency, A / B
    assert video["verdict"] == "supported" and f"{12.4 / 5.7:.3g}" in video["reasoning"]
    assert "lower is better" in video["reasoning"] and "round 6.1" in video["reasoning"]
    cited = [r for r in video["rows"] if r["units"].startswith("Latency (s)")]
    assert [(r["side"], r["value"]) for r in cited] == [("subject", 5.7), ("subject", 6.3), ("baseline", 12.4)]
    assert "whole system, lower is better" in cited[0]["units"]
    assert out["mi355x-video"]["verdict"] == "contradicted"
    # GB300's single-node rows have 4 GPUs, B300's 8: no like-for-like pair, never a GB300 row as B300
    gb = out["gb300-b300"]
    assert gb["verdict"] == "untested" and "no like-for-like pair" in gb["reasoning"]
    assert {r["spec_id"] for r in gb["rows"]} == {"gb300", "b300"}
    # Vera Rubin: the spec data decides (22 / 8 TB/s); its preview rows meet no preview B300 row
    vr = out["vera-rubin"]
    assert vr["verdict"] == "supported"
    assert any(e["summary"].startswith("memory_bw_tbs ratio vr200 22 / b300 8: 2.75") for e in vr["evidence"])
    assert any(e.get("missing") and e["kind"] == "mlperf" for e in vr["evidence"])


def test_an_array_of_the_same_rows_reads_the_same(tmp_path):
    recs = list(raw().values())
    as_array = tmp_path / "array.json"
    as_array.write_text(json.dumps(recs))
    a, _ = mlperf.parse_rows(mlperf.load_file(as_array))
    b, _ = mlperf.parse_rows(mlperf.load_file(V61))
    assert [r["ref_id"] for r in a] == [r["ref_id"] for r in b] and a == b
    keyed = {f"r{i}": r for i, r in enumerate(recs)}       # keyed otherwise: read in file order
    assert [r["ref_id"] for r in mlperf.parse_rows(keyed)[0]] == [r["ref_id"] for r in b]
    shuffled = {str(i): recs[i] for i in reversed(range(len(recs)))}     # keyed by index: index order
    assert [r["ref_id"] for r in mlperf.parse_rows(shuffled)[0]] == [r["ref_id"] for r in b]


def test_unknown_layouts_refused_naming_the_fields_missed(tmp_path):
    db = str(tmp_path / "s.db")
    assert cli_inprocess("reference", "import", "mlperf", str(V61), "--db", db)[0] == 0
    before = ref_rows(db)
    recs = list(raw().values())
    renamed = [{("Benchmark" if k == "Model" else k): v for k, v in r.items() if k != "MlperfModel"} for r in recs]
    no_name = [{k: v for k, v in r.items() if k != "Location"} for r in recs]
    for body, words in ((renamed, ("Model",)), (no_name, ("ID or Location",)),
                        ([{"foo": 1, "bar": 2}], ("Organization (or Submitter)", "Result (or Performance_Result)")),
                        ({"0": {"a": 1}, "1": {"b": 2}}, ("Organization", "ID or Location")),
                        ({"0": {"a": 1}, "meta": "x"}, ("top level is not an array or an object of rows",)),
                        ({"rows": recs, "version": "v6.1"}, ("top level is not an array or an object of rows",))):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(body))
        for strict in ((), ("--strict",)):
            code, _, err = cli_inprocess("reference", "import", "mlperf", str(path), "--db", db, *strict)
            assert one_line_error(code, err) and all(w in err for w in words), err
    assert ref_rows(db) == before


def test_rows_without_a_name_or_repeated_are_listed(tmp_path):
    data = raw()
    data["0"] = {k: v for k, v in data["0"].items() if k != "Location"}   # others have one: this row cannot be named
    data["38"] = dict(data["5"], Result=1.0)                              # the same Location again
    data["39"] = dict(data["6"], Scenario="Offline ")                     # scenario written with a space: the same
    rows, bad = mlperf.parse_rows(data)
    assert len(rows) == 37 and [(b["row"], b["key"]) for b in bad] == [(1, "0"), (39, "38"), (40, "39")]
    assert "no ID and no Location" in bad[0]["reason"] and "repeats row 6 (same Location)" in bad[1]["reason"]
    with pytest.raises(UserError, match=r"row 1 \(key '0'\): no ID and no Location"):
        mlperf.parse_rows(data, strict=True)


@pytest.mark.parametrize("model, mlperf_model, benchmark, label", [
    ("wan-2.2-t2v-a14b", "text_to_video", "wan-2.2-t2v-a14b", "text_to_video"),   # a display label beside it
    ("qwen3-vl-235b-a22b", "VLM", "qwen3-vl-235b-a22b", "VLM"),
    ("qwen3-8b-agentic", "agentic edge", "qwen3-8b-agentic", "agentic edge"),
    ("llama2-70b", "llama2-70b-99", "llama2-70b-99", ""),        # older checker summaries: the accuracy target
    ("llama2-70b-99.9", "llama2-70b", "llama2-70b-99.9", ""),
    ("gpt-oss-120b", "gpt-oss-120b", "gpt-oss-120b", ""),
])
def test_the_benchmark_is_the_checkers_name(model, mlperf_model, benchmark, label):
    assert mlperf.benchmark_names(model, mlperf_model) == (benchmark, label)
