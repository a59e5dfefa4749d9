"""Comparable by construction: `plan` gives the same keys on every GPU of the spec table, from the
spec alone, and `run --like` measures exactly the cases of a run document or plan file."""

from __future__ import annotations

import json
import sys
from itertools import combinations

import pytest

from gpuparity.execute.plan import cases_for, spec_context
from gpuparity.execute.suites import workloads_for

GPUS = ("h100-sxm", "h200-sxm", "b200", "mi300x", "mi325x", "mi355x")


def planned(spec: str, suite: str) -> dict[tuple, dict[str, str | None]]:
    """{(workload, dtype): {key: skip reason or None}} of a suite's plan for a spec."""
    out: dict[tuple, dict] = {}
    for c in cases_for(workloads_for(suite), suite, spec_context(spec, suite)):
        out.setdefault((c.workload.name, c.params.get("dtype")), {})[c.key] = c.skip
    return out


@pytest.mark.parametrize("suite", ["quick", "standard"])
def test_every_gpu_of_the_spec_table_plans_the_same_keys(suite):
    plans = {gpu: planned(gpu, suite) for gpu in GPUS}
    for a, b in combinations(GPUS, 2):
        pa, pb = plans[a], plans[b]
        both = [wd for wd in pa.keys() & pb.keys()
                if any(s is None for s in pa[wd].values()) and any(s is None for s in pb[wd].values())]
        assert both, (a, b)
        for wd in both:                         # every workload and dtype both sides run
            assert set(pa[wd]) == set(pb[wd]), (suite, a, b, wd)
        assert pa.keys() == pb.keys(), (a, b)    # and no workload or dtype is planned on one side only
    for plan in plans.values():                  # whatever a GPU lacks is there, skipped, with the reason
        assert all(isinstance(s, str) and s for cases in plan.values() for s in cases.values() if s is not None)
    skips = {gpu: {wd: why for wd, cases in plan.items() for why in cases.values() if why}
             for gpu, plan in plans.items()}
    assert "fp4" in str(skips["h200-sxm"].get(("gemm", "fp4"))) and ("gemm", "fp4") not in skips["b200"]
    assert "cuBLAS" in str(skips["mi300x"].get(("gemm", "fp8")))     # fast accumulation: NVIDIA only


def test_a_memory_key_is_the_same_on_an_h200_and_an_mi300x():
    """The bug that started it: the array size followed the device's cache (2^26 vs 2^28 elements)."""
    h200, mi300x = planned("h200-sxm", "quick"), planned("mi300x", "quick")
    assert h200[("memory", "fp32")] == mi300x[("memory", "fp32")]
    from gpuparity.platform.detect import INFINITY_CACHE_BYTES

    largest = max(INFINITY_CACHE_BYTES.values())                   # the largest cache the spec table knows
    for gpu in ("h100-sxm", "h200-sxm", "b200", "mi300x", "mi325x", "mi355x"):
        for suite in ("quick", "standard"):
            for c in cases_for(["memory"], suite, spec_context(gpu, suite)):
                if c.params["op"] not in ("h2d", "d2h"):
                    assert c.params["elements"] * 4 >= 4 * largest, (gpu, suite, c.params)


def test_gpu_quick_gemm_is_compute_bound_and_cpu_sizes_do_not_follow_the_cpu():
    gpu = [c.params for c in cases_for(["gemm"], "quick", spec_context("h100-sxm", "quick"))]
    assert min(p["m"] for p in gpu) >= 4096
    from gpuparity.workloads.base import Context

    cpu_ctx = spec_context("cpu", "quick")
    cpu = [c.params for c in cases_for(["gemm"], "quick", cpu_ctx)]
    bare = dict(cpu_ctx.fingerprint, cpu=dict(cpu_ctx.fingerprint["cpu"], isa=[], bf16_native=False,
                                               fp16_native=False))
    no_units = [c.params for c in cases_for(["gemm"], "quick", Context(fingerprint=bare, device="cpu", planned=True))]
    assert no_units == cpu           # a CPU with AMX and one without half-precision units: the same keys


