"""Runs workloads into a run document: trials, progress, failures recorded, nothing lost.

- A case is measured in N independent trials, interleaved: trial 1 of every case, then trial 2,
  ...; the case order is shuffled per trial from a recorded seed (order effects such as heat or
  a warm allocator cannot favour one case). Each trial prepares fresh inputs.
- Where trials run (doc["plan"]["mode"]):
    in-process  every trial in this process (one trial, or a torchrun job);
    workers     each trial in a fresh worker process (N > 1; pyperf's design: process-level
                state such as allocation and autotuning varies between trials as between runs);
    isolate     each (case, trial) in its own process: a segfault, abort or GPU fault fails
                that case with the signal, and the run goes on.
- A watchdog fails a case that gives no result within its deadline ("hung"); in a worker the
  process is killed and a fresh one continues once the device answers again.
- Every finished trial is appended to the run's journal (execute/journal.py) before the next
  starts; Ctrl-C / SIGTERM keep the finished results and mark the run interrupted.
"""

from __future__ import annotations

import random
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from gpuparity.errors import Terminated, is_oom
from gpuparity.execute.journal import JournalUnwritable
from gpuparity.results.schema import mark, new_result, now_iso

CASE_TIMEOUT_S = 900.0          # watchdog default; a workload may set its own `timeout_s`


class Hung(Exception):
    """A case ran past its watchdog deadline."""


@contextmanager
def sigterm_stops_the_run() -> Iterator[None]:
    """While the block runs, SIGTERM raises Terminated in the main thread (unless it is ignored)."""
    def terminate(signum, frame):
        from gpuparity.errors import RECEIVED

        RECEIVED.append(signum)
        raise Terminated()

    usable = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, terminate) if usable and signal.getsignal(signal.SIGTERM) != signal.SIG_IGN \
        else None
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


class HeldSignals:
    """From start() to stop(), Ctrl-C and SIGTERM are recorded in `held`, not raised: a finished
    result is journalled whole, a finished run is printed and saved whole, and the caller exits by
    the first signal afterwards. Ignored signals stay ignored."""

    def __init__(self):
        self.held: list[int] = []
        self._old: dict[int, object] = {}

    def start(self) -> "HeldSignals":
        if not self._old and threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(signum) != signal.SIG_IGN:
                    self._old[signum] = signal.signal(signum, lambda s, f: self.held.append(s))
        return self

    def stop(self) -> None:
        for signum, handler in self._old.items():
            signal.signal(signum, handler)
        self._old = {}


@contextmanager
def signals_held() -> Iterator[list]:
    """HeldSignals for the length of a block; yields the list of held signals."""
    hold = HeldSignals().start()
    try:
        yield hold.held
    finally:
        hold.stop()


@contextmanager
def watchdog(seconds: float | None, what: str) -> Iterator[None]:
    """Raise Hung in the main thread after `seconds` (SIGALRM): a case that sleeps or spins in
    Python past its deadline fails instead of stopping the run. Native code that never returns
    to Python (a kernel that never finishes) needs a worker process (--isolate or --trials N)."""
    usable = bool(seconds) and threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if not usable:
        yield
        return

    def fire(signum, frame):
        raise Hung(f"hung: no result after {seconds:g} s (watchdog) in {what}")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def case_timeout(workload, ctx) -> float:
    return float(getattr(workload, "timeout_s", None) or ctx.options.get("case_timeout") or CASE_TIMEOUT_S)


def run_case(workload, params: dict, ctx) -> dict:
    """One trial of one case, with every failure turned into a recorded status instead of an exception."""
    try:
        with watchdog(case_timeout(workload, ctx), f"{workload.name} {short(params)}"):
            result = workload.execute(params, ctx)
        tele = result.get("telemetry") or {}
        if ctx.options.get("power_required") and result["status"] == "ok" and not tele.get("valid"):
            why = "; ".join(tele.get("reasons") or []) or tele.get("energy") or "no telemetry for this result"
            mark(result, "failed", f"power required: {why}")
        return result
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a workload must never end the run
        result = new_result(workload.name, workload.category, params, params.get("dtype"))
        if isinstance(exc, Hung):
            return mark(result, "failed", str(exc))
        msg = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        if is_oom(exc):
            _free_device_memory(ctx)
            return mark(result, "skipped", f"out of memory at {params}: {msg}")
        return mark(result, "failed", f"{type(exc).__name__}: {msg}")


