"""results/recompute.py: a document's figures are what its samples give, by run's own functions,
or it is refused naming the first disagreement (or, fixing, stored as the samples say, flagged)."""

from __future__ import annotations

import copy
import json
import math
import sqlite3
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from test_compare import main_inprocess, noisy

from gpuparity.errors import UserError
from gpuparity.results.document import validate_run
from gpuparity.results.figure import derive
from gpuparity.results.recompute import read_back, recompute_run
from gpuparity.results.schema import new_result, new_run
from gpuparity.results.work import work_of
from gpuparity.workloads.base import merge_trials

SPEC = {"id": "tiny", "fp32_tflops": 0.5, "estimated": True}


def trial(m: int, seconds: float, seed: int) -> dict:
    """One trial of a GEMM result, measured as `run` measures (samples, work, derive)."""
    r = new_result("gemm", "kernel", {"m": m, "n": m, "k": m}, "fp32")
    r["samples"] = noisy(seconds, 0.02, 15, seed)
    r["work"] = {"flop": 2.0 * m**3}
    r["summary"] = {"n": len(r["samples"]), "median": float(np.median(r["samples"]))}
    derive(r, "flop:fp32", SPEC)
    return r


def run_doc(trials: int = 3, seconds: float = 1e-3) -> dict:
    doc = new_run({"host": "h", "backend": "cpu", "spec": SPEC, "device_count": 1})
    for i, m in enumerate((256, 512)):
        doc["results"].append(merge_trials([trial(m, seconds * (1 + i), 10 * i + t) for t in range(trials)], SPEC))
    doc.update(status="complete", finished_at=doc["started_at"])
    return json.loads(json.dumps(doc))          # as it travels: JSON


def refused(doc: dict, needle: str, fix: bool = False) -> str:
    with pytest.raises(UserError) as exc:
        validate_run(doc, "doc", recompute=fix)
    message = str(exc.value)
    assert needle in message and "\n" not in message, message
    return message


def test_a_document_run_wrote_passes_unchanged():
    doc = run_doc()
    assert validate_run(copy.deepcopy(doc), "doc") == doc
    assert validate_run(copy.deepcopy(doc), "doc", recompute=True) == doc      # nothing to fix, no flag


@pytest.mark.parametrize("path, needle", [
    (("metric", "value"), "metric.value states"), (("metric", "ci_high"), "metric.ci_high states"),
    (("metric", "log_se"), "metric.log_se states"), (("trials", 1, "value"), "trial 2: value states"),
    (("trials", 0, "log_se"), "trial 1: log_se states"), (("derived", "tflops"), "derived.tflops states"),
    (("derived", "pct_peak"), "derived.pct_peak states"), (("summary", "median"), "summary.median states"),
])
def test_a_scaled_figure_is_refused_naming_it_or_recomputed(path, needle):
    doc = run_doc()
    original = copy.deepcopy(doc)
    node = doc["results"][1]
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] *= 10
    msg = refused(copy.deepcopy(doc), needle)
    assert "result 1 (gemm" in msg and "import --recompute" in msg
    fixed = validate_run(doc, "doc", recompute=True)
    r, want = fixed["results"][1], original["results"][1]
    assert r["metric"]["value"] == pytest.approx(want["metric"]["value"], rel=1e-12)
    assert r["derived"]["pct_peak"] == pytest.approx(want["derived"]["pct_peak"], rel=1e-12)
    assert "recomputed" in r["flags"] and "recomputed" not in want["flags"]
    assert fixed["recomputed"]["count"] == 1 and needle.split(" states")[0] in fixed["recomputed"]["changes"][0]
    assert "recomputed" not in fixed["results"][0]["flags"]


def test_a_key_that_does_not_match_its_params_is_refused():
    doc = run_doc()
    doc["results"][0]["params"]["layout"] = "tn"              # another case, same key
    refused(copy.deepcopy(doc), "its workload + params + dtype give")
    doc["results"][0]["params"]["m"] = 4096                   # a bigger shape, same key and work
    refused(copy.deepcopy(doc), "but its params give {flop: 5.36871e+08}", fix=True)    # never "fixed"
    doc["results"][1]["key"] = doc["results"][0]["key"]
    with pytest.raises(UserError, match="repeats the key"):
        validate_run(doc, "doc", recompute=True)


