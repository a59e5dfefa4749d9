"""The Workload contract and registry.

A workload has a name, a category (kernel | model | serving | comm), axes of parameters, a
`supports()` that says why not, and `prepare()` returning one invocation plus the work it
does (FLOP, bytes, tokens). Throughput and % of peak are derived from that work and the
measured time in one place (`derive`), never typed in.

Workloads that drive their own measurement (a serving sweep, a collective across ranks)
override `execute()` and still fill the same result fields.
"""

from __future__ import annotations

import importlib
import importlib.util
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from gpuparity.results.schema import mark, new_result, primary_metric

CATEGORIES = ("kernel", "model", "serving", "comm")
# Built-in workload modules, imported on demand (each defines WORKLOADS = [instances]).
BUILTIN_MODULES = [
    "gemm", "memory", "attention", "moe", "conv", "llm", "training", "serving", "collectives",
    "scaling",
]


@dataclass
class Prepared:
    fn: Callable[[], Any]                  # one invocation
    work: dict                             # per invocation: {"flop": .., "bytes": .., "tokens": ..}
    peak: str | None = None                # "flop:<dtype>" or "bytes": the spec peak this is measured against
    check: Callable[[], tuple[bool, str]] | None = None   # output vs an fp64 reference, once
    cold: bool = False                     # flush the last-level cache between samples
    info: dict = field(default_factory=dict)
    teardown: Callable[[], None] | None = None


@dataclass
class Context:
    fingerprint: dict
    device: str                            # "cpu" or "cuda" (ROCm also says cuda in torch)
    suite: str = "quick"
    loop: Any = None                       # measure.loop.LoopConfig
    telemetry: Any = None                  # measure.telemetry sampler or None
    profile_dir: str | None = None
    options: dict = field(default_factory=dict)

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
    suites: tuple[str, ...] = ("quick", "standard", "full")

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        """Parameter sets for a suite; each may hold 'dtype'."""
        raise NotImplementedError

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        return True, ""

    def prepare(self, params: dict, ctx: Context) -> Prepared:
        raise NotImplementedError

    def begin(self, params: dict, ctx: Context) -> tuple[dict, bool]:
        """A fresh result for these params, already marked skipped (with the reason) if unsupported."""
        result = new_result(self.name, self.category, params, params.get("dtype"))
        ok, reason = self.supports(params, ctx)
        if not ok:
            mark(result, "skipped", reason)
        return result, ok

    def execute(self, params: dict, ctx: Context) -> dict:
        """Default path: prepare, check once, measure, derive."""
        from gpuparity.measure.loop import measure

        result, ok = self.begin(params, ctx)
        if not ok:
            return result
        prepared = self.prepare(params, ctx)
        try:
            result["info"].update(prepared.info)
            result["work"] = prepared.work
            if prepared.check is not None:
                good, detail = prepared.check()
                result["info"]["check"] = detail
                if not good:
                    return mark(result, "failed", f"wrong result: {detail}")
            cfg = ctx.loop
            if prepared.cold:
                from dataclasses import replace

                cfg = replace(cfg, cold=True, flush_bytes=flush_bytes(ctx))
            with telemetry_window(ctx, result) as tele:
                m = measure(prepared.fn, ctx.device, cfg, on_sample=tele.mark)
                fill_measurement(result, m)
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

    Pass `mark` as measure()'s on_sample and fill the result inside the block: the energy then
    covers exactly the timed samples and is divided by their invocations (measure.telemetry).
    The telemetry lands in result["telemetry"] (and in self["result"] without a result).
    """

    def __init__(self, ctx: Context, result: dict | None = None):
        super().__init__()
        self.ctx, self.result, self.marks = ctx, result, []

    def mark(self, _n: int = 0) -> None:
        self.marks.append(time.monotonic_ns())

    def __enter__(self) -> "telemetry_window":
        if self.ctx.telemetry is not None:
            self.ctx.telemetry.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.ctx.telemetry is not None:
            self["result"] = self.ctx.telemetry.stop(self.result, self.marks)
            if self.result is not None:
                self.result["telemetry"] = self["result"]


def flush_bytes(ctx: Context) -> int:
    """2x the last-level cache; MI300-class parts have a 256 MB Infinity Cache."""
    if ctx.device == "cpu":
        llc = (ctx.fingerprint.get("cpu") or {}).get("llc_bytes") or 32 * 2**20
        return 2 * llc
    return 2 * 256 * 2**20


def fill_measurement(result: dict, m) -> None:
    result["samples"] = m.samples
    result["summary"] = m.summary
    result["info"].update(
        timer=m.timer, reps_per_sample=m.reps_per_sample, warmup_invocations=m.warmup_invocations,
        timed_out=m.timed_out, measure_s=round(m.elapsed_s, 3),
    )
    if m.timed_out:
        result["info"]["warning"] = "stopped at the timeout before reaching the noise target"


def derive(result: dict, peak: str | None, spec: dict | None) -> None:
    """Throughput from work / time, CI from the time CI, % of spec peak where a peak exists."""
    from gpuparity.platform.specs import peak_bandwidth_gbs, peak_tflops

    s = result["summary"]
    pm = primary_metric(result["work"])
    if not s or not s.get("n") or pm is None:
        return
    kind, unit, scale = pm
    amount = result["work"][kind]
    value = amount / s["median"] / scale
    result["metric"] = {
        "name": kind, "unit": unit, "value": value, "higher_is_better": True,
        "ci_low": amount / s["ci_high"] / scale, "ci_high": amount / s["ci_low"] / scale,
    }
    d = result["derived"]
    if result["work"].get("flop"):
        d["tflops"] = result["work"]["flop"] / s["median"] / 1e12
    if result["work"].get("bytes"):
        d["gbs"] = result["work"]["bytes"] / s["median"] / 1e9
    if result["work"].get("tokens"):
        d["tokens_per_s"] = result["work"]["tokens"] / s["median"]
    if peak and spec:
        if peak.startswith("flop:") and d.get("tflops"):
            p = peak_tflops(spec, peak.split(":", 1)[1])
            if p:
                d["pct_peak"] = 100.0 * d["tflops"] / p
                d["peak"] = {"value": p, "unit": "TFLOP/s", "estimated": bool(spec.get("estimated"))}
        elif peak == "bytes" and d.get("gbs"):
            p = peak_bandwidth_gbs(spec)
            if p:
                d["pct_peak"] = 100.0 * d["gbs"] / p
                d["peak"] = {"value": p, "unit": "GB/s", "estimated": bool(spec.get("estimated"))}


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

    spec = importlib.util.spec_from_file_location(f"gpuparity_user_{abs(hash(path))}", path)
    if spec is None or spec.loader is None:
        raise UserError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    names = []
    for w in getattr(module, "WORKLOADS", []):
        register(w() if isinstance(w, type) else w)
        names.append(w.name)
    if not names:
        raise UserError(f"{path}: defines no WORKLOADS list")
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
