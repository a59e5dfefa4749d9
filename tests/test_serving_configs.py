"""The equal-interactivity table over each side's configurations, as InferenceX compares: a side's
envelope is over every configuration it ran (server identities: TP, precision, engine, GPUs), each
level names the configuration that gives each side's envelope there, runs of one configuration are
repeats (their intervals from them) and different configurations are never pooled as repeats; a
single-configuration side gives the figures it gave before; chart points are named by the server's
configuration."""

from __future__ import annotations

import numpy as np
import pytest
from test_compare import make_result, make_run, noisy

from gpuparity.comparison.compare import compare_sides
from gpuparity.comparison.envelope import envelope, levels_between, throughput_at
from gpuparity.comparison.sides import side_from_runs

TP8 = {"engine": "vllm", "engine_version": "0.11.0", "model": "meta-llama/Llama-3.1-70B-Instruct", "dtype": "bfloat16",
       "quantization": "none", "tensor_parallel": 8, "gpus": 8}
TP2_FP8 = dict(TP8, dtype="bfloat16", quantization="fp8", tensor_parallel=2, gpus=2)
SGLANG = dict(TP8, engine="sglang", engine_version="0.5.4")
NAMES = {"tp8": "vllm 0.11.0 bf16 TP8 8 GPUs", "tp2": "vllm 0.11.0 bf16 fp8 TP2 2 GPUs"}


def sweep(run_id: str, ident: dict | None, tput: float, inter: float, loads, day: int, wobble: float = 0.0) -> dict:
    """One run of a concurrency sweep on one server: throughput per GPU tput x c^0.7 at
    interactivity inter / sqrt(c), one round per point (times exp(wobble): a repeat's own draw)."""
    results = []
    for c in loads:
        x, y = inter / c ** 0.5 * np.exp(wobble), tput * c ** 0.7 * np.exp(wobble)
        s = {"completed": 8 * c, "failed": 0, "errors": 0, "timeouts": 0, "gpus": 1, "interactivity": x,
             "throughput_per_gpu": y, "output_throughput_per_gpu": y, "total_throughput_per_gpu": 2 * y,
             "log_se": 0.02, "interactivity_log_se": 0.01}
        info = {"curve_key": "random in=1024 out=1024", "serving": s, "server_identity": ident}
        results.append(make_result("serving", {"concurrency": c}, noisy(y, 0.01, 5, c), dtype=None,
                                   unit="tokens/s/GPU", category="serving", info=info))
    return make_run(results, run_id=run_id, spec_id="h100-sxm", started_at=f"2026-04-0{day}T00:00:00+00:00")


def test_the_table_follows_each_side_s_envelope_over_its_configurations():
    # A: TP8 bf16 is the envelope at high interactivity (7.5..30 tok/s/user), TP2 fp8 below 6.2
    tp8 = [(60 / c ** 0.5, 40 * c ** 0.7) for c in (4, 16, 64)]
    tp2 = [(35 / c ** 0.5, 70 * c ** 0.7) for c in (32, 64, 128)]
    a = side_from_runs([sweep("a-tp8", TP8, 40, 60, (4, 16, 64), 1), sweep("a-tp2", TP2_FP8, 70, 35, (32, 64, 128), 2)])
    b = side_from_runs([sweep("b", SGLANG, 50, 70, (4, 16, 64, 256, 512), 3)], "B")
    out = compare_sides(a, b, cross_config=True)
    levels = [e for e in out["serving"] if e.get("interactivity")]
    assert [e["interactivity"] for e in levels] == pytest.approx(levels_between(35 / 128 ** 0.5, 30, 5).tolist())
    # each level: the ratio of the two envelopes, A's over both configurations (c=64 of TP8 and of TP2
    # are two points, not repeats of one: pooled they would make one point between them)
    env_a = envelope(tp8 + tp2)
    env_b = envelope([(70 / c ** 0.5, 50 * c ** 0.7) for c in (4, 16, 64, 256, 512)])
    def at(env, x):        # x within the envelope's range to its last bit (the levels come from exp(log x))
        return throughput_at(env, [min(max(x, env[0][0]), env[0][-1])])[0]

    for e in levels:
        expect = at(env_b, e["interactivity"]) / at(env_a, e["interactivity"])
        assert e["ratio"] == pytest.approx(expect, rel=1e-9)
        assert e["ci_low"] < e["ratio"] < e["ci_high"]
    for e in levels:
        assert e["a_configs"] == [NAMES["tp8"], NAMES["tp2"]] and e["b_configs"] == ["sglang 0.5.4 bf16 TP8 8 GPUs"]
        assert e["b_config"] == "sglang 0.5.4 bf16 TP8 8 GPUs"
    assert [e["a_config"] for e in levels] == [NAMES["tp2"], NAMES["tp2"], NAMES["tp8"], NAMES["tp8"], NAMES["tp8"]]
    # read between the two configurations' points: both named
    from gpuparity.comparison.serving_compare import serving_at_equal_interactivity

    nine = serving_at_equal_interactivity(a, b, 0.05, levels=9, draws=200)
    assert f"between {NAMES['tp2']} and {NAMES['tp8']}" in [e["a_config"] for e in nine]
    # the per-key row of a load both configurations ran pools them: its verdict is held, with why
    rows = {r["params"]["concurrency"]: r for r in out["rows"]}
    assert rows[64]["verdict"] == "inconclusive" and rows[64]["held"].startswith("served A in 2 configurations")
    assert not (rows[4].get("held") or "").startswith("served")
    # every view names the configuration at each level
    from gpuparity.report.markdown import compare_markdown

    text = compare_markdown(out)
    assert "| A config | B config |" in text and f"| {NAMES['tp2']} | sglang 0.5.4 bf16 TP8 8 GPUs |" in text
    # the chart's points are named by their server's configuration (report/serving.config_label)
    from gpuparity.report.serving import config_curves

    (points,) = config_curves(a).values()
    assert {p["config"] for p in points} == set(NAMES.values())