def test_bounds_hold_even_when_recomputing():
    soon = (datetime.now(timezone.utc) + timedelta(hours=12)).isoformat(timespec="seconds")
    doc = run_doc()
    doc["started_at"] = soon                                  # within the clock skew: fine
    validate_run(copy.deepcopy(doc), "doc")
    doc["started_at"] = "9999-12-31T00:00:00+00:00"
    refused(copy.deepcopy(doc), "is in the future", fix=True)
    doc = run_doc()
    doc["results"][0]["telemetry"] = {"valid": True, "mean_power_w": 1e9}
    refused(doc, "more than 1 device(s) can draw", fix=True)
    doc = run_doc()
    doc["fingerprint"]["device_count"] = 8
    doc["results"][0]["telemetry"] = {"valid": True, "mean_power_w": 8 * 1000.0}    # 8 GPUs at 1 kW
    validate_run(doc, "doc")
    for where in ("benchmark_version", "n"):
        doc = run_doc()
        if where == "n":
            doc["results"][0]["trials"][0]["n"] = 2**64
        else:
            doc[where] = -(2**63) - 1
        refused(doc, "beyond 64 bits", fix=True)


def test_trials_must_be_distinct():
    doc = run_doc(trials=1)
    r = doc["results"][0]
    first = r["trials"][0]
    r["trials"] = [dict(first, trial=t) for t in range(1, 101)]            # 100 copies of one trial
    r["samples"] = r["samples"] * 100
    refused(copy.deepcopy(doc), "hold the same samples", fix=True)
    r["trials"][1]["trial"] = 1
    refused(doc, "a trial number appears twice", fix=True)
    doc = run_doc()
    doc["results"][0]["samples"].pop()
    refused(doc, "hold 45 samples between them, but the result has 44", fix=True)


def test_percent_of_peak_past_100_needs_its_flag():
    doc = run_doc(seconds=1e-6)                 # 2*256^3 FLOP in 1 us = 33 TFLOP/s on a 0.5 TFLOP/s spec
    r = doc["results"][0]
    assert "pct_peak" not in r["derived"] and "peak_exceeded" in r["flags"]     # run flags it itself
    validate_run(copy.deepcopy(doc), "doc")
    r["flags"].remove("peak_exceeded")
    refused(copy.deepcopy(doc), "flags leave out 'peak_exceeded'")
    assert "peak_exceeded" in validate_run(doc, "doc", recompute=True)["results"][0]["flags"]


def test_a_figure_without_samples_is_refused():
    doc = run_doc()
    doc["results"][0]["samples"] = []
    doc["results"][0]["trials"] = []
    refused(doc, "comes with no raw samples", fix=True)


def test_an_older_schema_figure_must_lie_within_its_samples():
    doc = run_doc(trials=1)
    doc["schema_version"] = 1
    for r in doc["results"]:
        r.pop("trials")
    validate_run(copy.deepcopy(doc), "doc")
    doc["results"][0]["metric"]["value"] *= 10
    refused(doc, "metric.value states")


def test_a_store_row_from_an_earlier_import_is_shown_as_its_samples_say(tmp_path, capsys):
    from gpuparity.results.store import Store

    doc = run_doc()
    truth = doc["results"][0]["metric"]["value"]
    forged = copy.deepcopy(doc)
    forged["results"][0]["metric"]["value"] *= 10
    db = str(tmp_path / "s.db")
    with Store(db) as s:
        s.save_run(forged)                          # as an import without checks once stored it
    code, out, err = main_inprocess(["show", doc["run_id"], "--json", "--db", db], capsys)
    assert code == 0 and "stated figure(s) differed" in err, err
    shown = json.loads(out)["results"][0]
    assert shown["metric"]["value"] == pytest.approx(truth) and "recomputed" in shown["flags"]
    with sqlite3.connect(db) as c:                  # the stored document itself is left as it was
        (text,) = c.execute("SELECT doc FROM runs").fetchone()
    assert json.loads(text)["results"][0]["metric"]["value"] == pytest.approx(10 * truth)
    assert read_back(copy.deepcopy(doc), "x") == doc


