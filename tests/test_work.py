"""results/work.py: one work function per built-in workload, used by the workload when it measures
and by import when a document comes in (a stated work that is not what the params give is refused)."""

from __future__ import annotations

import copy
import gzip
import importlib
import json
import os

import pytest
from test_compare import main_inprocess

from gpuparity.execute.plan import spec_context
from gpuparity.results.work import WORK, WORK_UNCHECKED, train_flops_per_token, work_of, work_problem
from gpuparity.workloads.base import BUILTIN_MODULES

QUICK_RUN = os.path.join(os.path.dirname(__file__), "data", "quick-run-cpu.json.gz")
WORKLOADS = os.path.join(os.path.dirname(__file__), "data", "slow_workloads.py")


def builtins() -> dict:
    out = {}
    for mod in BUILTIN_MODULES:
        for w in importlib.import_module(f"gpuparity.workloads.{mod}").WORKLOADS:
            out[w.name] = w
    return out


def test_every_built_in_workload_has_a_work_function_and_every_case_it_makes_gets_its_work():
    """A built-in workload added without a work function, or a function that cannot read the params
    its workload writes (the check would then quietly pass), fails here: every case of every
    suite, on a CPU and on two GPUs of the spec table."""
    ws = builtins()
    assert sorted(ws) == sorted(WORK)
    seen = 0
    for spec in ("cpu", "h200-sxm", "mi300x"):
        for suite in ("quick", "standard", "full", "comm"):
            ctx = spec_context(spec, suite)
            for name, w in ws.items():
                if suite not in w.suites:
                    continue
                for params in w.cases(suite, ctx):
                    info = {"best_shape": {"m": 1024, "n": 2048, "k": 512}} if name == "gemm_search" else {}
                    work = work_of(name, params, info)
                    assert work is not None, (spec, suite, name, params)
                    idle = name == "serving" or (name == "collectives" and params["ranks"] == 1)   # no bus bytes
                    assert idle or any(v > 0 for v in work.values()), (name, params, work)
                    seen += 1
    assert seen > 300


def test_the_recorded_run_states_the_work_its_params_give():
    """What the workloads measured and wrote (tests/data: a real CPU quick run) is what the work
    functions give, result by result: gemm, gemm_search, memory, attention, moe, conv, llm, training."""
    with gzip.open(QUICK_RUN, "rt") as fh:
        run = json.load(fh)
    ok = [r for r in run["results"] if r["status"] == "ok"]
    assert {r["workload"] for r in ok} >= {"gemm", "gemm_search", "memory", "attention", "moe", "conv", "llm",
                                           "training"}
    for r in ok:
        assert work_of(r["workload"], r["params"], r["info"]) == r["work"], r["workload"]
        assert work_problem(r) is None
    training = next(r for r in ok if r["workload"] == "training")
    assert train_flops_per_token(training["params"]) == training["info"]["flops_per_token"]


