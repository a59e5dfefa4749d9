"""Planning: the cases a run measures, with their keys, before anything is measured.

One function builds every run's case list (`cases_for`): `gpuparity run` measures what it
returns and `gpuparity plan` prints it, so the two cannot disagree. Its context comes from this
machine (runner.build_context) or from the spec table alone (`spec_context`: no device, no torch):
then a case is skipped only where the spec says the hardware lacks the units (an empty datasheet
cell), never for this machine's software.

A case's key (results.schema.result_key) hashes the workload and its parameters, so parameters
hold only what defines the work: suite constants per device class (CPU or GPU), never a figure
read from the device (cache or memory size, SM count). What a device makes a workload choose
(operand rotation copies, an array's size over this cache) goes into the result's info. A GPU
plan for an H200 and one for an MI300X therefore hold the same keys; where one lacks a unit the
case is there, skipped, with the reason.

`run --like FILE` takes its cases from a run document or a `plan --json` file (`load_like`,
`like_cases`): the same workloads, parameters and keys, that file's suite, trials and seed; a
workload this installation does not know is listed as skipped with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuparity.errors import UserError

PLAN_KIND = "gpuparity-plan"
PLAN_VERSION = 1


@dataclass
class Case:
    workload: Any                  # workloads.base.Workload
    params: dict
    key: str
    skip: str | None = None        # why this hardware cannot run it (None: it runs, or was not judged)


def cases_for(names: list[str], suite: str, ctx, sets: dict | None = None, judge: bool = True) -> list[Case]:
    """The cases of these workloads in this suite, in order, each key once (a run holds one result
    per key, so a workload named twice is measured once). `sets` (--set values that name a
    workload's axes) replace those axes in every case of that workload (runner.apply_sets), except
    the axes the workload expands itself (Workload.own_sets): a listed axis is expanded once.
    judge: ask each workload whether it runs there (supports()); the runner asks again per trial."""
    from gpuparity.execute.runner import apply_sets
    from gpuparity.results.schema import result_key
    from gpuparity.workloads.base import get

    out, seen = [], set()
    for name in names:
        w = get(name)
        own = set(getattr(w, "own_sets", ()))
        for params in apply_sets(w.cases(suite, ctx), {k: v for k, v in (sets or {}).items() if k not in own}):
            key = result_key(w.name, params, params.get("dtype"))
            if key in seen:
                continue
            seen.add(key)
            skip = None
            if judge:
                ok, why = w.supports(params, ctx)
                skip = None if ok else why
            out.append(Case(w, params, key, skip))
    return out


def spec_context(spec_id: str, suite: str, options: dict | None = None):
    """A device-less Context for a spec-table row ('h200-sxm', 'MI300X', ...), or for this
    machine's CPU ('cpu'): what a run on that hardware would see, without its software."""
    from gpuparity.measure.loop import LoopConfig
    from gpuparity.platform.specs import all_specs, lookup
    from gpuparity.workloads.base import Context

    options = dict(options or {})
    if spec_id.strip().lower() == "cpu":
        from gpuparity.platform.detect import cpu_info
        from gpuparity.platform.specs import cpu_spec

        cpu = cpu_info()
        fp = {"backend": "cpu", "vendor": cpu.get("vendor") or "cpu", "product": cpu.get("model"),
              "arch_target": cpu.get("arch"), "cpu": cpu, "spec": cpu_spec(cpu), "device_count": 0}
        return Context(fingerprint=fp, device="cpu", suite=suite, loop=LoopConfig.for_suite(suite, "cpu"),
                       options=options, planned=True)
    spec = lookup(spec_id)
    if spec is None:
        raise UserError(f"unknown spec '{spec_id}'; known: cpu, {', '.join(all_specs())} (gpuparity specs)")
    from gpuparity.platform.detect import gpu_llc_bytes

    memory = int((spec.get("memory_gb") or 0) * 1e9) or None
    device = {"index": 0, "name": spec["product"], "arch_target": spec["target"], "memory_bytes": memory,
              "llc_bytes": gpu_llc_bytes(spec["target"], None)}
    fp = {"backend": "rocm" if spec["vendor"] == "AMD" else "cuda", "vendor": spec["vendor"],
          "product": spec["product"], "arch_target": spec["target"], "spec": spec, "devices": [device],
          "device_count": 1, "memory_bytes": memory}
    return Context(fingerprint=fp, device="cuda", suite=suite, loop=LoopConfig.for_suite(suite, "cuda"),
                   options=options, planned=True)


def case_seconds(case: Case, ctx) -> tuple[float, float]:
    """(least, most) seconds one trial of a case measures for, by the loop's limits (set-up, model
    loading and the correctness check come on top); (0, 0) for a skipped case."""
    if case.skip:
        return 0.0, 0.0
    return case.workload.expected_s(case.params, ctx)


def plan_document(cases: list[Case], ctx, suite: str, trials: int, seed: int | None) -> dict:
    """What `plan --json` writes and `run --like` reads: the cases with keys and skips, the suite,
    trials and seed, and the estimated duration."""
    from gpuparity.results.schema import now_iso
    from gpuparity.version import BENCHMARK_VERSION, __version__

    spans = [case_seconds(c, ctx) for c in cases]
    options = {k: v for k, v in (ctx.options or {}).items() if k not in ("workload_files", "power_required")}
    return {
        "kind": PLAN_KIND, "plan_version": PLAN_VERSION, "benchmark_version": BENCHMARK_VERSION,
        "gpuparity_version": __version__, "created_at": now_iso(), "suite": suite,
        "spec_id": (ctx.spec or {}).get("id"), "product": ctx.fingerprint.get("product"),
        "backend": ctx.fingerprint.get("backend"), "from_spec_table": bool(ctx.planned),
        "trials": trials, "seed": seed, "options": options,
        "estimate_s": [round(trials * sum(s[0] for s in spans), 1), round(trials * sum(s[1] for s in spans), 1)],
        "cases": [{"workload": c.workload.name, "category": c.workload.category, "params": c.params, "key": c.key,
                   "skip": c.skip, "estimate_s": [round(a, 2), round(b, 2)]} for c, (a, b) in zip(cases, spans,
                                                                                              strict=True)],
    }


# -- run --like ---------------------------------------------------------------------------------
@dataclass
class Like:
    """The cases of a run document or plan file, as `run --like` measures them."""
    path: str
    source: str                     # "run <run id>" or "plan for <spec>"
    suite: str
    trials: int
    seed: int | None
    benchmark_version: int | None
    cases: list[tuple[str, str | None, dict, str]] = field(default_factory=list)   # workload, category, params, key


def _plan_model():
    """The pydantic model of a plan file (validate.parse checks it before anything is used)."""
    from typing import Annotated, Literal, Optional

    from pydantic import BaseModel, ConfigDict, Field

    from gpuparity.results.document import KEY, Category, Name, Scalar

    class PlannedCase(BaseModel):
        model_config = ConfigDict(extra="allow", strict=True)
        workload: Name
        category: Optional[Category] = None
        params: dict[Annotated[str, Field(min_length=1, max_length=200)], Scalar]
        key: Annotated[str, Field(pattern=KEY)]
        skip: Optional[Annotated[str, Field(max_length=10_000)]] = None

    class PlanFile(BaseModel):
        model_config = ConfigDict(extra="allow", strict=True)
        kind: Literal["gpuparity-plan"]
        plan_version: Literal[1]
        benchmark_version: Optional[Annotated[int, Field(ge=0)]] = None
        suite: Literal["quick", "standard", "full", "comm"]
        trials: Annotated[int, Field(ge=1, le=100)] = 1
        seed: Optional[Annotated[int, Field(ge=0, le=2**31 - 1)]] = None
        spec_id: Optional[Annotated[str, Field(max_length=200)]] = None
        cases: Annotated[list[PlannedCase], Field(max_length=100_000)]

    return PlanFile


def load_like(path: str) -> Like:
    """A run document or a plan file, validated, as the cases to measure (one-line error if it is
    neither)."""
    from gpuparity.results.document import check_bounds, validate_run
    from gpuparity.validate import load_json, parse

    doc = load_json(path, None, "--like file")
    if isinstance(doc, dict) and doc.get("kind") == PLAN_KIND:
        check_bounds(doc, path)
        plan = parse(_plan_model(), doc, path)
        cases = [(c.workload, c.category, dict(c.params), c.key) for c in plan.cases]
        return Like(path, f"plan for {plan.spec_id or 'this machine'}", plan.suite, plan.trials, plan.seed,
                    plan.benchmark_version, cases)
    if not isinstance(doc, dict) or "schema_version" not in doc:
        raise UserError(f"{path}: --like takes a run document (run --json, export) or a plan file (plan --json)")
    validate_run(doc, path)
    info = doc.get("plan") if isinstance(doc.get("plan"), dict) else {}
    trials = info.get("trials")
    if not isinstance(trials, int) or not 1 <= trials <= 100:
        trials = max([len(r.get("trials") or []) for r in doc["results"]] + [1])
    seed = info.get("seed")
    seed = seed if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**31 else None
    suite = doc.get("suite") if doc.get("suite") in ("quick", "standard", "full", "comm") else "quick"
    cases = [(r["workload"], r.get("category"), dict(r["params"]), r["key"]) for r in doc["results"]]
    return Like(path, f"run {doc['run_id']}", suite, min(trials, 100), seed, doc.get("benchmark_version"), cases)


class Unknown:
    """A workload named in a --like file that this installation does not have: its case is
    recorded as skipped with the reason, never run."""

    def __init__(self, name: str, category: str | None):
        self.name, self.category = name, category or "kernel"
        self.reason = f"workload '{name}' is not known here (a plugin, or --workload-file FILE, defines it)"

    def result(self, params: dict) -> dict:
        from gpuparity.results.schema import mark, new_result

        return mark(new_result(self.name, self.category, params, params.get("dtype")), "skipped", self.reason)


def like_cases(like: Like, ctx=None) -> list[Case]:
    """The --like file's cases on this machine, in its order: each key recomputed from its
    workload and parameters must be the file's (else the file was made by another key scheme or
    edited); with ctx, each parameter of a known workload passes the checks a --set value passes
    (one of its axes, of the suite's type and range, in its choices); a workload unknown here is
    an `Unknown` (skipped)."""
    from gpuparity.results.schema import result_key
    from gpuparity.workloads.base import registry

    known = registry()
    examples: dict[str, dict] = {}
    out, seen = [], set()
    for i, (name, category, params, key) in enumerate(like.cases):
        if result_key(name, params, params.get("dtype")) != key:
            raise UserError(f"{like.path}: case {i + 1} ({name}): its key {key} is not the key of its parameters "
                            "(a file from another version, or edited)")
        if ctx is not None and name in known:
            if name not in examples:
                examples[name] = _examples(known[name], [like.suite], ctx)
            if set(params) - set(examples[name]):      # a parameter of another suite's cases
                examples[name] = _examples(known[name], [like.suite, "quick", "standard", "full", "comm"], ctx)
            _check_like_params(known[name], params, examples[name], f"{like.path}: case {i + 1} ({name})")
        if key in seen:
            continue
        seen.add(key)
        w = known.get(name)
        if w is None:
            w = Unknown(name, category)
            out.append(Case(w, params, key, w.reason))
        else:
            out.append(Case(w, params, key))
    return out


def _examples(workload, suites: list[str], ctx) -> dict:
    """Per parameter a workload's cases take in these suites: an example value (the first seen)."""
    out: dict = {}
    for name in dict.fromkeys(suites):
        try:
            cases = workload.cases(name, ctx)
        except Exception:  # noqa: BLE001 - a suite this workload does not plan for this device
            continue
        for case in cases:
            for k, v in case.items():
                out.setdefault(k, v)
    return out


def _check_like_params(workload, params: dict, examples: dict, where: str) -> None:
    """A --like case's parameters as --set would take them: names of the workload's parameters,
    each of the type and range the suite uses (a size >= 1, a finite number) and in its choices."""
    from gpuparity.execute.runner import coerce

    axes = {n.strip() for k in workload.axes for n in k.split(",") if n.strip()}
    for k, v in params.items():
        if k not in examples and k not in axes:
            raise UserError(f"{where}: '{k}' is not a parameter of {workload.name} (the file was edited, or made by "
                            "another version)")
        example = examples.get(k)
        if k == "dtype" or example is None:
            continue
        kind = bool if isinstance(example, bool) else int if isinstance(example, int) else \
            float if isinstance(example, float) else str
        fits = (isinstance(v, bool) if kind is bool else isinstance(v, int) and not isinstance(v, bool)
                if kind is int else isinstance(v, (int, float)) and not isinstance(v, bool) if kind is float
                else isinstance(v, str))
        if not fits:
            raise UserError(f"{where}: {k}={v!r}: {workload.name} takes {k} as {kind.__name__}, like {example!r}")
        try:
            coerce(example, str(v), k)
        except UserError as exc:
            raise UserError(f"{where}: {k}={v!r}: {str(exc).split(': ', 1)[-1]}") from None
        allowed = getattr(workload, "choices", {}).get(k)
        if allowed and v not in allowed:
            raise UserError(f"{where}: {k}={v!r}: {workload.name} takes {k} in {', '.join(allowed)}")