def test_recompute_is_a_per_document_function():
    doc = run_doc()
    out = recompute_run(copy.deepcopy(doc), "stream[3]")
    assert out == doc
    bad = copy.deepcopy(doc)
    bad["results"][0]["trials"][0]["value"] = math.pi
    with pytest.raises(UserError, match=r"^stream\[3\]: result 0"):
        recompute_run(bad, "stream[3]")


# -- schema 1: one trial, by the definitions schema 1 had ---------------------------------------
def legacy_doc() -> dict:
    """A document as schema 1 wrote it: no trials, no log_se, the interval from the bootstrap of
    the median time (its summary), the peak's value in derived.peak without a kind."""
    from gpuparity.measure.stats import summarize

    doc = run_doc(trials=1)
    doc["schema_version"] = 1
    for r in doc["results"]:
        r.pop("trials")
        r.pop("flags")
        r["info"].pop("peak_kind")
        s = r["summary"] = summarize(r["samples"])
        flop = r["work"]["flop"]
        r["metric"] = {"name": "flop", "unit": "TFLOP/s", "value": flop / s["median"] / 1e12, "higher_is_better": True,
                       "ci_low": flop / s["ci_high"] / 1e12, "ci_high": flop / s["ci_low"] / 1e12}
        tflops = flop / s["median"] / 1e12
        r["derived"] = {"tflops": tflops, "pct_peak": 100.0 * tflops / SPEC["fp32_tflops"],
                        "peak": {"value": SPEC["fp32_tflops"], "unit": "TFLOP/s", "estimated": True}}
    return json.loads(json.dumps(doc))


def test_a_schema_1_document_imports_as_it_was_written():
    doc = legacy_doc()
    assert validate_run(copy.deepcopy(doc), "doc") == doc
    assert validate_run(copy.deepcopy(doc), "doc", recompute=True) == doc


@pytest.mark.parametrize("path, factor, needle", [
    (("derived", "tflops"), 1000, "derived.tflops states"), (("derived", "pct_peak"), 50, "derived.pct_peak states"),
    (("summary", "median"), 10, "summary.median states"), (("metric", "ci_low"), 0.1, "metric.ci_low states"),
    (("metric", "ci_high"), 0.5, "metric.ci_high states"), (("metric", "value"), 1.01, "metric.value states"),
])
def test_a_schema_1_document_gets_every_check(path, factor, needle):
    doc = legacy_doc()
    node = doc["results"][0]
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] *= factor
    refused(copy.deepcopy(doc), needle)
    fixed = validate_run(doc, "doc", recompute=True)["results"][0]
    assert "recomputed" in fixed["flags"]
    assert fixed["derived"]["tflops"] == pytest.approx(fixed["metric"]["value"], rel=1e-12)
    assert fixed["metric"]["ci_low"] <= fixed["metric"]["value"] <= fixed["metric"]["ci_high"]


def test_a_schema_1_peak_must_be_one_of_the_specs():
    doc = legacy_doc()
    doc["results"][0]["derived"]["peak"]["value"] = 0.05          # a peak 10x lower: % of peak 10x higher
    doc["results"][0]["derived"]["pct_peak"] *= 10
    refused(doc, "derived.pct_peak states")


# -- no figure, then no rate ----------------------------------------------------------------------
def test_a_rate_without_a_figure_is_refused_or_dropped():
    doc = run_doc(trials=1)
    r = doc["results"][0]
    r["metric"]["value"], r["trials"] = None, []
    r["derived"]["tflops"] = 1e6
    refused(copy.deepcopy(doc), "derived.tflops states 1e+06, but nothing the document holds gives it")
    fixed = validate_run(doc, "doc", recompute=True)["results"][0]
    assert "tflops" not in fixed["derived"] and "pct_peak" not in fixed["derived"] and "recomputed" in fixed["flags"]


