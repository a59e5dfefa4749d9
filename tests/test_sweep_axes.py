"""A listed --set axis is expanded once: for every workload and every axis its cases hold, planning
`--set AXIS=v1,v2` gives exactly the cases of v1 and of v2 (never a cross of the list with itself,
as serving's concurrency list once did: 25 points for 5), or a one-line refusal."""

from __future__ import annotations

import pytest
from conftest import run_cli

from gpuparity.errors import UserError
from gpuparity.execute.plan import cases_for, spec_context
from gpuparity.workloads.base import registry

# serving plans without a server (port 9: refused) and without loading transformers for a tokenizer
NO_SERVER = {"url": "http://127.0.0.1:9/v1", "model": "x", "tokenizer": "none"}


def _suite(w) -> str:
    return "quick" if "quick" in w.suites or not w.suites else w.suites[0]


def _plan(name: str, spec: str, sets: dict) -> set[str]:
    w = registry()[name]
    opts = dict(NO_SERVER, **sets) if name == "serving" else dict(sets)
    ctx = spec_context(spec, _suite(w), opts)
    return {c.key for c in cases_for([name], _suite(w), ctx, opts, judge=False)}


def _two_values(example) -> list[str] | None:
    if isinstance(example, bool):
        return ["true", "false"]
    if isinstance(example, int):
        return [str(example or 1), str(2 * (example or 1))]
    if isinstance(example, float):
        return [repr(example or 1.0), repr(2 * (example or 1.0))]
    return None                 # names (net, model, op): lists of those are checked by each workload


def _axes(name: str, spec: str) -> list[tuple[str, object]]:
    w = registry()[name]
    opts = dict(NO_SERVER) if name == "serving" else {}
    seen: dict = {}
    for c in cases_for([name], _suite(w), spec_context(spec, _suite(w), opts), opts, judge=False):
        for k, v in c.params.items():
            if k != "dtype":
                seen.setdefault(k, v)
    return sorted(seen.items())


@pytest.mark.parametrize("spec", ["cpu", "h100-sxm"])
@pytest.mark.parametrize("name", sorted(registry()))
def test_every_listed_axis_plans_the_union_of_its_values(name, spec):
    checked = 0
    for axis, example in _axes(name, spec):
        values = _two_values(example)
        if values is None:
            continue
        try:
            both = _plan(name, spec, {axis: ",".join(values)})
        except UserError as exc:                # an axis that takes one value says so in one line
            assert "\n" not in str(exc) and axis in str(exc), (name, axis, exc)
            continue
        one, two = (_plan(name, spec, {axis: v}) for v in values)
        assert both == one | two, (name, spec, axis, len(one), len(two), len(both))
        checked += 1
    assert checked or name in ("gemm_search",), f"{name}: no listed axis was checked"


def test_the_readme_sweep_plans_five_points_with_ten_prompts_per_client():

    ctx = spec_context("cpu", "quick", dict(NO_SERVER, concurrency="4,8,16,32,64"))
    cases = cases_for(["serving"], "quick", ctx, ctx.options, judge=False)
    assert [(c.params["concurrency"], c.params["num_prompts"]) for c in cases] == \
        [(4, 40), (8, 80), (16, 160), (32, 320), (64, 640)]
    sets = dict(NO_SERVER, concurrency="1,2", input_len="8,16", output_len="4,8", num_prompts="7")
    ctx = spec_context("cpu", "quick", sets)
    cases = cases_for(["serving"], "quick", ctx, sets, judge=False)
    assert len(cases) == 8 and {c.params["num_prompts"] for c in cases} == {7}
    sets = dict(NO_SERVER, request_rate="1,2,inf", max_concurrency="8")
    ctx = spec_context("cpu", "quick", sets)
    cases = cases_for(["serving"], "quick", ctx, sets, judge=False)
    assert [c.params["request_rate"] for c in cases] == [1.0, 2.0, "inf"]
    assert {c.params["num_prompts"] for c in cases} == {80}


def test_plan_serving_shows_five_points(tmp_path):
    p = run_cli("plan", "serving", "--spec", "cpu", "--set", "url=http://127.0.0.1:9/v1", "--set", "model=x", "--set", "tokenizer=none",
                "--set", "concurrency=4,8,16,32,64", env={"GPUPARITY_DB": str(tmp_path / "s.db")})
    assert p.returncode == 0, p.stderr
    assert "5 cases (5 run, 0 skipped)" in p.stdout
    for c in (4, 8, 16, 32, 64):
        assert f"concurrency={c} num_prompts={10 * c}" in p.stdout
    p = run_cli("plan", "serving", "--set", "url=http://127.0.0.1:9/v1", "--set", "num_prompts=10,20",
                env={"GPUPARITY_DB": str(tmp_path / "s.db")})
    assert p.returncode == 2 and "num_prompts= takes one value" in p.stderr and "Traceback" not in p.stderr
