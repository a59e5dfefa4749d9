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
    doc["results"][0]["params"]["m"] = 4096                   # a bigger shape, same key
    refused(copy.deepcopy(doc), "its workload + params + dtype give")
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
