"""The comparison rules (evidence/rules) on constructed rows, one rule at a time: division,
availability, precision class, scale, product variants, distinct runs, rounds, units, the
inferred flag and driver versions in the stack field; and the CLI's rules line and empty store."""

import json

import pytest

from gpuparity.errors import UserError
from gpuparity.evidence import mlperf
from gpuparity.evidence.rules import Rules, annotate, compare_groups
from gpuparity.results.store import Store
from tests.test_reference import cli_inprocess, one_line_error

BASE = {"Submitter": "S", "Category": "closed", "System": "box", "Model": "llama2-70b-99", "Scenario": "Offline",
        "Performance_Units": "Tokens/s", "Nodes": 1, "Availability": "available", "weight_data_types": "fp8",
        "version": "v5.1", "Software": "vLLM 0.9"}
MI325X, H200, CTS = "AMD Instinct MI325X 256GB HBM3e", "NVIDIA H200-SXM-141GB", "NVIDIA H200-SXM-141GB-CTS"
_ids = iter(range(1, 10_000))


def row(accelerator: str, result: float, n: int = 8, **fields) -> dict:
    """A summary record as MLPerf writes it, read by the importer, with the rules' facts."""
    rec = {**BASE, "ID": f"5.1-{next(_ids):04d}", "Accelerator": accelerator, "a#": n,
           "Performance_Result": result, **fields}
    return annotate(mlperf.parse_row(rec, 1))


def pair(rows, rules: Rules | None = None, a="mi325x", b="h200-sxm", statistic="best") -> list[dict]:
    return compare_groups(rows, a, b, rules or Rules(), statistic)["groups"]


def test_closed_by_default_and_divisions_never_mixed():
    rows = [row(MI325X, 8000), row(H200, 9600, Category="open")]
    assert pair(rows) == []
    assert pair(rows, Rules.make(division="all")) == []          # widening never mixes divisions
    rows.append(row(MI325X, 7200, Category="open"))
    (g,) = pair(rows, Rules.make(division="open"))
    assert g["division"] == "open" and g["ratio"] == pytest.approx(9600 / 7200)
    assert [x["division"] for x in pair(rows + [row(H200, 8800)], Rules.make(division="all"))] == ["closed", "open"]


def test_available_systems_by_default():
    rows = [row(MI325X, 8000), row(H200, 9600, Availability="preview"), row(H200, 8800, Availability="")]
    result = compare_groups(rows, "mi325x", "h200-sxm", Rules())
    assert result["groups"] == [] and result["left_out"] == {"preview availability": 1, "unknown availability": 1}
    (g,) = pair(rows, Rules.make(status="all"))
    assert g["ratio"] == pytest.approx(9600 / 8000)
    assert pair(rows, Rules.make(status="preview")) == []                 # A has no preview row
    assert pair([row(MI325X, 8000, Availability="Available on-premise"), row(H200, 9000)])  # training wording


def test_same_precision_class_unless_asked():
    rows = [row(MI325X, 8000, weight_data_types="fp8"), row(H200, 16000, weight_data_types="mxfp4"),
            row(H200, 9000, weight_data_types="UNSET")]
    result = compare_groups(rows, "mi325x", "h200-sxm", Rules())
    assert result["groups"] == [] and result["left_out"] == {"no precision published": 1}
    assert {(u["side"], u["precision"]) for u in result["unpaired"]} == {("a", "fp8"), ("b", "fp4")}
    (g,) = pair(rows, Rules.make(precision="any"))
    assert g["precision"] == "any" and g["ratio"] == pytest.approx(16000 / 8000)
    assert g["a"]["precision"] == ["fp8"] and g["b"]["precision"] == ["-", "fp4"]
    rows.append(row(H200, 8800, weight_data_types="FP8"))
    (g,) = pair(rows)
    assert g["precision"] == "fp8" and g["ratio"] == pytest.approx(8800 / 8000)
    (g,) = pair(rows + [row(MI325X, 10000, weight_data_types="nvfp4")], Rules.make(precision="MXFP4"))
    assert g["precision"] == "fp4" and g["ratio"] == pytest.approx(16000 / 10000)   # MXFP4 and NVFP4: one class


