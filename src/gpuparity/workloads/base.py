"""The Workload contract and registry.

A workload has a name, a category (kernel | model | serving | comm), axes of parameters, a
`supports()` that says why not, and `prepare()` returning one invocation plus the work it
does (FLOP, bytes, tokens). Throughput and % of peak are derived from that work and the
measured time in one place (results/figure.py), never typed in.

`execute()` measures one trial of a case; the runner calls it once per trial (fresh inputs each
time) and `merge_trials()` folds the trials into the case's result.

Workloads that drive their own measurement (a serving sweep, a collective across ranks)
override `execute()` and still fill the same result fields.
"""

from __future__ import annotations

import importlib
import importlib.util
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from gpuparity.results.figure import derive
from gpuparity.results.schema import mark, new_result
from gpuparity.results.work import WORK_UNCHECKED, checkable

CATEGORIES = ("kernel", "model", "serving", "comm")
# Built-in workload modules, imported on demand (each defines WORKLOADS = [instances]).
BUILTIN_MODULES = [
    "gemm", "gemm_search", "memory", "attention", "moe", "conv", "llm", "training", "serving.workload", "collectives",
    "scaling",
]


@dataclass
class Prepared:
    fn: Callable[[], Any]                  # one invocation
    work: dict                             # per invocation: {"flop": .., "bytes": .., "tokens": ..}
    peak: str | None = None                # "flop:<dtype>" or "bytes": the spec peak this is measured against
    check: Callable[[], tuple[bool, str]] | None = None   # whole output vs an fp64 reference, once;
    #                                        may raise measure.gates.GateSkip (the case does not apply)
    cold: bool = False                     # flush the last-level cache before every sample
    info: dict = field(default_factory=dict)
    teardown: Callable[[], None] | None = None
    capturable: bool = True                # may be replayed from a CUDA/HIP graph (no host-side state)
    cycle: int = 1                         # operand sets fn rotates through (blocks hold whole rotations)


@dataclass
class Context:
    fingerprint: dict
    device: str                            # "cpu" or "cuda" (ROCm also says cuda in torch)
    suite: str = "quick"
    loop: Any = None                       # measure.loop.LoopConfig
    telemetry: Any = None                  # measure.telemetry sampler or None
    profile_dir: str | None = None
    options: dict = field(default_factory=dict)
    progress: Callable[[str], None] | None = None   # live status line (the run's progress bar)
    trial: int | None = None                         # the trial being measured (1-based), set by the runner
    planned: bool = False    # built from the spec table alone (`gpuparity plan --spec`): no device, and
    #                          supports() answers from the spec, never from this machine's software

    def say(self, text: str) -> None:
        """Show a short live status for the case in progress (e.g. requests done, ETA)."""
        if self.progress is not None:
            self.progress(text)

    @property
    def spec(self) -> dict | None:
        return self.fingerprint.get("spec")

    @property
    def backend(self) -> str:
        return self.fingerprint.get("backend", "cpu")