def _free_device_memory(ctx) -> None:
    if ctx.device != "cpu":
        import gc

        import torch

        gc.collect()
        torch.cuda.empty_cache()


def short(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items() if k != "dtype") + (
        f" {params['dtype']}" if params.get("dtype") else "")


# -- planning (the case list itself: gpuparity.execute.plan.cases_for) ------------------------------
def apply_sets(cases: list[dict], sets: dict) -> list[dict]:
    """Cases with every --set axis a case has replaced by each given value (comma lists multiply),
    values converted to the type the case uses; axes not set keep the suite's values."""
    from itertools import product

    out = []
    for case in cases:
        axes = [k for k in sets if k in case and k != "dtype"]
        if not axes:
            out.append(case)
            continue
        choices = [[coerce(case[k], v, k) for v in str(sets[k]).split(",") if v.strip()] for k in axes]
        for combo in product(*choices):
            out.append({**case, **dict(zip(axes, combo, strict=True))})
    return out


def coerce(example, text: str, key: str):
    """A --set value as the type of the suite's value for that axis (one-line error if it is not)."""
    from gpuparity.errors import UserError

    text = text.strip()
    # an axis the suite sizes with positive numbers (m, seq, batch, ...) takes positive ones only
    positive = not isinstance(example, bool) and isinstance(example, (int, float)) and example > 0
    try:
        if isinstance(example, (bool, int, float)) and not text.isascii():
            raise ValueError            # int() reads a full-width or Arabic-Indic digit as a digit: not here
        if isinstance(example, bool):
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return text.lower() in ("true", "1", "yes")
        if isinstance(example, int):
            value = int(text)
            if value < int(positive) or value > 2**62:
                raise ValueError
            return value
        if isinstance(example, float):
            import math

            value = float(text)
            if not math.isfinite(value) or value < 0 or (positive and value == 0):
                raise ValueError
            return value
    except ValueError:
        kind = {bool: "true or false", int: f"a whole number >= {int(positive)}",
                float: "a number > 0" if positive else "a number >= 0"}[type(example)]
        raise UserError(f"--set {key}={text}: {key} takes {kind}") from None
    return text


def schedule(n_cases: int, trials: int, seed: int | None) -> list[list[int]]:
    """The case order of each trial: every case once per trial, shuffled per trial from the seed
    (seed None: the plan's order, e.g. `run --in-order`)."""
    orders = []
    for t in range(trials):
        order = list(range(n_cases))
        if seed is not None:
            random.Random(f"{seed}:{t}").shuffle(order)
        orders.append(order)
    return orders


# -- execution ----------------------------------------------------------------------------
Events = Callable[..., None]