# -- the workloads' own figures: one formula for the workload and the check ------------------------
def timed(workload: str, category: str, params: dict, work: dict, seconds: float, seed: int, peak=None,
          info=None, samples=None) -> dict:
    """One trial of a workload result as its execute makes it: samples, work, derive, its figures."""
    from gpuparity.measure.stats import summarize
    from gpuparity.results.figure import fill_workload_figures

    r = new_result(workload, category, params, params.get("dtype"))
    r["samples"] = samples or noisy(seconds, 0.02, 15, seed)
    r["summary"] = summarize(r["samples"])
    r["work"] = work
    r["info"].update(info or {})
    derive(r, peak, SPEC)
    fill_workload_figures(r)
    return r


def one_doc(results: list[dict]) -> dict:
    doc = new_run({"host": "h", "backend": "cpu", "spec": SPEC, "device_count": 1})
    doc["results"] = results
    doc.update(status="complete", finished_at=doc["started_at"])
    return json.loads(json.dumps(doc))


CTX = type("Ctx", (), {"spec": SPEC})()          # what merge_trials reads of a Context


TRAIN = {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": 0, "ffn": 0, "vocab": 256, "seq": 32, "batch": 2,
         "checkpointing": False}


def training_trial(seed: int, seconds: float = 0.02) -> dict:
    params = dict(TRAIN, dtype="fp32")
    work = work_of("training", params)
    r = timed("training", "model", params, work, seconds, seed, peak=None)
    from gpuparity.results.figure import derive_rates, fill_workload_figures, peak_kind_for

    r["info"]["peak_kind"] = peak_kind_for("flop:fp32", work)       # FLOP per token after the bar

    derive_rates(r, SPEC)
    fill_workload_figures(r)
    return r


def llm_trial(seed: int, seconds: float = 0.3) -> dict:
    params = {"model": "m", "batch": 2, "input_len": 16, "output_len": 9, "dtype": "fp32"}
    decode = noisy(seconds, 0.02, 7, seed)
    return timed("llm", "model", params, {"tokens": 2 * 8}, seconds, seed, samples=decode,
                 info={"prefill_samples": noisy(0.05, 0.03, 7, seed + 1)})


def collectives_trial(seed: int) -> dict:
    params = {"op": "all_reduce", "bytes": 4096, "ranks": 4, "nodes": 1, "dtype": "fp32"}
    return timed("collectives", "comm", params, work_of("collectives", params), 1e-4, seed,
                 peak="bytes:interconnect", info={"size_bytes": 4096, "world_size": 4})


@pytest.mark.parametrize("make, workload, field", [
    (training_trial, "training", "mfu"), (llm_trial, "llm", "ttft_s"), (llm_trial, "llm", "tpot_s"),
    (llm_trial, "llm", "output_tokens_per_s"), (collectives_trial, "collectives", "busbw_gbs"),
    (collectives_trial, "collectives", "algbw_gbs"),
])
def test_workload_figures_of_merged_trials_pass_and_a_scaled_one_is_refused(make, workload, field):
    from gpuparity.workloads.base import registry

    merged = registry()[workload].merge_trials([make(1), make(2, 0.9 * (0.02 if workload == "training" else 0.3))
                                                if workload != "collectives" else make(2)], CTX)
    doc = one_doc([merged])
    assert merged["metric"]["trials"] == 2 and merged["derived"][field]
    assert validate_run(copy.deepcopy(doc), "doc") == doc          # what `run` states, merged, passes as it is
    doc["results"][0]["derived"][field] *= 10
    refused(copy.deepcopy(doc), f"derived.{field} states")
    fixed = validate_run(doc, "doc", recompute=True)["results"][0]
    assert fixed["derived"][field] == pytest.approx(merged["derived"][field], rel=1e-12)