class Workload:
    name: str = ""
    category: str = "kernel"
    description: str = ""
    axes: dict[str, str] = {}
    choices: dict[str, tuple[str, ...]] = {}    # axes with a fixed set of values: --set is checked up front
    suites: tuple[str, ...] = ("quick", "standard", "full")
    # Axes whose --set lists cases() expands itself from ctx.options (a value derived from them,
    # such as serving's num_prompts = 10 x concurrency, is then right per case): the runner's
    # apply_sets leaves them as cases() made them, so a listed axis is expanded once.
    own_sets: tuple[str, ...] = ()

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        """Parameter sets for a suite; each may hold 'dtype'."""
        raise NotImplementedError

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        return True, ""

    def prepare(self, params: dict, ctx: Context) -> Prepared:
        raise NotImplementedError

    def expected_s(self, params: dict, ctx: Context) -> tuple[float, float]:
        """(least, most) seconds one trial measures for, by the loop's limits (for `gpuparity plan`;
        set-up and the correctness check come on top). A workload with its own loop may say better."""
        loop = ctx.loop
        if loop is None:
            return 0.0, 0.0
        return loop.warmup_s + loop.min_time_s, loop.warmup_max_s + loop.max_time_s

    def begin(self, params: dict, ctx: Context) -> tuple[dict, bool]:
        """A fresh result for these params, already marked skipped (with the reason) if unsupported."""
        result = new_result(self.name, self.category, params, params.get("dtype"))
        ok, reason = self.supports(params, ctx)
        if not ok:
            mark(result, "skipped", reason)
        return result, ok

    def finalize(self, results: list[dict]) -> None:
        """After every case ran: figures that need several of this workload's results (e.g. a
        scaling efficiency against the 1-rank case). Cases run in a shuffled order, so a result
        must never depend on another having run before it."""

    def merge_trials(self, trials: list[dict], ctx: Context) -> dict:
        """One result from the results of a case's trials (in trial order); see merge_trials."""
        return merge_trials(trials, ctx.spec)

    def execute(self, params: dict, ctx: Context) -> dict:
        """One trial: prepare (fresh inputs), gate the whole output once, measure, derive."""
        from gpuparity.measure.gates import GateSkip
        from gpuparity.measure.loop import measure

        result, ok = self.begin(params, ctx)
        if not ok:
            return result
        prepared = self.prepare(params, ctx)
        try:
            result["info"].update(prepared.info)
            result["work"] = prepared.work
            if prepared.check is not None:
                try:
                    good, detail = prepared.check()
                except GateSkip as exc:
                    return mark(result, "skipped", str(exc))
                result["info"]["check"] = detail
                if not good:
                    return mark(result, "failed", f"wrong result: {detail}")
            cfg = ctx.loop
            if prepared.cold:
                from dataclasses import replace

                cfg = replace(cfg, cold=True, flush_bytes=flush_bytes(ctx))
            with telemetry_window(ctx, result) as tele:
                m = measure(prepared.fn, ctx.device, cfg, capturable=prepared.capturable, cycle=prepared.cycle,
                            probe=tele.snapshot, throttle=tele.snapshot if ctx.telemetry is not None else None)
                fill_measurement(result, m)
                tele.windows = m.windows
            derive(result, prepared.peak, ctx.spec)
            if ctx.profile_dir:
                from gpuparity.measure.profile import profile_result

                profile_result(result, prepared.fn, ctx)
        finally:
            if prepared.teardown:
                prepared.teardown()
        return result


class telemetry_window(dict):
    """Runs the context's telemetry sampler around a measured window (if any).

    Inside the block, fill the result and set `windows` to the measurement's busy intervals
    (measure.loop's Measurement.windows): the energy then covers exactly the timed samples and
    is divided by their invocations (measure.telemetry). Loops of their own pass `mark` as
    on_sample instead (one window from the first timed block to the last). `snapshot` reads the
    device's clocks and temperature now (measure()'s probe). The telemetry lands in
    result["telemetry"] (and in self["result"] without a result).
    """

    def __init__(self, ctx: Context, result: dict | None = None):
        super().__init__()
        self.ctx, self.result, self.marks = ctx, result, []
        self.windows: list[tuple[float, float]] | None = None

    def mark(self, _n: int = 0) -> None:
        self.marks.append(time.monotonic_ns())

    def snapshot(self):
        read = getattr(self.ctx.telemetry, "snapshot", None)
        return read() if callable(read) else None

    def __enter__(self) -> "telemetry_window":
        if self.ctx.telemetry is not None:
            self.ctx.telemetry.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.ctx.telemetry is not None:
            self["result"] = self.ctx.telemetry.stop(self.result, self.marks, self.windows)
            if self.result is not None:
                self.result["telemetry"] = self["result"]


def flush_bytes(ctx: Context) -> int:
    """2x the measured device's last-level cache (measure.operands.llc_bytes)."""
    from gpuparity.measure.operands import llc_bytes

    return 2 * llc_bytes(ctx.fingerprint, ctx.device)