def test_custom_thermal_variant_is_its_own_product():
    rows = [row(MI325X, 8000), row(H200, 8800), row(CTS, 9600)]
    assert rows[2]["spec_id"] is None and rows[2]["base_spec_id"] == "h200-sxm" and "CTS" in rows[2]["variant"]
    (g,) = pair(rows)
    assert g["b"]["best"] == rows[1]["result_id"] and g["b"]["rows"] == 1
    (g,) = pair(rows, Rules.make(pool_variants=True))
    assert g["b"]["best"] == rows[2]["result_id"] and g["b"]["variants"] == [rows[2]["variant"]]
    assert pair([rows[0], rows[2]]) == []
    nvl = row("NVIDIA H200-NVL-141GB", 9000)          # the NVL card has its own datasheet row: its own part
    assert (nvl["spec_id"], nvl["base_spec_id"], nvl["variant"]) == ("h200-nvl", None, None)


def test_like_scale_per_accelerator():
    rows = [row(MI325X, 2000, n=1), row(H200, 8800 * 8, n=8)]
    result = compare_groups(rows, "mi325x", "h200-sxm", Rules())
    assert result["groups"] == [] and {u["accelerators"] for u in result["unpaired"]} == {1, 8}
    (g,) = pair(rows, Rules.make(scale="any"))
    assert g["accelerators"] is None and (g["a"]["scale"], g["b"]["scale"]) == ([1], [8])
    assert g["ratio"] == pytest.approx(8800 / 2000)
    rows.append(row(MI325X, 8000 * 8, n=8))
    (g,) = pair(rows)
    assert g["accelerators"] == 8 and g["ratio"] == pytest.approx(8800 / 8000)
    multi = row(H200, 2 * 8 * 9999, n=8, Nodes=2)                 # two nodes: no per-accelerator figure
    (g,) = pair(rows + [multi])
    assert g["b"]["rows"] == 1


def test_one_row_per_distinct_run():
    same = dict(System="twin box", Submitter="T")
    rows = [row(MI325X, 8000), row(H200, 8000, **same), row(H200, 8000, **same), row(H200, 9000),
            row(H200, 9600)]
    result = compare_groups(rows, "mi325x", "h200-sxm", Rules(), "median")
    (g,) = result["groups"]
    assert g["b"]["rows"] == 3 and result["repeats"] == 1
    assert g["b"]["value"] == 9000 / 8            # counted twice, the repeat would make the median 8000 / 8
    kept = next(r for r in g["_rows"]["b"] if r["system"] == "twin box")
    assert kept["result_id"] == rows[1]["result_id"] and kept["also_ids"] == [rows[2]["result_id"]]


def test_rounds_never_mixed():
    rows = [row(MI325X, 8000, version="v5.0"), row(H200, 9000)]
    assert pair(rows) == []
    (g,) = pair(rows + [row(MI325X, 8100)])
    assert g["round"] == "5.1"


def test_training_times_compare_at_equal_counts_b_over_a():
    def t(spec, minutes, n=8, **fields):
        return annotate({"ref_id": f"t:{next(_ids)}", "source": "mlperf-training", "result_id": f"S/{spec}{n}",
                         "round": "5.1", "submitter": "S", "system": spec, "category": "closed",
                         "availability": "Available on-premise", "model": "llama2_70b_lora", "scenario": "time-to-train",
                         "accelerator": spec, "accelerators": n, "nodes": 1, "result": minutes,
                         "time_to_train_min": minutes, "units": "minutes", **fields})
    rows = [t("AMD Instinct MI325X", 20.0), t("NVIDIA H200-SXM-141GB", 25.0), t("NVIDIA H200-SXM-141GB", 5.0, n=64)]
    (g,) = pair(rows)
    assert g["accelerators"] == 8 and g["ratio"] == pytest.approx(20 / 25)      # A's time / B's: B slower
    assert pair(rows, Rules.make(precision="fp8", scale="any")) == [g]            # no precision, counts always equal


def test_units_flagged_and_compared_under_the_benchmarks_metric():
    rows = [row(MI325X, 8000, Model="llama3.1-8b", Scenario="Interactive"),
            row(H200, 8800, Model="llama3.1-8b", Scenario="Interactive", Performance_Units="Queries/s")]
    assert rows[0]["units_flag"] is None and "tokens/s" in rows[1]["units_flag"]
    (g,) = pair(rows)
    assert g["units"] == "Tokens/s" and any("likely wrong" in f for f in g["b"]["flags"])
    assert row(MI325X, 10, Model="resnet", Scenario="Server", Performance_Units="Queries/s")["units_flag"] is None
    assert row(MI325X, 10, Model="resnet", Scenario="Server", Performance_Units="Samples/s")["units_flag"]