def execute_plan(pairs: list[tuple], ctx, doc: dict, on_result: Callable[[dict], None] | None = None,
                 on_start: Callable[[object, dict], None] | None = None, trials: int = 1,
                 seed: int | None = None, mode: str = "in-process", journal=None, shuffle: bool = True,
                 hold: HeldSignals | None = None) -> dict:
    """Measure every case `trials` times, fill doc['results'] (one merged result per case, in plan
    order) and doc['plan']; on Ctrl-C / SIGTERM stop, mark the run interrupted, keep what finished.
    on_start(workload, params) before each trial of a case; on_result(trial_result) after it.
    `hold` is started as soon as measuring ends (the caller stops it once the run is saved)."""
    from gpuparity.platform.machine import snapshot

    if shuffle and seed is None:
        seed = random.SystemRandom().randrange(2**31)
        from gpuparity.platform import dist

        if dist.initialized():       # every rank of a torchrun job must run the cases in one order
            seed = int(dist.reduce_max([float(seed)])[0])
    seed = seed if shuffle else None
    orders = schedule(len(pairs), trials, seed)
    doc["plan"] = {"trials": trials, "seed": seed, "shuffled": shuffle, "mode": mode,
                   "cases": len(pairs),
                   "case_timeout_s": ctx.options.get("case_timeout") or CASE_TIMEOUT_S}
    doc["status"] = "running"
    doc.setdefault("machine", {})["start"] = snapshot(ctx.telemetry)
    done: dict[int, list[tuple[int, dict]]] = {}
    t0 = time.time()

    def finished(i: int, t: int, position: int, result: dict) -> None:
        result.setdefault("info", {}).update(trial=t + 1, position=position)
        with signals_held() as held:      # a finished result is journalled whole, then the signal acts
            done.setdefault(i, []).append((t, result))      # kept by the run even if the journal fails
            if journal is not None:
                journal.trial(i, t + 1, result)
        if held:
            raise Terminated() if held[0] == signal.SIGTERM else KeyboardInterrupt()
        if on_result:
            on_result(result)

    def started(i: int, t: int) -> None:
        w, params = pairs[i]
        if journal is not None:
            journal.start(i, t + 1, f"{w.name} {short(params)}")
        if on_start:
            on_start(w, params)

    try:
        if mode == "in-process":
            for t, order in enumerate(orders):
                ctx.trial = t + 1
                for position, i in enumerate(order):
                    started(i, t)
                    w, params = pairs[i]
                    finished(i, t, position, run_case(w, params, ctx))
        else:
            from gpuparity.execute.workers import run_in_workers

            run_in_workers(pairs, orders, ctx, isolate=(mode == "isolate"), case_timeout=case_timeout,
                           started=started, finished=finished)
        if hold is not None:
            hold.start()
        doc["status"] = "complete"
    except KeyboardInterrupt as exc:
        if hold is not None:
            hold.start()
        doc["status"] = "interrupted"
        doc["interrupted_by"] = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
        print(f"\ninterrupted ({doc['interrupted_by']}): keeping the results that finished", file=sys.stderr)
    except JournalUnwritable as exc:      # a full disk: measuring on without the journal would risk it all
        if hold is not None:
            hold.start()
        doc["status"] = "interrupted"
        doc["interrupted_by"] = "journal"
        doc["stopped"] = str(exc)
    if hold is not None:
        hold.start()
    from gpuparity.results.schema import finite_json

    doc["results"] = finite_json(merge_all(pairs, done, ctx))
    doc["machine"]["end"] = snapshot(ctx.telemetry, window_s=0.0 if doc["status"] != "complete" else 0.3)
    from gpuparity.platform import dist
    from gpuparity.platform.machine import mark_contention

    # a busy machine is evidence: results of a contended run never support faster/slower
    # a serving result is graded by its client's wait for a CPU (the server is another process by design)
    mark_contention(doc, external=any(w.category == "serving" for w, _ in pairs), distributed=dist.is_distributed())
    doc["finished_at"] = now_iso()
    doc["duration_s"] = round(time.time() - t0, 3)
    return doc


def merge_all(pairs: list[tuple], done: dict, ctx) -> list[dict]:
    """One result per case with at least one finished trial, in plan order; then each workload's
    finalize() over its results."""
    out, by_workload = [], {}
    for i, (w, _) in enumerate(pairs):
        if i in done:
            trials = [r for _, r in sorted(done[i], key=lambda x: x[0])]
            out.append(w.merge_trials(trials, ctx))
            by_workload.setdefault(w.name, (w, []))[1].append(out[-1])
    for w, results in by_workload.values():
        w.finalize(results)
    return out


def build_context(suite: str, options: dict, profile_dir: str | None = None, fingerprint: dict | None = None):
    """The Context every workload gets; `fingerprint` skips detection (a worker gets its parent's)."""
    from gpuparity.measure.loop import LoopConfig
    from gpuparity.measure.telemetry import open_sampler
    from gpuparity.platform.detect import fingerprint as detect
    from gpuparity.platform.detect import torch_device
    from gpuparity.workloads.base import Context

    fp = dict(fingerprint) if fingerprint is not None else detect()
    device = torch_device(fp)
    sampler = open_sampler(fp)
    fp = dict(fp, telemetry=sampler.describe())
    from gpuparity.platform import dist

    if fingerprint is None and dist.is_distributed():  # torchrun job: its shape and this node's GPU links
        fp["distributed"] = dict(dist.describe(), topology=dist.topology(fp.get("backend", "cpu")))
    loop = LoopConfig.for_suite(suite, device)
    if options.get("power_required"):  # timed windows long enough for a valid power trace (~20 samples)
        loop.min_time_s = max(loop.min_time_s, 1.0)
    return Context(fingerprint=fp, device=device, suite=suite, loop=loop,
                   telemetry=sampler, profile_dir=profile_dir, options=options)


def start_run(ctx, argv: list[str], label: str | None = None) -> dict:
    from gpuparity.results.schema import new_run

    doc = new_run(ctx.fingerprint, argv)
    doc["suite"] = ctx.suite
    doc["label"] = label or None
    return doc