def test_a_single_configuration_side_gives_the_figures_it_gave_before():
    """Two runs of one server are repeats of one configuration: each point's trials are both runs'
    (the interval from them), exactly as a side without identities (the path before identities)."""
    from gpuparity.comparison.serving_compare import serving_at_equal_interactivity

    def a_side(ident):
        return side_from_runs([sweep("a1", ident, 40, 60, (1, 4, 16, 64), 1, 0.03),
                               sweep("a2", ident, 40, 60, (1, 4, 16, 64), 2, -0.03)])

    b = side_from_runs([sweep("b", None, 50, 70, (4, 16, 64, 256), 3)], "B")
    named, plain = (serving_at_equal_interactivity(a_side(i), b, 0.05, draws=300) for i in (TP8, None))
    assert named and len(named) == len(plain)
    figures = ("interactivity", "a_throughput", "b_throughput", "ratio", "ci_low", "ci_high", "verdict", "a_points",
               "a_trials", "ci_basis")
    for n, p in zip(named, plain, strict=True):
        assert {k: n[k] for k in figures} == {k: p[k] for k in figures}
        assert n["a_trials"] == 8 and n["ci_basis"]["a"] == "trials" and n["a_points"] == 4
        assert n["a_config"] == NAMES["tp8"] and p["a_config"] is None and n["b_config"] is None
    # the repeats' geometric mean is the point: at A's lowest interactivity (c=64) its figure is the curve's own
    assert named[0]["interactivity"] == pytest.approx(7.5) and named[0]["a_throughput"] == pytest.approx(40 * 64 ** 0.7)
    # a label alone names a configuration: two labelled runs without identities are two configurations
    labelled = [sweep("l1", None, 40, 60, (4, 16), 1), sweep("l2", None, 70, 35, (16, 64), 2)]
    labelled[0]["label"], labelled[1]["label"] = "tp8", "tp2"
    entries = serving_at_equal_interactivity(side_from_runs(labelled), b, 0.05, draws=100)
    assert {e["a_config"] for e in entries} <= {"tp8", "tp2", "between tp2 and tp8"} and entries[0]["a_configs"] == [
        "tp8", "tp2"]
    assert np.isfinite([e["ratio"] for e in entries]).all()


def test_a_side_s_accuracy_evals_count_every_run_of_one_server():
    """Each run's eval counts once per run (the run each result came from, not the side's newest), and
    one server spelled two ways (bfloat16 / bf16) is one configuration, as the envelope reads it."""
    from gpuparity.comparison.server_checks import pooled, side_servers

    runs = []
    for k, (dtype, correct) in enumerate((("bfloat16", 9), ("bf16", 11)), start=1):
        run = sweep(f"a{k}", dict(TP8, dtype=dtype), 40, 60, (4, 16), k)
        for r in run["results"]:
            r["info"]["accuracy"] = {"eval": "gpuparity-basic", "version": 1, "seed": 0, "correct": correct,
                                     "answered": 16}
        runs.append(run)
    found = side_servers(side_from_runs(runs))
    assert len(found["identities"]) == 1
    summed = pooled(found["evals"])
    assert (summed["runs"], summed["correct"], summed["answered"]) == (2, 20, 32)