def fill_measurement(result: dict, m) -> None:
    """A trial's samples, summary, flags and how it was measured (result["info"]): the timer and
    method (cpu | graph | queue, and why), invocations per sample, the first call's time (kept
    out of every sample), warm-up length and whether it reached steady blocks, and the device's
    clocks / temperature at the start and end of the timed window."""
    result["samples"] = m.samples
    result["summary"] = m.summary
    info = result["info"]
    info.update(
        timer=m.timer, reps_per_sample=m.reps_per_sample, warmup_invocations=m.warmup_invocations,
        timed_out=m.timed_out, measure_s=round(m.elapsed_s, 3),
    )
    info.update(method=m.method, method_note=m.method_note, first_call_s=m.first_call_s,
                warmup_s=round(m.warmup_s, 3), steady=m.steady, batches=m.batches,
                state_start=m.state_start, state_end=m.state_end)
    flags = result.setdefault("flags", [])
    warnings = [info["warning"]] if info.get("warning") else []     # the workload's own (prepare's info)
    if m.timed_out:
        warnings.append("stopped at the timeout before reaching the noise target")
        flags.append("timed_out")
    if m.hit_max_samples:
        warnings.append("stopped at max_samples before reaching the noise target")
        flags.append("max_samples")
    if not m.steady:
        warnings.append("warm-up ended before the blocks agreed (not steady)")
    if m.host_bound_batches:        # samples may time launches, not the device: a stability flag
        info["host_bound_batches"] = m.host_bound_batches
        flags.append("host_bound")
        warnings.append(f"the host could not keep the device queue full in {m.host_bound_batches} of "
                        f"{m.batches} batches (launch-bound; not capturable into a graph)")
    if m.throttled_samples or m.throttled_kept:
        info.update(throttled_samples_dropped=m.throttled_samples, throttled_batches_dropped=m.throttled_batches,
                    throttled_batches_kept=m.throttled_kept, throttle_reasons_seen=m.throttle_reasons)
        if m.throttled_samples:
            warnings.append(f"{m.throttled_samples} samples taken while the device throttled were dropped")
    if m.throttled_kept:
        flags.append("throttled")
        warnings.append(f"{m.throttled_kept} throttled batches kept (the loop drops at most half)")
    if warnings:
        info["warning"] = "; ".join(warnings)


TRIAL_FIELDS = ("timer", "reps_per_sample", "warmup_invocations", "measure_s", "method", "pid", "position",
                "started_at", "best_shape")     # best_shape: a shape search's, which its work follows from


def trial_record(result: dict, trial: int) -> dict:
    """What a case's result keeps of each trial: its figure, noise, flags and how it was measured
    (its samples stay in the result's `samples`, trial after trial, `n` each)."""
    metric, summary, info = result.get("metric") or {}, result.get("summary") or {}, result.get("info") or {}
    record = {"trial": trial, "status": result["status"], "n": len(result.get("samples") or []),
              "value": metric.get("value"), "log_se": metric.get("log_se"),
              "rel_noise": summary.get("rel_noise"), "median_s": summary.get("median"),
              "flags": list(result.get("flags") or [])}
    record.update({k: info[k] for k in TRIAL_FIELDS if k in info})
    if result.get("work"):
        record["work"] = result["work"]     # a trial's figure is redone from its samples and work (a
        #                                     shape search may find another shape in another trial)
    if result["status"] != "ok":
        record["reason"] = result.get("reason")
    if result.get("telemetry"):
        record["telemetry"] = result["telemetry"]
    return record


def merge_trials(trials: list[dict], spec: dict | None) -> dict:
    """Fold a case's trial results into one: samples trial after trial, a record per trial, the
    figure and its interval from the trials (results.figure.combine), derived rates from that
    figure, stability flags. A failed trial fails the case (a wrong answer in any trial must
    fail its gate); a case skipped in every trial is skipped."""
    import copy

    from gpuparity.measure.stats import summarize
    from gpuparity.results.figure import combine, derive_rates, stability_flags

    records = [trial_record(r, i + 1) for i, r in enumerate(trials)]
    if len(records) == 1:
        records[0].pop("telemetry", None)       # the result's own telemetry already is that trial's
    ok = [r for r in trials if r["status"] == "ok" and (r.get("metric") or {}).get("value")]
    base = copy.deepcopy(ok[0] if ok else trials[0])
    base["trials"] = records
    failed = [(i, r) for i, r in enumerate(trials) if r["status"] == "failed"]
    if failed:
        i, r = failed[0]
        prefix = f"trial {i + 1} of {len(trials)}: " if len(trials) > 1 else ""
        return mark(base, "failed", f"{prefix}{r.get('reason')}")
    if not ok:
        return base
    base["samples"] = [s for r in ok for s in r.get("samples") or []]
    if len(ok) > 1:
        base["summary"] = summarize(base["samples"])
        base["telemetry"] = _merged_telemetry([r.get("telemetry") for r in ok])
    c = combine([r["metric"]["value"] for r in ok], [r["metric"].get("log_se") for r in ok])
    base["metric"].update(value=c["value"], ci_low=c["ci_low"], ci_high=c["ci_high"], log_se=c.get("log_se"),
                          spread=c["spread"], trials=c["trials"], ci_basis=c["ci_basis"])
    # what the driver said in any trial: a later trial's thermal throttling must reach compare
    seen = [x for r in ok for x in (r.get("info") or {}).get("throttle_reasons_seen") or []]
    if seen:
        base["info"]["throttle_reasons_seen"] = list(dict.fromkeys(seen))[:10]
    derive_rates(base, spec)
    base["flags"] = stability_flags(base)
    if not checkable(base.get("workload")) and base.get("work"):
        base["flags"].append(WORK_UNCHECKED)    # a user's workload: its work is its own word (results/work.py)
    return base