@pytest.mark.parametrize("shape", [
    dict(hidden=128, layers=2, heads=4, kv_heads=0, ffn=0, vocab=4096, seq=128, batch=2),
    dict(hidden=256, layers=3, heads=8, kv_heads=2, ffn=100, vocab=1000, seq=64, batch=1),
    dict(hidden=96, layers=1, heads=3, kv_heads=1, ffn=0, vocab=77, seq=16, batch=3),
])
def test_the_training_formula_counts_the_linear_weights_of_the_decoder_built(shape):
    """The FLOP per token come from the shape alone (so import can check them); the decoder
    transformers builds for that shape has exactly the linear weights the formula counts."""
    pytest.importorskip("transformers")
    from gpuparity.workloads.training import TrainConfig, build_model, flops_per_token, matmul_params

    cfg = TrainConfig(**shape)
    model = build_model(cfg)
    d = shape["heads"] * (shape["hidden"] // shape["heads"])
    assert flops_per_token(model, cfg) == 6 * matmul_params(model) + 12 * shape["layers"] * d * shape["seq"]
    assert flops_per_token(model, cfg) == train_flops_per_token(shape)


@pytest.mark.parametrize("name, params", [
    ("gemm", {"m": 64, "n": 32, "k": 16, "layout": "nn", "dtype": "fp32"}),
    ("memory", {"op": "triad", "elements": 4096, "dtype": "fp32"}),
    ("attention", {"batch": 1, "heads": 2, "kv_heads": 1, "seq": 64, "head_dim": 16, "causal": True, "pass": "bwd",
                   "dtype": "fp32"}),
    ("conv", {"net": "resnet50", "layer": "res2_3x3", "batch": 1, "cin": 4, "cout": 8, "hw": 8, "kernel": 3,
              "stride": 1, "channels_last": False, "pass": "fwd", "dtype": "fp32"}),
    ("moe", {"preset": "mixtral-8x7b", "tokens": 16, "experts": 4, "top_k": 2, "hidden": 32, "ffn": 64, "shared": 1,
             "dtype": "fp32"}),
])
def test_a_workload_prepares_the_work_its_function_gives(name, params):
    ctx = spec_context("cpu", "quick")
    prepared = builtins()[name].prepare(params, ctx)
    try:
        assert prepared.work == work_of(name, params)
    finally:
        if prepared.teardown:
            prepared.teardown()


def result(workload: str, params: dict, work: dict, trials: list | None = None, info: dict | None = None) -> dict:
    return {"workload": workload, "params": params, "work": work, "info": info or {}, "trials": trials or []}


def test_work_problems_are_named():
    gemm = {"m": 512, "n": 512, "k": 512, "layout": "nn", "dtype": "fp32"}
    right = {"flop": 2.0 * 512**3}
    assert work_problem(result("gemm", gemm, right)) is None
    assert "work states {flop: 2.68435e+09}, but its params give {flop: 2.68435e+08}" in \
        work_problem(result("gemm", gemm, {"flop": 20.0 * 512**3}))
    assert "its params give" in work_problem(result("gemm", dict(gemm, m=4096), right))     # params changed, work not
    assert "its params give" in work_problem(result("gemm", gemm, {"flop": right["flop"], "bytes": 1.0}))
    assert work_problem(result("gemm", gemm, {})) is None                                   # states none: claims none
    trial = {"trial": 1, "status": "ok", "value": 1.0, "work": {"flop": 10 * right["flop"]}}
    assert work_problem(result("gemm", gemm, right, [trial])).startswith("trial 1: work states")
    # a user's workload, and params no case of the workload has (its key pairs with no real run): unchecked
    assert work_problem(result("my_kernel", {"n": 1}, {"flop": 1e30})) is None
    assert work_problem(result("gemm", {"m": 8}, {"flop": 1e30})) is None
    # collectives: bus bytes of the per-rank buffer, and the buffer and ranks its info states
    coll = {"op": "all_reduce", "bytes": 4096, "ranks": 4, "nodes": 1, "dtype": "fp32"}
    want = work_of("collectives", coll)
    assert want == {"bytes": 4096 * 2 * 3 / 4}
    assert work_problem(result("collectives", coll, want, info={"size_bytes": 4096, "world_size": 4})) is None
    assert "info.size_bytes states 40960" in work_problem(result("collectives", coll, want,
                                                                 info={"size_bytes": 40960}))


def test_a_shape_search_is_held_to_the_shape_each_trial_found():
    params = {"budget_s": 2.0, "dtype": "fp32"}
    shape = {"m": 640, "n": 640, "k": 640}
    work = {"flop": 2.0 * 640**3}
    t1 = {"trial": 1, "status": "ok", "value": 1.0, "work": work, "best_shape": shape}
    t2 = {"trial": 2, "status": "ok", "value": 1.0, "work": {"flop": 2.0 * 768**3},
          "best_shape": {"m": 768, "n": 768, "k": 768}}           # another trial, another search, another shape
    assert work_problem(result("gemm_search", params, work, [t1, t2], {"best_shape": shape})) is None
    assert "best_shape gives" in work_problem(result("gemm_search", params, work, [t1, dict(t2, work=work)],
                                                     {"best_shape": shape}))
    assert "info.best_shape" in work_problem(result("gemm_search", params, work, [t1]))     # the shape taken away
    big = {"flop": 2.0 * 6400 * 640 * 640}                                               # a shape 10x the found one
    assert "its params give" in work_problem(result("gemm_search", params, big, [], {"best_shape": shape}))
    t1_big = dict(t1, work=big, best_shape={"m": 6400, "n": 640, "k": 640})
    assert "the result (its first counted trial's)" in work_problem(
        result("gemm_search", params, work, [t1_big], {"best_shape": shape}))


def test_a_users_workload_is_flagged_work_unchecked(tmp_path, capsys):
    """Nothing here knows a user's workload's work: its results say so (flag work_unchecked)."""
    out = tmp_path / "run.json"
    code, _, err = main_inprocess(["run", "t_quick", "--workload-file", WORKLOADS, "--in-process", "--no-store",
                                   "--json", str(out), "--trials", "1"], capsys)
    assert code == 0, err
    (r,) = json.loads(out.read_text())["results"]
    assert r["status"] == "ok" and WORK_UNCHECKED in r["flags"]
    code, _, err = main_inprocess(["import", str(out), "--db", str(tmp_path / "s.db")], capsys)
    assert code == 0, err


def test_a_built_in_result_is_not_flagged(tmp_path, capsys):
    out = tmp_path / "run.json"
    code, _, err = main_inprocess(["run", "memory", "--set", "op=copy", "--set", "elements=65536", "--in-process",
                                   "--no-store", "--json", str(out), "--trials", "2"], capsys)
    assert code == 0, err
    (r,) = json.loads(out.read_text())["results"]
    assert WORK_UNCHECKED not in r["flags"]
    assert all(t["work"] == r["work"] == work_of("memory", r["params"]) for t in r["trials"])
    forged = copy.deepcopy(json.loads(out.read_text()))
    forged["results"][0]["trials"][1]["work"] = {"bytes": 10 * r["work"]["bytes"]}     # one trial's work only
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    code, _, err = main_inprocess(["import", "--recompute", str(path), "--db", str(tmp_path / "s.db")], capsys)
    assert code == 2 and "trial 2: work states" in err and len(err.strip().splitlines()) == 1
