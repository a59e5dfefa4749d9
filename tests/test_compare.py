"""compare: verdicts on sample sets with a known truth, pooling, normalisation, serving, CLI."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from gpuparity import SCHEMA_VERSION
from gpuparity.comparison.compare import compare_runs, compare_sides
from gpuparity.comparison.envelope import envelope as pareto
from gpuparity.comparison.sides import side_from_runs, side_from_store
from gpuparity.comparison.verdict import verdict
from gpuparity.measure.stats import log_median_se
from gpuparity.platform.prices import PriceBook
from gpuparity.platform.specs import all_specs
from gpuparity.results.figure import combine
from gpuparity.results.schema import new_result
from gpuparity.results.store import Store


# -- synthetic run documents (also used by the trend, report and frame tests) ------------------
def make_result(workload: str, params: dict, samples, *, dtype: str | None = "bf16", unit: str = "TFLOP/s",
                category: str = "kernel", status: str = "ok", reason: str | None = None, power: float | None = None,
                info: dict | None = None, work: dict | None = None, trials: list | None = None,
                flags: list | None = None) -> dict:
    """A result whose throughput samples are given directly: one trial of `samples`, or `trials`
    (a list of sample lists), folded as the runner folds trials (results.figure.combine)."""
    r = new_result(workload, category, {**params, **({"dtype": dtype} if dtype else {})}, dtype)
    r["status"], r["reason"] = status, reason
    if status == "ok":
        sets = [[float(x) for x in t] for t in (trials if trials is not None else [samples])]
        records = [{"trial": i + 1, "status": "ok", "n": len(t), "value": float(np.median(t)),
                    "log_se": log_median_se(t), "flags": []} for i, t in enumerate(sets) if t]
        c = combine([t["value"] for t in records], [t["log_se"] for t in records])
        r["metric"] = {"name": "x", "unit": unit, "value": c["value"], "samples": [x for t in sets for x in t],
                       "higher_is_better": True, "ci_low": c["ci_low"], "ci_high": c["ci_high"],
                       "log_se": c.get("log_se"), "trials": c["trials"], "spread": c["spread"]}
        r["trials"] = records
        r["work"] = work or {}
        r["flags"] = list(flags or [])
    if power is not None:
        r["telemetry"] = {"method": "nvml", "valid": True, "mean_power_w": power}
    r["info"] = info or {}
    return r


def make_run(results: list[dict], *, spec_id: str = "mi300x", run_id: str = "run-a",
             started_at: str = "2026-01-01T00:00:00+00:00", host: str = "host-a", stack: dict | None = None,
             product: str | None = None, telemetry: str = "none") -> dict:
    spec = dict(all_specs()[spec_id]) if spec_id != "cpu" else {"id": "cpu", "fp32_tflops": 1.0, "estimated": True}
    fp = {"host": host, "vendor": spec.get("vendor"), "product": product or spec.get("product"), "spec": spec,
          "backend": "cuda", "torch_version": "2.6.0", "telemetry": {"method": telemetry}, **(stack or {})}
    return {"schema_version": SCHEMA_VERSION, "benchmark_version": 1, "run_id": run_id, "started_at": started_at,
            "finished_at": started_at, "status": "complete", "host": host, "fingerprint": fp,
            "spec_id": spec.get("id"), "results": results}


def noisy(center: float, rel: float, n: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return (center * np.exp(rel * rng.standard_normal(n))).tolist()


def noisy_trials(center: float, rel: float, n: int, seed: int, trials: int = 3, spread: float = 0.005) -> list:
    """`trials` sample lists around centres that differ by a run-to-run `spread`."""
    rng = np.random.default_rng([seed, 7])
    return [noisy(center * math.exp(spread * rng.standard_normal()), rel, n, seed * 100 + t) for t in range(trials)]


# -- verdict ------------------------------------------------------------------------------
def test_verdict_boundaries():
    assert verdict(1.10, 1.20, 0.05) == "faster"
    assert verdict(0.80, 0.90, 0.05) == "slower"
    assert verdict(0.97, 1.03, 0.05) == "parity"
    assert verdict(1.02, 1.08, 0.05) == "inconclusive"       # straddles 1.05
    assert verdict(0.90, 1.10, 0.05) == "inconclusive"       # straddles both
    assert verdict(None, None, 0.05) == "inconclusive"
    assert verdict(float("nan"), 1.0, 0.05) == "inconclusive"
    assert verdict(1.02, 1.08, 0.10) == "parity"             # the tolerance moves the band


def runs_of(cases: dict, spec_id: str, prefix: str, runs: int = 3, spread: float = 0.003, seed: int = 0) -> list:
    """`runs` run documents holding every case {name: (centre, noise, n)}, each run its own draw of
    the machine's state (a shift of every case by `spread`) and of each case's samples."""
    rng = np.random.default_rng([seed, 11])
    docs = []
    for r in range(runs):
        shift = math.exp(spread * rng.standard_normal())
        docs.append(make_run([make_result("gemm", {"m": 4096, "case": name},
                                          noisy(centre * shift, rel, n, int(rng.integers(1 << 30))))
                              for name, (centre, rel, n) in cases.items()],
                             spec_id=spec_id, run_id=f"{prefix}{r}", started_at=f"2026-01-0{r + 1}T00:00:00+00:00"))
    return docs


def test_verdicts_on_sample_sets_with_known_truth():
    cases = {  # name: (A centre, B centre, noise, n) -> expected verdict with 3 runs a side
        "win": (100.0, 130.0, 0.01, 20, "faster"),
        "loss": (100.0, 70.0, 0.01, 20, "slower"),
        "parity": (100.0, 100.5, 0.005, 40, "parity"),
        "overlap": (100.0, 105.0, 0.05, 8, "inconclusive"),
    }
    a = runs_of({k: (v[0], v[2], v[3]) for k, v in cases.items()}, "mi300x", "a", seed=1)
    b = runs_of({k: (v[1], v[2], v[3]) for k, v in cases.items()}, "h100-sxm", "b", seed=2)
    out = compare_runs(a, b)
    got = {r["params"]["case"]: r for r in out["rows"]}
    for name, (*_, expected) in cases.items():
        row = got[name]
        assert row["verdict"] == expected, (name, row["ratio"], row["ci_low"], row["ci_high"])
        assert row["ci_low"] < row["ratio"] < row["ci_high"]
        assert math.isclose(row["ratio"], row["b_value"] / row["a_value"])
        assert row["a_runs"] == row["b_runs"] == 3 and row["a_trials"] == row["b_trials"] == 3
    assert not any("cannot measure its run-to-run spread" in n for n in out["notes"])
    assert out["run_spread"]["A"]["kernel"]["source"] == "runs" and out["run_spread"]["A"]["kernel"]["runs"] == 3


def test_trials_of_one_run_are_not_runs():
    """Three trials of one run share its machine state: a side of 1 run x 3 trials still takes the
    run-to-run prior (its CI is wider than the trials alone say), 3 runs x 1 trial measure it."""
    trials = {"same": (100.0, 0.005, 40)}
    one = [make_run([make_result("gemm", {"case": "same"}, [], trials=noisy_trials(100.0, 0.005, 40, 3))])]
    other = [make_run([make_result("gemm", {"case": "same"}, [], trials=noisy_trials(100.0, 0.005, 40, 4))],
                      run_id="b")]
    (row,) = compare_runs(one, other)["rows"]
    assert row["a_trials"] == 3 and row["verdict"] == "inconclusive"
    assert math.log(row["ci_high"] / row["ratio"]) > 1.96 * math.sqrt(2) * 0.06      # both priors, whole
    (runs,) = compare_runs(runs_of(trials, "mi300x", "a", seed=5), runs_of(trials, "mi300x", "b", seed=6))["rows"]
    assert runs["verdict"] == "parity" and runs["ci_high"] / runs["ci_low"] < row["ci_high"] / row["ci_low"]


def test_single_run_sides_assume_a_run_to_run_floor():
    """One trial a side cannot see its run-to-run spread: the assumed default (8% for kernels, with
    2 degrees of freedom: a t, not a z) widens the CI, so a 0.5% difference is never 'parity' on one
    run, while a 2.5x gap still reads 'faster'; --run-spread replaces the default (taken as known)
    and says so."""
    ra = [make_result("gemm", {"case": c}, noisy(100.0, 0.005, 40, i)) for i, c in enumerate(("same", "win"))]
    rb = [make_result("gemm", {"case": "same"}, noisy(100.5, 0.005, 40, 9)),
          make_result("gemm", {"case": "win"}, noisy(250.0, 0.005, 40, 8))]
    out = compare_runs([make_run(ra)], [make_run(rb, run_id="b")])
    got = {r["params"]["case"]: r for r in out["rows"]}
    assert got["same"]["verdict"] == "inconclusive" and got["win"]["verdict"] == "faster"
    half = math.log(got["same"]["ci_high"] / got["same"]["ratio"])
    assert half > 4.30 * math.sqrt(2) * 0.08                     # the two priors, t with 2 df
    assert got["same"]["a_spread"] == got["same"]["b_spread"] == pytest.approx(0.08)
    assert any("side A and B (kernel): assumed 8% with 2 df (history off)" in n for n in out["notes"]), out["notes"]
    spread = out["run_spread"]["B"]["kernel"]
    assert {k: spread[k] for k in ("source", "runs", "spread", "shared", "key", "text", "df")} == {
        "source": "default", "runs": 0, "spread": 0.08, "shared": 0.08, "key": 0.0,
        "text": "assumed 8% with 2 df (history off)", "df": 2.0}
    wide = compare_runs([make_run(ra)], [make_run(rb, run_id="b")], floor=0.10)
    # a spread set by hand is taken as known: a z interval of it
    assert math.log(wide["rows"][0]["ci_high"] / wide["rows"][0]["ratio"]) == pytest.approx(
        1.96 * math.sqrt(2) * 0.10, rel=0.02)
    assert any("10% set by --run-spread" in n for n in wide["notes"])


def test_unstable_results_are_at_most_inconclusive():
    ra = [make_result("gemm", {"m": 1}, [], trials=noisy_trials(100.0, 0.005, 20, 1), flags=["unstable"])]
    rb = [make_result("gemm", {"m": 1}, [], trials=noisy_trials(300.0, 0.005, 20, 2))]
    out = compare_runs([make_run(ra)], [make_run(rb, run_id="b")])
    (row,) = out["rows"]
    assert row["ci_low"] > 1.05 and row["verdict"] == "inconclusive" and "unstable" in row["flags"]
    assert out["geomean"]["kernel"]["verdict"] == "inconclusive"


def test_ci_coverage_matches_nominal_level():
    """200 keys with a true ratio of 1.1, 3 runs a side, each run its own draw of every key: about
    95% of the CIs must contain it."""
    rng = np.random.default_rng(8)

    def side(centre: float, prefix: str) -> list:
        return [make_run([make_result("gemm", {"i": i}, noisy(centre * math.exp(0.02 * rng.standard_normal()), 0.01,
                                                              9, int(rng.integers(1 << 30))))
                          for i in range(200)], run_id=f"{prefix}{r}", started_at=f"2026-01-0{r + 1}T00:00:00+00:00")
                for r in range(3)]

    a, b = side(50.0, "a"), side(55.0, "b")
    out = compare_runs(a, b)
    covered = sum(r["ci_low"] <= 1.1 <= r["ci_high"] for r in out["rows"]) / len(out["rows"])
    assert 0.85 <= covered <= 0.995, covered
    g = out["geomean"]["kernel"]
    assert g["ci_low"] <= 1.1 <= g["ci_high"] and g["n"] == 200


def test_too_few_samples_is_inconclusive():
    a = make_run([make_result("gemm", {"m": 1}, [100.0])])
    b = make_run([make_result("gemm", {"m": 1}, [200.0, 201.0])], run_id="b")
    (row,) = compare_runs([a], [b])["rows"]
    assert row["ratio"] == pytest.approx(2.005) and row["ci_low"] is None and row["verdict"] == "inconclusive"


def test_one_sided_failed_and_pooled_results_are_listed():
    a1 = make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 5, 1)),
                   make_result("gemm", {"m": 2}, [], status="failed", reason="out of memory"),
                   make_result("gemm", {"m": 3}, noisy(10, 0.01, 5, 2))], run_id="a1")
    a2 = make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 7, 3))], run_id="a2",
                  started_at="2026-01-02T00:00:00+00:00")
    b = make_run([make_result("gemm", {"m": 1}, noisy(11, 0.01, 5, 4)),
                  make_result("gemm", {"m": 2}, noisy(11, 0.01, 5, 5)),
                  make_result("gemm", {"m": 4}, noisy(11, 0.01, 5, 6)),
                  make_result("gemm", {"m": 5}, [], status="skipped", reason="no fp8 units")], run_id="b")
    out = compare_runs([a1, a2], [b])
    (row,) = out["rows"]
    assert row["params"]["m"] == 1 and row["a_trials"] == 2 and row["a_runs"] == 2 and row["b_trials"] == 1
    assert [r["params"]["m"] for r in out["only_a"]] == [3]
    assert [r["params"]["m"] for r in out["only_b"]] == [4]
    nc, skipped = out["not_compared"]
    assert nc["params"]["m"] == 2 and nc["side"] == "A" and nc["status"] == "failed" and "memory" in nc["reason"]
    assert nc["other_side"] == "ok"
    # skipped on B with nothing on A: listed as not compared, not as a one-sided result
    assert (skipped["params"]["m"], skipped["side"], skipped["other_side"]) == (5, "B", "absent")
    assert all(r["params"]["m"] != 5 for r in out["only_b"])


def test_newer_failure_does_not_hide_older_success():
    a1 = make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 5, 1))], run_id="a1")
    a2 = make_run([make_result("gemm", {"m": 1}, [], status="failed", reason="x")], run_id="a2",
                  started_at="2026-02-01T00:00:00+00:00")
    b = make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 5, 2))], run_id="b")
    out = compare_runs([a1, a2], [b])
    assert len(out["rows"]) == 1 and out["rows"][0]["a_runs"] == 1 and not out["not_compared"]


def test_normalised_views_per_peak_price_and_watt():
    specs = all_specs()
    a = make_run([make_result("gemm", {"m": 1}, noisy(500, 0.01, 9, 1), power=600.0)], spec_id="mi300x")
    b = make_run([make_result("gemm", {"m": 1}, noisy(600, 0.01, 9, 2))], spec_id="h100-sxm", run_id="b")
    prices = PriceBook("neocloud", {"mi300x": 1.0, "h100-sxm": 4.0}, use_config=False)
    out = compare_sides(side_from_runs([a], "A"), side_from_runs([b], "B"), 0.05, prices)
    (r,) = out["rows"]
    assert r["a_peak"] == specs["mi300x"]["bf16_tflops"] and r["b_peak"] == specs["h100-sxm"]["bf16_tflops"]
    assert r["a_pct_peak"] == pytest.approx(100 * r["a_value"] / r["a_peak"])
    assert r["ratio_per_peak"] == pytest.approx(r["ratio"] * r["a_peak"] / r["b_peak"])
    # prices the user set: one factor on every basis, the CI scales by it exactly
    assert r["ratio_per_dollar"] == pytest.approx(r["ratio"] / 4.0)
    assert r["ci_high_per_dollar"] == pytest.approx(r["ci_high"] / 4.0)
    assert r["verdict_per_dollar"] == "slower"
    assert (r["a_watts"], r["a_power_source"]) == (600.0, "measured")
    assert (r["b_watts"], r["b_power_source"]) == (specs["h100-sxm"]["tdp_w"], "tdp")
    assert r["ratio_per_watt"] == pytest.approx(r["ratio"] * 600.0 / specs["h100-sxm"]["tdp_w"])
    # measured power on A, datasheet TDP on B: a plain ratio, flagged, no verdict
    assert r["verdict_per_watt"] is None and "measured (A) vs tdp (B)" in r["note"]
    assert any("per watt" in n for n in out["notes"]) and out["geomean"]["kernel"]["verdict_per_watt"] is None
    assert "measured" in out["sides"]["a"]["power"] and "TDP" in out["sides"]["b"]["power"]
    g = out["geomean"]["kernel"]
    assert g["ratio_per_dollar"] == pytest.approx(g["ratio"] / 4.0)
    # the price book's own figures: the per-dollar CI spans the price factor over its bases
    book = PriceBook("neocloud", use_config=False)
    (r,) = compare_sides(side_from_runs([a], "A"), side_from_runs([b], "B"), 0.05, book)["rows"]
    lo_f, hi_f = book.factor_range("mi300x", "h100-sxm")
    assert lo_f < 1.40 / 1.69 < hi_f                                   # neocloud is inside the range
    assert r["ratio_per_dollar"] == pytest.approx(r["ratio"] * 1.40 / 1.69)
    assert r["ci_low_per_dollar"] == pytest.approx(r["ci_low"] * lo_f)
    assert r["ci_high_per_dollar"] == pytest.approx(r["ci_high"] * hi_f)
    # TDP on both sides is no measurement of power: a plain ratio, never a verdict
    b2 = make_run([make_result("gemm", {"m": 1}, noisy(600, 0.01, 9, 2))], spec_id="h100-sxm", run_id="b2")
    a2 = make_run([make_result("gemm", {"m": 1}, noisy(200, 0.01, 9, 1))], spec_id="mi300x", run_id="a2")
    (r,) = compare_sides(side_from_runs([a2], "A"), side_from_runs([b2], "B"), 0.05, prices)["rows"]
    assert r["ratio_per_watt"] is not None and r["verdict_per_watt"] is None and "a plain ratio" in r["note"]


def test_tokens_give_dollars_per_million_tokens():
    a = make_run([make_result("llm", {"m": 1}, noisy(1000, 0.01, 9, 1), unit="tokens/s", category="model")])
    b = make_run([make_result("llm", {"m": 1}, noisy(1000, 0.01, 9, 2), unit="tokens/s", category="model")],
                 spec_id="h100-sxm", run_id="b")
    prices = PriceBook("neocloud", {"mi300x": 3.6}, use_config=False)
    (r,) = compare_sides(side_from_runs([a]), side_from_runs([b]), 0.05, prices)["rows"]
    assert r["a_usd_per_mtok"] == pytest.approx(3.6 / (r["a_value"] * 3600) * 1e6)
    assert r["a_tokens_per_kw"] == pytest.approx(r["a_value"] / (all_specs()["mi300x"]["tdp_w"] / 1000))


def serving_run(scale: float, run_id: str, spec_id: str, errors_at: int | None = None) -> dict:
    results = []
    for c in (1, 4, 16, 64):
        inter = 100.0 / c ** 0.5          # tokens/s per user falls with concurrency
        tput = scale * 50.0 * c ** 0.7     # tokens/s per GPU rises
        info = {"curve_key": "llama-8b in=1024 out=256",
                "serving": {"interactivity": inter, "throughput_per_gpu": tput, "ttft_p50_s": 0.1,
                            "tpot_p50_s": 1 / inter, "errors": 3 if c == errors_at else 0}}
        results.append(make_result("serving", {"concurrency": c}, noisy(tput, 0.02, 5, c), dtype=None,
                                   unit="tokens/s/GPU", category="serving", info=info))
    return make_run(results, run_id=run_id, spec_id=spec_id)


def test_serving_compares_at_equal_interactivity():
    # one run a side: the 10% serving default with 2 df on both axes of every point
    out = compare_runs([serving_run(1.0, "a", "mi300x")], [serving_run(3.0, "b", "h100-sxm")])
    points = [p for p in out["serving"] if p.get("interactivity")]
    assert len(points) >= 3
    for p in points:
        assert p["ratio"] == pytest.approx(3.0, rel=1e-6) and p["verdict"] == "faster"
    assert {r["category"] for r in out["rows"]} == {"serving"}
    row = out["rows"][0]
    assert row["a_usd_per_mtok"] == pytest.approx(row["a_usd_per_hour"] / (row["a_value"] * 3600) * 1e6)


def test_pareto_keeps_the_best_curve_and_errors_are_dropped():
    xs, ys = pareto([(10, 100), (10, 90), (20, 50), (15, 40), (5, 120)])
    assert xs.tolist() == [5, 10, 20] and ys.tolist() == [120, 100, 50]
    side = side_from_runs([serving_run(1.0, "a", "mi300x", errors_at=64)])
    from gpuparity.comparison.serving_compare import serving_curves

    (curve,) = serving_curves(side).values()
    assert len(curve["points"]) == 3


def test_store_fast_path_matches_documents(tmp_path):
    docs_a = [make_run([make_result("gemm", {"m": m}, noisy(100, 0.02, 6 + m, m)) for m in range(5)]
                       + [make_result("gemm", {"m": 9}, [], status="failed", reason="boom")], run_id=f"a{i}",
                       started_at=f"2026-01-0{i + 1}T00:00:00+00:00") for i in range(2)]
    doc_b = make_run([make_result("gemm", {"m": m}, noisy(104, 0.02, 7, 50 + m)) for m in range(1, 6)]
                     + [make_result("gemm", {"m": 9}, noisy(104, 0.02, 7, 60))], run_id="b",
                     spec_id="h100-sxm")
    with Store(str(tmp_path / "a.db")) as sa, Store(str(tmp_path / "b.db")) as sb:
        for d in docs_a:
            sa.save_run(d)
        sb.save_run(doc_b)
        fast = compare_sides(side_from_store(sa, sa.run_ids()), side_from_store(sb, sb.run_ids(), "B"))
    slow = compare_runs(docs_a, [doc_b])
    strip = ("sides",)
    assert {k: v for k, v in fast.items() if k not in strip} == {k: v for k, v in slow.items() if k not in strip}
    assert fast["sides"]["a"]["run_ids"] == ["a0", "a1"]
    # A side that is a small part of a big store reads through the run_id index instead of a scan.
    with Store(str(tmp_path / "a.db")) as sa, Store(str(tmp_path / "b.db")) as sb:
        for i in range(2, 9):
            sa.save_run(dict(docs_a[0], run_id=f"other{i}", started_at=f"2026-02-0{i}T00:00:00+00:00"))
        one = compare_sides(side_from_store(sa, ["a0"]), side_from_store(sb, sb.run_ids(), "B"))
    assert one["rows"] == compare_runs(docs_a[:1], [doc_b])["rows"] and one["sides"]["a"]["run_ids"] == ["a0"]


# -- CLI ----------------------------------------------------------------------------------
def test_cli_compares_two_real_runs_from_exported_files(cli, tmp_path, capsys):
    files = {}
    for side in ("a", "b"):
        db = str(tmp_path / f"{side}.db")
        r = cli("run", "gemm", "--dtype", "fp64", "--db", db)     # one GEMM case: keeps the test short
        assert r.returncode == 0, r.stderr
        files[side] = str(tmp_path / f"{side}.json")
        r = cli("export", "latest", "-o", files[side], "--db", db)
        assert r.returncode == 0, r.stderr
    r = cli("compare", files["a"], files["b"], "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["rows"] and all(row["workload"] == "gemm" and row["dtype"] == "fp64" for row in out["rows"])
    for row in out["rows"]:
        assert row["verdict"] in ("faster", "parity", "slower", "inconclusive")
        assert row["ci_low"] <= row["ratio"] <= row["ci_high"]
        # the CPU's peak is an estimate a warm run can beat (a VM reports its base clock): then the
        # figure is flagged and its peak blanked, never shown as over 100%
        if "peak_exceeded" in row["flags"]:
            assert row["a_pct_peak"] is None or row["b_pct_peak"] is None
        else:
            assert 0 < row["a_pct_peak"] <= 100 and row["a_peak"] > 0
    assert out["sides"]["a"]["run_ids"] != out["sides"]["b"]["run_ids"]
    for fmt, needle in (("table", "B / A per result"), ("markdown", "| workload |"), ("csv", "key,workload")):
        code, out_text, err = main_inprocess(["compare", files["a"], files["b"], "--format", fmt], capsys)
        assert code == 0 and needle in out_text, err


def test_cli_filters_fail_gate_and_errors(cli, tmp_path, capsys):
    db = str(tmp_path / "s.db")
    fast = make_run([make_result("gemm", {"m": 1}, noisy(100, 0.01, 10, 1))], run_id="r-mi", spec_id="mi300x",
                    stack={"hip_version": "6.2", "rocm_version": "6.2.4"}, product="AMD Instinct MI300X")
    slow = make_run([make_result("gemm", {"m": 1}, noisy(50, 0.01, 10, 2))], run_id="r-h1", spec_id="h100-sxm",
                    stack={"cuda_version": "12.4"}, product="NVIDIA H100 80GB HBM3")
    with Store(db) as s:
        s.save_run(fast)
        s.save_run(slow)
    r = cli("compare", "--db", db, "--gpu-a", "mi300x", "--stack-a", "rocm", "--gpu-b", "h100-sxm",
            "--fail-if-slower", "5%", "--format", "json")
    assert r.returncode == 1 and "regression gate failed: 1 below 0.950x A" in r.stderr, r.stderr
    assert "Holm over 1 result(s) and 0 category mean(s)" in r.stderr
    assert "gemm m=1 bf16" in r.stderr and "key" not in r.stderr
    out = json.loads(r.stdout)
    assert out["rows"][0]["verdict"] == "slower"
    assert out["gate"]["passed"] is False and out["gate"]["failed"][0]["params"] == {"m": 1, "dtype": "bf16"}
    # gpu= is exact: 'h100' names no spec id or product, 'h100*' is a prefix
    r = cli("compare", "gpu=h100", "gpu=mi300x", "--db", db)
    assert r.returncode == 2 and "no stored run matches gpu=h100" in r.stderr
    r = cli("compare", "gpu=h100*", "gpu=mi300x,stack=rocm", "--db", db, "--fail-if-slower", "5%",
            "--price", "mi300x=1.0", "--price", "h100=4", "--format", "json")
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)["rows"][0]
    assert row["verdict"] == "faster" and row["ratio_per_dollar"] == pytest.approx(row["ratio"] * 4.0)
    # a SQLite file named as a side is a whole store; the side filters still apply
    code, out, err = main_inprocess(["compare", db, db, "--gpu-a", "h100-sxm", "--gpu-b", "mi300x", "-f", "json"],
                                    capsys)
    assert code == 0, err
    assert json.loads(out)["sides"]["a"]["run_ids"] == ["r-h1"] and json.loads(out)["rows"][0]["verdict"] == "faster"



def test_cli_orders_rows_by_size_and_caps_long_tables(tmp_path, capsys):
    sizes = [1024, 256, 4096, 512, 2048]
    db = str(tmp_path / "s.db")
    with Store(db) as s:
        for run_id, spec_id, center in (("r-a", "mi300x", 100), ("r-b", "h100-sxm", 300)):
            s.save_run(make_run([make_result("gemm", {"m": m}, noisy(center, 0.01, 8, m)) for m in sizes]
                                + [make_result("gemm", {"m": 8}, [5.0])],      # one sample: no CI
                                run_id=run_id, spec_id=spec_id))
    code, out, err = main_inprocess(["compare", "r-a", "r-b", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)        # strict JSON: a missing CI is null, never NaN
    assert [r["params"]["m"] for r in doc["rows"]] == [8, 256, 512, 1024, 2048, 4096]  # by value, not text
    assert doc["rows"][0]["ci_low"] is None and doc["rows"][0]["verdict"] == "inconclusive"
    code, out, err = main_inprocess(["compare", "r-a", "r-b", "--db", db, "--rows", "2"], capsys)
    assert code == 0, err
    assert "m=256" in out and "m=512" not in out
    # the counts of rows not shown are the headline's, adjusted for multiplicity, and say so
    assert "4 more rows not shown (all 6: 5 faster, 1 inconclusive; Benjamini-Hochberg over 6 result(s)" in out
    code, out, err = main_inprocess(["compare", "r-a", "r-b", "--db", db, "--rows", "2", "-f", "markdown"], capsys)
    assert code == 0 and "4 more results" in out and "m=512" not in out
    code, out, err = main_inprocess(["compare", "r-a", "r-b", "--db", db, "-f", "csv", "--rows", "1"], capsys)
    assert code == 0 and len(out.strip().splitlines()) == 1 + 6      # csv holds every row whatever --rows says


def test_rows_order_mixed_parameter_types_numbers_first():
    ms = [16, "auto", 4, [2, 3]]
    runs = [make_run([make_result("gemm", {"m": m}, noisy(100, 0.01, 6, i)) for i, m in enumerate(ms)], run_id=r)
            for r in ("a", "b")]
    assert [r["params"]["m"] for r in compare_runs(runs[:1], runs[1:])["rows"]] == [4, 16, [2, 3], "auto"]  # text: "[2, 3]" < "auto"


def main_inprocess(args: list[str], capsys) -> tuple[int, str, str]:
    """The CLI entry point in this process (no interpreter start-up): (exit code, stdout, stderr)."""
    from gpuparity.cli.main import main

    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_bad_input_is_one_line(tmp_path, capsys):
    db = str(tmp_path / "s.db")
    with Store(db) as s:
        s.save_run(make_run([make_result("gemm", {"m": 1}, noisy(100, 0.01, 10, 1))], run_id="r-mi"))
        s.save_run(make_run([make_result("gemm", {"m": 1}, noisy(80, 0.01, 10, 2))], run_id="r-h1",
                            spec_id="h100-sxm"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for args, needle in ((("gpu=b200", "r-mi"), "no stored run matches"), (("r-mi", "nope"), "no run 'nope'"),
                         (("r-mi", "r-h1", "--tolerance", "abc"), "--tolerance"),
                         (("r-mi", "r-h1", "--price", "mi300x=-1"), "positive"),
                         (("r-mi", "r-h1", "--price-basis", "cheap"), "--price-basis"),
                         (("r-mi", "r-h1", "--since", "yesterday"), "ISO date"),
                         (("r-mi", "r-h1", "--format", "xml"), "--format"),
                         ((str(bad), "r-h1"), "not valid JSON"),
                         (("missing.json", "r-h1"), "no such file"),
                         (("colour=red", "r-h1"), "unknown filter"), (("r-mi",), "name two sides")):
        code, _, err = main_inprocess(["compare", *args, "--db", db], capsys)
        assert code == 2 and needle in err and "Traceback" not in err, (args, err)
        assert err.startswith("error: ") and err.count("\n") == 1


def test_a_figure_without_samples_counts_as_one_sample(tmp_path):
    a = make_run([make_result("serving", {"concurrency": 8}, [500.0], dtype=None, unit="tokens/s",
                              category="serving")])
    b = make_run([make_result("serving", {"concurrency": 8}, [600.0], dtype=None, unit="tokens/s",
                              category="serving")], run_id="b")
    for doc in (a, b):
        doc["results"][0]["metric"].pop("samples")        # only metric.value, as a serving sweep may write
    (row,) = compare_runs([a], [b])["rows"]
    assert row["ratio"] == pytest.approx(1.2) and row["verdict"] == "inconclusive" and row["ci_low"] is None
    with Store(str(tmp_path / "s.db")) as s:
        s.save_run(a)
        s.save_run(b)
        (fast,) = compare_sides(side_from_store(s, ["run-a"]), side_from_store(s, ["b"], "B"))["rows"]
    assert fast["ratio"] == pytest.approx(1.2)


def test_ci_agrees_with_a_textbook_percentile_bootstrap():
    rng = np.random.default_rng(5)
    ra, rb, raw = [], [], []
    for i, n in enumerate((5, 6, 10, 30, 100)):
        a, b = 100 * np.exp(0.03 * rng.standard_normal(n)), 110 * np.exp(0.03 * rng.standard_normal(n))
        ra.append(make_result("gemm", {"i": i}, a.tolist()))
        rb.append(make_result("gemm", {"i": i}, b.tolist()))
        raw.append((a, b))
    # floor 0: the within-trial interval alone is what a percentile bootstrap estimates
    rows = {r["params"]["i"]: r for r in compare_runs([make_run(ra)], [make_run(rb, run_id="b")], floor=0.0)["rows"]}
    for i, (a, b) in enumerate(raw):
        reps = (np.median(b[rng.integers(0, b.size, (4000, b.size))], axis=1)
                / np.median(a[rng.integers(0, a.size, (4000, a.size))], axis=1))
        lo, hi = np.quantile(reps, [0.025, 0.975])
        width = hi - lo
        assert abs(rows[i]["ci_low"] - lo) < 0.3 * width and abs(rows[i]["ci_high"] - hi) < 0.3 * width, (i, lo, hi)


def test_store_history_sets_a_one_run_sides_spread(tmp_path, capsys, monkeypatch):
    """Earlier runs of the same product and stack in the store (keys measured in several runs, 1%
    apart) replace the 6% default for a one-run side, and compare says where its spread came from;
    --no-history, another product or a file side without a default store fall back to the default."""
    db = str(tmp_path / "s.db")
    rocm = {"rocm_version": "6.2.4", "hip_version": "6.2"}
    rng = np.random.default_rng(4)

    def run(run_id: str, day: int, spec_id: str = "mi300x", stack: dict = rocm, centre: float = 100.0) -> dict:
        shift = math.exp(0.01 * rng.standard_normal())
        return make_run([make_result("gemm", {"m": m}, noisy(centre * (1 + m / 8) * shift, 0.002, 12, day * 10 + m))
                         for m in range(8)], run_id=run_id, spec_id=spec_id, stack=stack,
                        started_at=f"2026-01-{day:02d}T00:00:00+00:00")

    with Store(db) as s:
        for day in range(1, 6):
            s.save_run(run(f"old{day}", day))
        s.save_run(run("new-a", 10))
        s.save_run(run("new-b", 11, "h100-sxm", {"cuda_version": "12.4"}, 130.0))
    code, out, err = main_inprocess(["compare", "new-a", "new-b", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    spread_a = doc["run_spread"]["A"]["kernel"]
    assert spread_a["source"] == "history" and spread_a["runs"] == 5 and spread_a["spread"] < 0.03
    assert spread_a["text"].startswith("run-to-run ") and "from 5 runs on 1 host over 5 days of mi300x/rocm 6.2.4" in spread_a["text"]
    assert doc["run_spread"]["B"]["kernel"]["text"] == "assumed 8% with 2 df (no earlier runs of h100-sxm/cuda 12.4 in s.db)"
    assert any("from 5 runs on 1 host over 5 days of mi300x/rocm 6.2.4" in n for n in doc["notes"])
    code, out, err = main_inprocess(["compare", "new-a", "new-b", "--db", db, "--no-history", "-f", "json"], capsys)
    off = json.loads(out)
    assert off["run_spread"]["A"]["kernel"]["text"] == "assumed 8% with 2 df (history off)"
    # the history narrows A's part of every interval
    width = {d: np.median([math.log(r["ci_high"] / r["ci_low"]) for r in x["rows"]]) for d, x in (("on", doc), ("off", off))}
    assert width["on"] < width["off"]
    # file sides: the default store's history, if it exists; never created for it
    files = {}
    for rid in ("new-a", "new-b"):
        files[rid] = str(tmp_path / f"{rid}.json")
        assert main_inprocess(["export", rid, "-o", files[rid], "--db", db], capsys)[0] == 0
    monkeypatch.setenv("GPUPARITY_DB", db)
    code, out, err = main_inprocess(["compare", files["new-a"], files["new-b"], "-f", "json"], capsys)
    assert json.loads(out)["run_spread"]["A"]["kernel"]["source"] == "history", err
    missing = str(tmp_path / "none.db")
    monkeypatch.setenv("GPUPARITY_DB", missing)
    code, out, err = main_inprocess(["compare", files["new-a"], files["new-b"], "-f", "json"], capsys)
    assert json.loads(out)["run_spread"]["A"]["kernel"]["source"] == "default" and not os.path.exists(missing)


def test_gate_and_counts_correct_for_many_results():
    """Holm for the gate, Benjamini-Hochberg for the counts: 40 results 4% slower (inside a 5% gate)
    with a noisy per-result interval do not fail the gate, 40 results 30% faster all count."""
    from gpuparity.comparison.gate import regression_gate
    from gpuparity.comparison.multiplicity import bh, holm

    assert holm(np.array([0.01, 0.04, 0.03])).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert bh(np.array([0.01, 0.04, 0.03])).tolist() == pytest.approx([0.03, 0.04, 0.04])
    slow = [runs_of({f"k{i}": (100.0 * 0.96, 0.01, 9) for i in range(40)}, "mi300x", p, seed=s) for p, s in (("b", 2),)]
    base = runs_of({f"k{i}": (100.0, 0.01, 9) for i in range(40)}, "mi300x", "a", seed=1)
    out = compare_runs(base, slow[0])
    gate = regression_gate(out, 0.05)
    assert gate["passed"] and gate["method"].startswith("Holm over 40 result(s) and 1 category mean(s)")
    fast = runs_of({f"k{i}": (130.0, 0.01, 9) for i in range(40)}, "mi300x", "c", seed=3)
    doc = compare_runs(base, fast)
    counts = doc["counts"]
    assert counts["faster"] == 40 and counts["method"].startswith("Benjamini-Hochberg over 40 result(s)")
    # each row carries the adjusted verdict the counts count
    assert [r["fdr_verdict"] for r in doc["rows"]] == ["faster"] * 40
    assert sum(r["fdr_verdict"] == "slower" for r in out["rows"]) == out["counts"]["slower"]
    assert regression_gate(compare_runs(fast, base), 0.05)["passed"] is False


def test_parity_band_is_symmetric_on_the_log_scale():
    from gpuparity.comparison.verdict import band

    lo, hi = band(0.05)
    assert lo == pytest.approx(1 / 1.05) and hi == 1.05
    # the same interval read either way: B/A in [0.953, 1.045] is parity, and so is A/B
    assert verdict(0.953, 1.045, 0.05) == verdict(1 / 1.045, 1 / 0.953, 0.05) == "parity"
    assert verdict(0.9, 0.951, 0.05) == "slower" and verdict(1 / 0.951, 1 / 0.9, 0.05) == "faster"
    assert verdict(0.951, 0.96, 0.05) == "inconclusive"        # 0.951 < 1/1.05: not parity, not slower


def test_cpu_history_is_keyed_on_the_cpu_model(tmp_path, capsys):
    """Every CPU's spec id is "cpu": the history of a one-run CPU side is that of its own model
    (and stack), not of every CPU in the store, and the text names the model."""
    db = str(tmp_path / "s.db")
    rng = np.random.default_rng(8)

    def run(run_id: str, day: int, product: str, spread: float) -> dict:
        shift = math.exp(spread * rng.standard_normal())
        return make_run([make_result("gemm", {"m": m}, noisy(50.0 * (1 + m / 8) * shift, 0.002, 12, day * 10 + m),
                                     dtype="fp32") for m in range(6)],
                        run_id=run_id, spec_id="cpu", product=product, started_at=f"2026-01-{day:02d}T00:00:00+00:00")

    with Store(db) as s:
        for day in range(1, 5):
            s.save_run(run(f"epyc{day}", day, "AMD EPYC 7B13", 0.01))
            s.save_run(run(f"xeon{day}", day + 10, "Intel Xeon Platinum 8480", 0.25))     # another CPU, wild
        s.save_run(run("new-a", 20, "AMD EPYC 7B13", 0.01))
        s.save_run(run("new-b", 21, "AMD EPYC 7B13", 0.01))
    code, out, err = main_inprocess(["compare", "new-a", "new-b", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    spread = doc["run_spread"]["A"]["kernel"]
    assert spread["source"] == "history" and spread["runs"] == 4, spread
    assert "from 4 runs on 1 host over 4 days of AMD EPYC 7B13/cpu" in spread["text"] and spread["spread"] < 0.03, spread
    code, out, err = main_inprocess(["compare", "new-a", "new-b", "--db", db], capsys)
    assert "from 4 runs on 1 host over 4 days of AMD EPYC 7B13/cpu" in " ".join(out.split()), out


def test_history_leaves_out_contended_runs_and_the_sides_own_runs(tmp_path, capsys):
    """A busy run is not the machine's usual state: earlier contended runs far off the others
    change neither the prior nor its run count, and the runs being compared (here 30% apart) are
    not their own history."""
    db = str(tmp_path / "s.db")
    rng = np.random.default_rng(5)

    def run(run_id: str, day: int, level: float = 1.0, busy: bool = False) -> dict:
        shift = math.exp(0.01 * rng.standard_normal())
        doc = make_run([make_result("gemm", {"m": m}, noisy(100.0 * level * (1 + m / 8) * shift, 0.002, 12, day * 10 + m),
                                    flags=["contended"] if busy else None) for m in range(8)],
                       run_id=run_id, started_at=f"2026-01-{day:02d}T00:00:00+00:00")
        if busy:
            doc["machine"] = {"contention": {"contended": True, "reasons": ["other processes used 90% of the CPUs"]}}
        return doc

    def spread_of(store_runs: list[dict]) -> dict:
        path = str(tmp_path / f"s{len(store_runs)}.db")
        with Store(path) as s:
            for d in store_runs:
                s.save_run(d)
        code, out, err = main_inprocess(["compare", "new-a", "new-b", "--db", path, "-f", "json"], capsys)
        assert code == 0, err
        return json.loads(out)["run_spread"]["A"]["kernel"]

    quiet = [run(f"old{d}", d) for d in range(1, 6)]
    sides = [run("new-a", 20), run("new-b", 21, level=1.3)]
    busy = [run("busy1", 7, level=0.6, busy=True), run("busy2", 8, level=1.5, busy=True)]
    plain, with_busy = spread_of(quiet + sides), spread_of(quiet + busy + sides)
    assert plain["runs"] == with_busy["runs"] == 5 and "from 5 runs on 1 host over 5 days of mi300x/" in with_busy["text"]
    assert with_busy["spread"] == pytest.approx(plain["spread"]) and plain["spread"] < 0.03
    del db


def gate_store(tmp_path, b_level: float, b_flags=None, busy: bool = False, slow_unstable: int = 0) -> str:
    """A store with runs 'a' and 'b' of 5 kernels: B at b_level x A, its first `slow_unstable`
    kernels 30% slower and flagged unstable, all of B flagged `b_flags` / contended when asked."""
    db = str(tmp_path / f"gate-{b_level}-{busy}-{slow_unstable}.db")
    a = make_run([make_result("gemm", {"m": m}, noisy(100, 0.005, 20, m)) for m in range(5)], run_id="a")
    b = make_run([make_result("gemm", {"m": m}, noisy(100 * (0.7 if m < slow_unstable else b_level), 0.005, 20, 10 + m),
                              flags=(["unstable"] if m < slow_unstable else []) + list(b_flags or []))
                  for m in range(5)], run_id="b", started_at="2026-01-02T00:00:00+00:00")
    if busy:
        b["machine"] = {"contention": {"contended": True, "reasons": ["other processes used 80% of the CPUs"]}}
    with Store(db) as s:
        s.save_run(a)
        s.save_run(b)
    return db


def test_gate_cannot_judge_a_contended_side_and_fails(tmp_path, capsys):
    """A contended side supports no verdict, so the gate cannot judge: it says so and exits 1,
    whether B reads slower or faster (a gate that cannot judge must not pass in CI)."""
    for level in (0.7, 1.4):
        db = gate_store(tmp_path, level, ["contended"], busy=True)
        code, out, err = main_inprocess(["compare", "a", "b", "--db", db, "--fail-if-slower", "5%", "-f", "json"],
                                        capsys)
        assert code == 1, err
        assert err.startswith("regression gate could not judge: side B was contended (other processes used 80%"), err
        gate = json.loads(out)["gate"]
        assert gate["judged"] is False and gate["passed"] is False and gate["failed"] == []
        assert gate["not_judged"] == {"results": 5, "means": 1, "why": {"side B contended": 6}}


def test_gate_judges_only_rows_whose_verdict_is_not_held(tmp_path, capsys):
    """Two kernels 30% slower but flagged unstable cannot support 'slower': the gate tests the
    three others and the category mean (not mostly flagged) and passes, saying what it left out;
    a true 80% loss on quiet kernels still fails it (one run a side: the 8% default with 2 df, Holm
    over 6 tests: a t quantile of 2 df at 0.4%)."""
    db = gate_store(tmp_path, 1.0, slow_unstable=2)
    code, out, err = main_inprocess(["compare", "a", "b", "--db", db, "--fail-if-slower", "5%", "-f", "json"], capsys)
    assert code == 0, err
    assert "regression gate passed" in err and "Holm over 3 result(s) and 1 category mean(s)" in err, err
    assert "2 result(s) and 0 category mean(s) not judged (2 unstable)" in err, err
    doc = json.loads(out)
    assert [r["held"] for r in doc["rows"]] == ["unstable", "unstable", None, None, None]
    assert doc["geomean"]["kernel"]["held"] is None and doc["gate"]["judged"] is True
    # mostly flagged: the mean is held too, and nothing left slower
    db = gate_store(tmp_path, 1.0, slow_unstable=3)
    code, out, err = main_inprocess(["compare", "a", "b", "--db", db, "--fail-if-slower", "5%", "-f", "json"], capsys)
    assert code == 0 and "3 result(s) and 1 category mean(s) not judged (3 unstable, 1 mostly flagged (3 of 5))" in err
    db = gate_store(tmp_path, 0.2)
    code, out, err = main_inprocess(["compare", "a", "b", "--db", db, "--fail-if-slower", "5%"], capsys)
    assert code == 1 and "regression gate failed: 6 below 0.950x A" in err and "not judged" not in err, err
    # every result flagged: nothing can be judged, and that is no pass
    db = gate_store(tmp_path, 1.0, slow_unstable=5)
    code, out, err = main_inprocess(["compare", "a", "b", "--db", db, "--fail-if-slower", "5%"], capsys)
    assert code == 1 and err.startswith("regression gate could not judge: no result or category mean"), err


def test_every_view_draws_and_names_the_symmetric_band(tmp_path, capsys):
    """The verdicts' band is [1/(1+t), 1+t]: the forest chart shades exactly that, and the
    terminal table and markdown name it as the range it is, not as 1 ± t."""
    from gpuparity.comparison.verdict import band_text
    from gpuparity.report import plots
    from gpuparity.report.markdown import compare_markdown

    a = make_run([make_result("gemm", {"m": m}, noisy(100, 0.01, 10, m)) for m in range(3)])
    b = make_run([make_result("gemm", {"m": m}, noisy(97, 0.01, 10, 5 + m)) for m in range(3)], run_id="b")
    doc = compare_runs([a], [b], tolerance=0.1)
    assert band_text(0.1) == "parity band 0.909-1.1 (±10% on the log scale)"
    assert band_text(0.05) == "parity band 0.952-1.05 (±5% on the log scale)"
    (shade,) = [s for s in plots.forest_chart(doc).layout.shapes if s.type == "rect"]
    assert shade.x0 == pytest.approx(1 / 1.1) and shade.x1 == pytest.approx(1.1)
    assert "parity band 0.909-1.1 (±10% on the log scale)" in compare_markdown(doc)
    files = []
    for d in (a, b):
        files.append(str(tmp_path / f"{d['run_id']}.json"))
        with open(files[-1], "w") as fh:
            json.dump(d, fh)
    code, out, err = main_inprocess(["compare", *files, "-t", "10%"], capsys)
    assert code == 0 and "parity band 0.909-1.1" in " ".join(out.split()) and "±10%," not in out, err


def test_the_overall_mean_weighs_categories_equally_and_disagreeing_keys_read_mixed():
    """10 kernels 2x faster and one model at parity: the overall mean is the mean of the two
    categories (about 1.41x), not of the 11 keys (1.88x), and says so. Kernels half 1.5x faster
    and half 1.5x slower read "mixed" with both extremes named, never parity."""
    import math

    def runs(centres: dict, prefix: str) -> list:
        return runs_of(centres, "mi300x", prefix)

    a = runs({f"k{i}": (100.0, 0.005, 20) for i in range(10)}, "a")
    b = runs({f"k{i}": (200.0, 0.005, 20) for i in range(10)}, "b")
    for docs, centre in ((a, 100.0), (b, 100.0)):
        for r, d in enumerate(docs):
            d["results"].append(make_result("llm", {"m": 1}, noisy(centre, 0.005, 20, 50 + r), unit="tokens/s",
                                            category="model"))
    out = compare_runs(a, b)
    g = out["geomean"]["all"]
    assert g["weights"] == "categories equally" and g["n"] == 11
    assert g["ratio"] == pytest.approx(math.sqrt(out["geomean"]["kernel"]["ratio"] * out["geomean"]["model"]["ratio"]))
    from gpuparity.comparison.headline import headline

    assert "on all results (categories weighted equally) 1.41x" in headline(out)["text"]
    half = {f"k{i}": (150.0 if i % 2 else 100 / 1.5, 0.005, 20) for i in range(10)}
    out = compare_runs(runs({f"k{i}": (100.0, 0.005, 20) for i in range(10)}, "a"), runs(half, "b"))
    g = out["geomean"]["kernel"]
    assert g["verdict"] == "mixed" and g["mixed"]["faster"] == 5 and g["mixed"]["slower"] == 5
    assert g["mixed"]["lowest"]["ratio"] < 0.7 and g["mixed"]["highest"]["ratio"] > 1.4
    assert "mixed: faster on 5 of 10, slower on 5 (0.6" in headline(out)["text"]