def _merged_telemetry(teles: list[dict | None]) -> dict | None:
    """Power over trials: valid only if every trial's is; the mean of the trials' figures."""
    present = [t for t in teles if t]
    if not present:
        return None
    merged = dict(present[0])
    merged["valid"] = len(present) == len(teles) and all(t.get("valid") is True for t in present)
    for name in ("mean_power_w", "energy_j", "energy_per_invocation_j"):
        values = [t.get(name) for t in present]
        if all(isinstance(v, (int, float)) for v in values):
            merged[name] = sum(values) / len(values)
    merged["per_trial"] = present
    return merged


# -- registry ----------------------------------------------------------------
_REGISTRY: dict[str, Workload] = {}
_LOADED = False


def register(workload: Workload) -> Workload:
    if workload.category not in CATEGORIES:
        raise ValueError(f"{workload.name}: category must be one of {CATEGORIES}")
    _REGISTRY[workload.name] = workload
    return workload


def _load_builtins() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for mod in BUILTIN_MODULES:
        try:
            module = importlib.import_module(f"gpuparity.workloads.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name == f"gpuparity.workloads.{mod}":
                continue  # not built yet
            raise
        for w in getattr(module, "WORKLOADS", []):
            register(w)
    try:
        from importlib.metadata import entry_points

        for ep in entry_points(group="gpuparity.workloads"):
            obj = ep.load()
            for w in obj if isinstance(obj, (list, tuple)) else [obj]:
                register(w() if isinstance(w, type) else w)
    except Exception:  # a broken third-party plugin must not break the built-ins
        pass


def load_workload_file(path: str) -> list[str]:
    """Register the workloads of a user's Python file (its WORKLOADS list)."""
    from gpuparity.errors import UserError
    from gpuparity.validate import check_regular

    check_regular(path, "workload file")       # a FIFO or device is never read (it could block)
    spec = importlib.util.spec_from_file_location(f"gpuparity_user_{abs(hash(path))}", path)
    if spec is None or spec.loader is None:
        raise UserError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except SyntaxError as exc:
        raise UserError(f"{path}: not valid Python (line {exc.lineno}: {exc.msg})") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed on import: one line, not a traceback
        raise UserError(f"{path}: failed on import ({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})") from None
    found = getattr(module, "WORKLOADS", "missing")
    if not isinstance(found, (list, tuple)) or not found:
        got = found if found == "missing" else f"{type(found).__name__} {str(found)[:40]!r}"
        raise UserError(f"{path}: defines no WORKLOADS list (WORKLOADS = [MyWorkload()]; it is {got})")
    names = []
    for i, w in enumerate(found):
        if isinstance(w, type) and issubclass(w, Workload):
            try:
                w = w()
            except Exception as exc:  # noqa: BLE001 - the user's class: one line, not a traceback
                raise UserError(f"{path}: WORKLOADS[{i}] {w.__name__}() failed ({type(exc).__name__}: "
                                f"{str(exc).splitlines()[0][:200] if str(exc) else ''})") from None
        if not isinstance(w, Workload):
            raise UserError(f"{path}: WORKLOADS[{i}] is {type(w).__name__} {str(w)[:40]!r}, not a Workload (a "
                            "subclass of gpuparity.workloads.base.Workload, or an instance of one)")
        if not isinstance(w.name, str) or not w.name.strip():
            raise UserError(f"{path}: WORKLOADS[{i}] ({type(w).__name__}) has no name")
        try:
            register(w)
        except ValueError as exc:
            raise UserError(f"{path}: {exc}") from None
        names.append(w.name)
    return names


def registry() -> dict[str, Workload]:
    _load_builtins()
    return dict(_REGISTRY)


def get(name: str) -> Workload:
    from gpuparity.errors import UserError

    reg = registry()
    if name not in reg:
        raise UserError(f"unknown workload '{name}'; known: {', '.join(sorted(reg))}")
    return reg[name]