def test_collective_sizes_are_the_suites_and_what_does_not_fit_is_skipped(monkeypatch):
    from gpuparity.platform import dist

    monkeypatch.setattr(dist, "initialized", lambda: True)     # as in a 2-rank torchrun job
    monkeypatch.setattr(dist, "world_size", lambda: 2)
    monkeypatch.setattr(dist, "nodes", lambda: 1)
    small = spec_context("rtx-4080", "comm")                     # 16 GB: 1/8 is 2 GB
    small.fingerprint["memory_bytes"] = 4 * 10**9                # a 4 GB part: 2 x 1 GiB buffers do not fit
    big = spec_context("mi325x", "comm")
    a, b = cases_for(["collectives"], "comm", small), cases_for(["collectives"], "comm", big)
    assert [c.key for c in a] == [c.key for c in b] and max(c.params["bytes"] for c in a) == 2**30
    assert all(c.skip is None for c in b)
    too_big = [c for c in a if c.skip]
    assert too_big and all(c.params["bytes"] * 2 > 0.5e9 and "1/8" in c.skip for c in too_big)


def test_plan_cli_from_the_spec_table_alone(cli):
    p = cli("plan", "gemm", "memory", "--spec", "mi300x", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["kind"] == "gpuparity-plan" and doc["spec_id"] == "mi300x" and doc["from_spec_table"]
    assert doc["estimate_s"][0] > 0 and doc["estimate_s"][1] >= doc["estimate_s"][0]
    skipped = {c["params"]["dtype"]: c["skip"] for c in doc["cases"] if c["skip"]}
    assert "fp4" in skipped and "empty datasheet cell" in skipped["fp4"]
    keys = {c["key"] for c in doc["cases"]}
    assert keys == {c.key for c in cases_for(["gemm", "memory"], "quick", spec_context("mi300x", "quick"))}
    table = cli("plan", "memory", "--spec", "h200-sxm")
    assert table.returncode == 0 and "measuring takes" in table.stdout and "h2d" in table.stdout
    bad = cli("plan", "--spec", "no-such-gpu")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown spec" in bad.stderr


def test_plan_from_the_spec_table_imports_no_torch():
    import subprocess

    code = ("import sys; from gpuparity.cli import main\n"
            "try:\n    main.main(['plan', '--spec', 'b200', '--suite', 'standard', '--json'])\n"
            "except SystemExit:\n    pass\n"
            "sys.stderr.write(str('torch' in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.stderr.strip().endswith("False"), p.stderr[-500:]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A quick run of a few workloads on this CPU (small sizes through --set)."""
    from conftest import run_cli

    folder = tmp_path_factory.mktemp("like")
    env = {"GPUPARITY_DB": str(folder / "s.db"), "GPUPARITY_SPOOL": str(folder / "spool")}
    out = str(folder / "a.json")
    p = run_cli("run", "gemm", "attention", "--dtype", "fp32,tf32", "--set", "m=96", "--set", "n=96",
                "--set", "k=96", "--set", "seq=64", "--trials", "2", "--in-process", "--json", out, env=env)
    assert p.returncode in (0, 1), p.stderr
    with open(out) as fh:
        return json.load(fh), out, env, folder


def test_run_like_a_run_document_measures_its_keys_and_compares_key_for_key(small_run, capsys):
    from conftest import run_cli
    from test_compare import main_inprocess

    doc, path, env, folder = small_run
    like = str(folder / "b.json")
    p = run_cli("run", "--like", path, "--in-process", "--json", like, env=env)
    assert p.returncode in (0, 1), p.stderr
    with open(like) as fh:
        again = json.load(fh)
    assert [r["key"] for r in again["results"]] == [r["key"] for r in doc["results"]]
    assert again["plan"]["trials"] == doc["plan"]["trials"] == 2
    assert again["plan"]["seed"] == doc["plan"]["seed"]              # its seed unless told
    assert again["like"]["source"] == f"run {doc['run_id']}"
    assert {r["key"]: r["status"] for r in again["results"]} == {r["key"]: r["status"] for r in doc["results"]}
    assert any(r["status"] == "skipped" and "TF32" in r["reason"] for r in again["results"])
    code, text, err = main_inprocess(["compare", path, like, "-f", "json"], capsys)
    assert code == 0, err
    result = json.loads(text)
    assert result["only_a"] == [] and result["only_b"] == []
    assert {r["key"] for r in result["rows"]} == {r["key"] for r in doc["results"] if r["status"] == "ok"}
    told = run_cli("run", "--like", path, "--seed", "7", "--in-process", "--no-store", "--json", "-", env=env)
    assert told.returncode in (0, 1), told.stderr
    assert json.loads(told.stdout)["plan"]["seed"] == 7


def test_run_like_a_plan_file_for_another_gpu(small_run, tmp_path, cli):
    _, _, env, _ = small_run
    p = cli("plan", "gemm", "--spec", "h100-sxm", "--dtype", "fp32,tf32,fp4", "--set", "m=64", "--set", "n=64",
            "--set", "k=64", "--json")
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    path = tmp_path / "plan.json"
    path.write_text(p.stdout)
    r = cli("run", "--like", str(path), "--no-store", "--json", "-", env=env)
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    assert [x["key"] for x in doc["results"]] == [c["key"] for c in plan["cases"]]
    status = {x["dtype"]: (x["status"], x["reason"]) for x in doc["results"]}
    assert status["fp32"][0] == "ok"
    assert status["tf32"][0] == "skipped" and "TF32" in status["tf32"][1]     # this machine's reason, not the plan's
    assert status["fp4"][0] == "skipped"


def test_run_like_lists_unknown_workloads_and_refuses_bad_files(small_run, tmp_path, cli):
    from gpuparity.results.schema import result_key

    _, _, env, _ = small_run
    params = {"size": 3, "dtype": "fp32"}
    plan = {"kind": "gpuparity-plan", "plan_version": 1, "suite": "quick", "trials": 1,
            "cases": [{"workload": "someone_elses", "category": "kernel", "params": params,
                       "key": result_key("someone_elses", params, "fp32")}]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(plan))
    path.with_name("ok.json").write_text(json.dumps(plan))
    r = cli("run", "--like", str(path), "--no-store", "--json", "-", env=env)
    doc = json.loads(r.stdout)
    assert [x["status"] for x in doc["results"]] == ["skipped"]
    assert "not known here" in doc["results"][0]["reason"] and r.returncode == 1    # no result is ok
    plan["cases"][0]["key"] = "0" * 16
    path.write_text(json.dumps(plan))
    bad = cli("run", "--like", str(path), "--no-store", env=env)
    assert bad.returncode == 2 and "is not the key of its parameters" in bad.stderr
    other = cli("run", "--like", str(path.with_name("ok.json")), "--suite", "standard", "--no-store", env=env)
    plan["suite"] = "huge"
    path.write_text(json.dumps(plan))
    bad = cli("run", "--like", str(path), "--no-store", env=env)
    assert bad.returncode == 2 and "suite" in bad.stderr and bad.stderr.count("\n") == 1
    assert other.returncode == 2 and "quick suite" in other.stderr


def test_plan_on_this_machine_is_what_run_measured(small_run, cli):
    doc, _, env, _ = small_run
    p = cli("plan", "gemm", "attention", "--dtype", "fp32,tf32", "--set", "m=96", "--set", "n=96", "--set", "k=96",
            "--set", "seq=64", "--json", env=env)
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    assert sorted(c["key"] for c in plan["cases"]) == sorted(r["key"] for r in doc["results"])
    skipped = {c["key"] for c in plan["cases"] if c["skip"]}
    assert skipped == {r["key"] for r in doc["results"] if r["status"] == "skipped"}
