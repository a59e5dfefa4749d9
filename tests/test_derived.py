"""Derived figures come from one rule (results/figure.py): % of peak in the figure's own unit
(token rates through their FLOP per token), no % above 100 (the peak_exceeded flag instead), and
CPU peaks that count the units the CPU has."""

from __future__ import annotations

import copy
import math

import pytest
from test_compare import make_result, make_run, noisy

from gpuparity.comparison.compare import compare_sides
from gpuparity.comparison.sides import side_from_runs, side_from_store
from gpuparity.platform.prices import PriceBook
from gpuparity.platform.specs import all_specs, cpu_spec
from gpuparity.results.figure import PEAK_EXCEEDED, derive_rates, pct_of_peak, peak_kind_for, unit_peak
from gpuparity.results.store import Store

PRICES = PriceBook("neocloud", {}, use_config=False)


def token_result(value: float, flop_per_token: float, seed: int, kind: str | None = "new") -> dict:
    """A MoE-like result: tokens/s figure, FLOP and tokens per call, against the bf16 peak."""
    work = {"flop": flop_per_token * 4096, "tokens": 4096.0}
    peak = peak_kind_for("flop:bf16", work) if kind == "new" else kind
    return make_result("moe", {"preset": "x", "tokens": 4096}, noisy(value, 0.01, 9, seed), unit="tokens/s",
                       work=work, info={"peak_kind": peak})


def test_a_token_rate_is_measured_against_its_flop_peak():
    spec = all_specs()["mi300x"]
    r = token_result(2.0e5, 3.0e9, 1)
    assert r["info"]["peak_kind"].startswith("flop:bf16|")
    derive_rates(r, spec)
    tflops = r["metric"]["value"] * 3.0e9 / 1e12
    assert r["derived"]["tflops"] == pytest.approx(tflops, rel=1e-12)
    assert r["derived"]["pct_peak"] == pytest.approx(100 * tflops / spec["bf16_tflops"], rel=1e-12)
    assert 0 < r["derived"]["pct_peak"] <= 100
    assert unit_peak(spec, r["info"]["peak_kind"], "tokens/s") == pytest.approx(spec["bf16_tflops"] * 1e12 / 3.0e9)


def test_compare_store_and_load_give_the_token_rates_percent(tmp_path):
    import gpuparity

    a = token_result(2.0e5, 3.0e9, 1)
    b = token_result(2.4e5, 3.0e9, 2)
    old = token_result(2.0e5, 3.0e9, 3, kind="flop:bf16")           # stored before kinds carried FLOP per token
    old["key"] = "f" * 16
    docs = [make_run([a, old], spec_id="mi300x"), make_run([b], spec_id="h100-sxm", run_id="b")]
    for doc, spec in zip(docs, ("mi300x", "h100-sxm"), strict=True):
        for r in doc["results"]:
            derive_rates(r, all_specs()[spec])
    out = compare_sides(side_from_runs([docs[0]], "A"), side_from_runs([docs[1]], "B"), 0.05, PRICES)
    (row,) = out["rows"]
    assert row["a_pct_peak"] == pytest.approx(a["derived"]["pct_peak"], rel=1e-9)
    assert row["b_pct_peak"] == pytest.approx(b["derived"]["pct_peak"], rel=1e-9)
    assert row["ratio_per_peak"] == pytest.approx(row["b_pct_peak"] / row["a_pct_peak"], rel=1e-9)
    db = str(tmp_path / "s.db")
    with Store(db) as store:
        for doc in docs:
            store.save_run(doc)
        fast = compare_sides(side_from_store(store, ["run-a"], "A"), side_from_store(store, ["b"], "B"), 0.05, PRICES)
    assert fast["rows"][0]["a_pct_peak"] == pytest.approx(row["a_pct_peak"], rel=1e-9)
    frame = gpuparity.load(db)
    pct = dict(zip(frame["key"], frame["pct_peak"], strict=True))
    assert pct[a["key"]] == pytest.approx(a["derived"]["pct_peak"], rel=1e-9)
    assert math.isnan(pct[old["key"]])      # tokens/s over a TFLOP/s peak is no percentage: unknown, not 40,000%
    assert old["derived"].get("pct_peak") is None