def test_inferred_flag_kept_and_shown():
    r = row(MI325X, 8000, inferred=1)
    assert r["inferred"] is True and row(MI325X, 8000, inferred=0)["inferred"] is False
    from gpuparity.evidence.reference import describe

    assert "inferred by MLPerf" in describe(r)
    with pytest.raises(UserError, match="not a 0/1 flag"):
        row(MI325X, 1, inferred="maybe")


@pytest.mark.parametrize("software, rocm, note", [
    ("Mango LLMBoost AI Enterprise Platform, ROCm 6.12.12", None, "rocm 6.12.12"),
    ("vLLM 0.9, ROCm 6.4.1", "6.4.1", None),
    ("ROCm 7.0.0", "7.0.0", None),
    ("PyTorch 2.9.0, ROCm 7.13.0", "7.13.0", None),         # TheRock's preview line (7.9 and later): a release
    ("vLLM 0.11.1, ROCm 7.9.0rc1", "7.9.0", None),
    ("amdgpu ROCm 30.10.1", None, "rocm 30.10.1"),          # the driver's numbering since ROCm 7.0
])
def test_driver_version_in_the_stack_field_is_flagged(software, rocm, note):
    r = row(MI325X, 8000, Software=software)
    assert r["versions"].get("rocm") == rocm and r["stack"] == "rocm"
    assert (note in " ".join(r["version_notes"])) if note else r["version_notes"] == []
    cuda = row(H200, 8000, Software="TensorRT 10.11, CUDA 580.65")
    assert "cuda" not in cuda["versions"] and "not a cuda release" in cuda["version_notes"][0]


def test_rules_options_checked():
    for kwargs, message in (({"division": "secret"}, "--division"), ({"status": "soon"}, "--status"),
                            ({"precision": "fp3"}, "--precision"), ({"scale": "big"}, "--scale")):
        with pytest.raises(UserError, match=message):
            Rules.make(**kwargs)
    assert Rules.make(precision="bf16").precision == "fp16"
    assert "closed division, available systems, same precision class" in Rules().header()


def test_cli_rules_line_options_and_empty_store(tmp_path):
    db = str(tmp_path / "s.db")
    for args in (("list",), ("compare", "mi325x", "h200"), ("list", "--source", "mlperf-training")):
        code, _, err = cli_inprocess("reference", *args, "--db", db)
        assert one_line_error(code, err) and "nothing is imported yet" in err and "reference import mlperf" in err
    rows = [row(MI325X, 8000), row(H200, 8800), row(CTS, 9600), row(H200, 12000, Category="open")]
    with Store(db) as store:
        store.save_references(rows)
    code, out, err = cli_inprocess("reference", "compare", "mi325x", "h200", "--db", db)
    assert code == 0, err
    assert "rules: closed division, available systems, same precision class, same accelerator count" in out
    assert "ratio = B / A" in out and "1.1" in out
    code, out, _ = cli_inprocess("reference", "compare", "mi325x", "h200", "--db", db, "--json", "--pool-variants")
    assert json.loads(out)["groups"][0]["ratio"] == pytest.approx(1.2)
    code, _, err = cli_inprocess("reference", "compare", "mi325x", "h200", "--db", db, "--division", "secret")
    assert one_line_error(code, err) and "--division" in err
    code, out, _ = cli_inprocess("reference", "list", "--db", db)
    assert "1 open division" in out and "--division all" in out
    code, out, _ = cli_inprocess("reference", "list", "--db", db, "--json", "--division", "all")
    assert len(json.loads(out)) == 4