def test_an_llm_latency_without_its_prefill_samples_is_refused_or_dropped():
    doc = one_doc([llm_trial(3)])
    del doc["results"][0]["info"]["prefill_samples"]
    refused(copy.deepcopy(doc), "derived.ttft_s states")
    d = validate_run(doc, "doc", recompute=True)["results"][0]["derived"]
    assert "ttft_s" not in d and "e2e_s" not in d and d["tpot_s"] > 0       # TPOT is the decode samples'


def test_a_recorded_llm_run_passes_and_its_ttft_is_checked():
    import gzip
    import os

    with gzip.open(os.path.join(os.path.dirname(__file__), "data", "quick-run-cpu.json.gz"), "rt") as fh:
        doc = json.load(fh)
    doc["results"] = [r for r in doc["results"] if r["workload"] == "llm"]
    validate_run(copy.deepcopy(doc), "doc")
    doc["results"][0]["derived"]["ttft_s"] /= 10
    refused(doc, "derived.ttft_s states")


def test_weak_scaling_efficiency_is_against_the_documents_one_rank_result():
    from gpuparity.workloads.base import registry

    model = dict(TRAIN, dtype="fp32")
    results = [timed("scaling", "comm", dict(model, ranks=k, nodes=1), work_of("scaling", dict(model, ranks=k)),
                     0.02 * (1 + 0.1 * k), k) for k in (1, 2, 4)]
    registry()["scaling"].finalize(results)
    assert results[2]["derived"]["weak_scaling_efficiency"] == pytest.approx(1.1 / 1.4, rel=0.1)
    doc = one_doc(results)
    assert validate_run(copy.deepcopy(doc), "doc") == doc
    doc["results"][2]["derived"]["weak_scaling_efficiency"] *= 1.3
    refused(copy.deepcopy(doc), "derived.weak_scaling_efficiency states")
    doc["results"][2]["derived"]["weak_scaling_efficiency"] /= 1.3
    doc["results"].pop(0)                                   # no 1-rank baseline left to be against
    refused(copy.deepcopy(doc), "derived.baseline_tokens_per_s states")
    fixed = validate_run(doc, "doc", recompute=True)["results"]
    assert all("weak_scaling_efficiency" not in r["derived"] and "recomputed" in r["flags"] for r in fixed)


# -- a table is a serving point's --------------------------------------------------------------------
def test_a_table_on_a_result_that_is_not_a_serving_point_is_refused_or_dropped(tmp_path, capsys):
    from gpuparity.results.store import Store

    doc = run_doc()
    doc["results"][1]["info"]["table"] = {"title": "t", "columns": ["TFLOP/s"], "rows": [["9000"]]}
    refused(copy.deepcopy(doc), "info.table")
    db = str(tmp_path / "s.db")
    with Store(db) as s:
        s.save_run(copy.deepcopy(doc))              # as an earlier version stored it
    code, out, err = main_inprocess(["show", doc["run_id"], "--db", db], capsys)
    assert code == 0 and "9000" not in out and "info.table" in err, (out, err)
    fixed = validate_run(doc, "doc", recompute=True)["results"][1]
    assert "table" not in fixed["info"] and "recomputed" in fixed["flags"]


def test_the_work_per_unit_a_peak_kind_carries_is_its_works():
    """MFU and % of peak of a tokens/s figure rest on the FLOP per token after the peak kind's bar:
    a kind stating 10x that (a 10x MFU) is refused, or recomputed from the work."""
    from gpuparity.workloads.base import registry

    merged = registry()["training"].merge_trials([training_trial(1), training_trial(2, 0.018)], CTX)
    doc = one_doc([merged])
    base, _, per_token = merged["info"]["peak_kind"].partition("|")
    doc["results"][0]["info"]["peak_kind"] = f"{base}|{float(per_token) * 10!r}"
    refused(copy.deepcopy(doc), "info.peak_kind states")
    fixed = validate_run(doc, "doc", recompute=True)["results"][0]
    assert fixed["info"]["peak_kind"] == merged["info"]["peak_kind"]
    assert fixed["derived"]["mfu"] == pytest.approx(merged["derived"]["mfu"], rel=1e-12)