def test_a_figure_above_its_peak_flags_the_peak_in_every_view(tmp_path):
    import gpuparity

    spec = dict(all_specs()["mi300x"], bf16_tflops=400.0)            # a peak the measurement beats
    high = make_result("gemm", {"m": 1}, noisy(500.0, 0.01, 9, 1), info={"peak_kind": "flop:bf16"},
                       work={"flop": 1e12})
    derive_rates(high, spec)
    assert "pct_peak" not in high["derived"] and PEAK_EXCEEDED in high["flags"]
    assert high["derived"]["peak"]["exceeded"] is True
    low = copy.deepcopy(high)                                           # a lower figure: the flag goes
    low["metric"]["value"] = 300.0
    derive_rates(low, spec)
    assert PEAK_EXCEEDED not in low["flags"] and low["derived"]["pct_peak"] == pytest.approx(75.0)
    a = make_run([high], spec_id="mi300x")
    a["fingerprint"]["spec"] = spec
    b = make_run([make_result("gemm", {"m": 1}, noisy(520.0, 0.01, 9, 2), info={"peak_kind": "flop:bf16"},
                              work={"flop": 1e12})], spec_id="mi300x", run_id="b")
    a["results"][0]["flags"] = []                                     # an older document: the view flags it too
    out = compare_sides(side_from_runs([a], "A"), side_from_runs([b], "B"), 0.05, PRICES)
    (row,) = out["rows"]
    assert row["a_pct_peak"] is None and row["ratio_per_peak"] is None and PEAK_EXCEEDED in row["flags"]
    assert 0 < row["b_pct_peak"] <= 100
    db = str(tmp_path / "s.db")
    with Store(db) as store:
        store.save_run(a)
    frame = gpuparity.load(db)
    assert math.isnan(frame["pct_peak"].iloc[0]) and PEAK_EXCEEDED in frame["flags"].iloc[0]


def test_pct_of_peak_on_scalars_and_arrays():
    import numpy as np

    assert pct_of_peak(50.0, 200.0) == (25.0, False)
    assert pct_of_peak(300.0, 200.0) == (None, True)
    assert pct_of_peak(1.0, float("nan")) == (None, False)
    pct, over = pct_of_peak(np.array([50.0, 300.0, 1.0]), np.array([200.0, 200.0, np.nan]))
    assert pct[0] == 25.0 and np.isnan(pct[1:]).all() and over.tolist() == [False, True, False]


def test_cpu_peaks_count_the_units_the_cpu_lists():
    base = {"cores": 4, "max_mhz": 2000, "model": "x"}
    amx = cpu_spec(dict(base, isa=["avx512f", "avx512_bf16", "amx_bf16", "amx_int8", "avx512_fp16", "amx_tile"]))
    assert amx["fp32_tflops"] == pytest.approx(4 * 2.0 * 64 / 1000)
    assert amx["bf16_tflops"] == pytest.approx(4 * 2.0 * 1024 / 1000)         # AMX, not 2x the fp32 FMAs
    assert amx["int8_tops"] == pytest.approx(4 * 2.0 * 2048 / 1000)
    assert amx["fp16_tflops"] == pytest.approx(2 * amx["fp32_tflops"])          # AVX-512 FP16 (no AMX-FP16)
    avx = cpu_spec(dict(base, isa=["avx512f", "avx512_bf16"]))
    assert avx["bf16_tflops"] == pytest.approx(2 * avx["fp32_tflops"]) and avx["int8_tops"] is None
    plain = cpu_spec(dict(base, isa=["avx2", "fma"]))
    assert plain["bf16_tflops"] is None and plain["fp16_tflops"] is None
    assert "unknown" in plain["peak_basis"]["bf16"] and "amx_bf16" in amx["peak_basis"]["bf16"]