@pytest.mark.parametrize("text, weights, kv", [
    ("fp4", "fp4", None),
    ("nvfp4, fp8 (kv cache)", "fp4", "fp8"),
    ("fp4 weights, fp8 KV cache", "fp4", "fp8"),
    ("nvfp4, fp8-kv", "fp4", "fp8"),
    ("nvfp4 (E2M1 with E4M3 block scales, 16 values a block)", "fp4", None),
    ("NVFP4 (E2M1)", "fp4", None),
    ("e2m1", "fp4", None),
    ("mxfp4 with e8m0 scales", "fp4", None),
    ("nvfp4 (kv cache fp8)", "fp4", "fp8"),
    ("fp4 weights, fp8 activations", "fp4", None),
    ("bf16, fp8, fp4", "fp16+fp4+fp8", None),                 # three weight formats, none said to be the KV cache
    ("{'clip1': 'fp16', 'clip2': 'fp16', 'unet': 'fp8', 'vae': 'int8'}", "fp16+fp8+int8", None),
    ("fp8 kv cache", None, "fp8"),
    ("UNSET", None, None),
    ("fp64", None, None),
    ("nvfp4, int2", None, None),
])
def test_precision_class_by_the_weight_format(text, weights, kv):
    from gpuparity.evidence.rules import precision_class, precision_parts

    assert precision_parts(text) == (weights, kv) and precision_class(text) == weights


def test_one_weight_format_in_any_wording_compares():
    rows = [row(MI325X, 8000, weight_data_types="mxfp4"), row(H200, 8800, weight_data_types="nvfp4, fp8 (kv cache)"),
            row(H200, 9600, weight_data_types="nvfp4 (E2M1 ...)")]
    (g,) = pair(rows)
    assert g["precision"] == "fp4" and g["b"]["rows"] == 2 and g["ratio"] == pytest.approx(9600 / 8000)
    assert rows[1]["kv_cache_precision"] == "fp8" and rows[2]["kv_cache_precision"] is None


def test_latency_compares_whole_systems_a_over_b():
    stream = dict(Model="retinanet", Scenario="SingleStream", Performance_Units="Latency (ms)", weight_data_types="int8")
    rows = [row(MI325X, 2.0, n=1, **stream), row(H200, 1.6, n=1, **stream), row(H200, 1.2, n=2, **stream),
            row(H200, 0.9, n=1, **dict(stream, Performance_Units="Latency (s)"))]
    result = compare_groups(rows, "mi325x", "h200-sxm", Rules.make(scale="any"))
    (g,) = result["groups"]                   # equal counts always; seconds never meet milliseconds
    assert g["accelerators"] == 1 and g["lower_is_better"] and g["ratio"] == pytest.approx(2.0 / 1.6)
    assert g["field"] == "result" and "lower is better" in g["metric"] and g["b"]["best"] == rows[1]["result_id"]
    # B's 2-accelerator system and its row in seconds stand alone
    assert sorted((u["side"], u["accelerators"], u["lower_is_better"]) for u in result["unpaired"]) == \
        [("b", 1, True), ("b", 2, True)]
    median = compare_groups(rows[:2] + [row(H200, 2.4, n=1, **stream)], "mi325x", "h200-sxm", Rules(), "median")
    assert median["groups"][0]["ratio"] == pytest.approx(2.0 / 2.0)
    zero = compare_groups([row(MI325X, 0.0, n=1, **stream), rows[1]], "mi325x", "h200-sxm", Rules())
    assert zero["groups"] == [] and zero["left_out"] == {"results of zero": 1}


def test_latency_units_believed_where_submitters_agree():
    from gpuparity.evidence.rules import mark_latency_units

    video = dict(Model="wan-2.2-t2v-a14b", Scenario="SingleStream", weight_data_types="bf16")
    seconds = [row(MI325X, 12.4, Submitter=s, Performance_Units="Latency (s)", **video) for s in "ABC"]
    assert not any(r["units_flag"] for r in mark_latency_units(seconds))     # every submitter: seconds
    ms = row(H200, 6100.0, Submitter="D", Performance_Units="Latency (ms)", **video)
    mark_latency_units(seconds + [ms])
    assert "3 of 4 submitters" in ms["units_flag"] and not any(r["units_flag"] for r in seconds)
    tie = [row(MI325X, 12.4, Submitter="A", Performance_Units="Latency (s)", **video),
           row(H200, 6100.0, Submitter="B", Performance_Units="Latency (ms)", **video)]
    assert all("disagree" in r["units_flag"] for r in mark_latency_units(tie))
    assert row(MI325X, 10, Model="retinanet", Scenario="SingleStream", Performance_Units="Tokens/s")["units_flag"]
