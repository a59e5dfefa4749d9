"""Figures are derived, never trusted: a run document from outside (an import, a file named on
the command line, a store row read back) states figures about its results; here each one is
recomputed from the result's raw samples and work by the functions `run` itself uses, and the
document is held to physical bounds.

What is recomputed, per ok result (the first disagreement beyond rounding is named):
- the key, from workload + params + dtype (results.schema.result_key);
- each trial's figure and log standard error from its slice of the samples (trials keep `n`
  samples each, trial after trial): seconds per invocation with the work (figure.timing_value),
  throughput per sample (metric.samples: figure.rate_value), or, for a serving point, its
  request rows (results.serving_summary.summarize_point, the point summary `run` made);
- the result's figure, CI, spread and trial count (figure.combine); its summary's n and median;
- the derived rates and % of the spec's peak (figure.derive_rates; a serving point's per-GPU
  and interactivity figures and the summary table `show` prints; a table on any other result is
  refused); a rate or % of peak that nothing in the document gives (no figure, no peak) is refused;
- the workload's own figures (figure.workload_figures: MFU, TTFT / TPOT / e2e and their rates,
  algbw / busbw / latency, tokens/s per rank) and weak-scaling efficiency against the document's
  1-rank result (figure.weak_scaling): the functions the workloads call;
- a schema-1 result (no trials) as one trial, by the definitions schema 1 had (_legacy);
- the flags a reader relies on (figure.stability_flags: unstable; peak_exceeded; unverified_tokens).
A field a document leaves empty claims nothing and is not a disagreement.

Bounds (refused whatever the mode): dates no later than now + CLOCK_SKEW; power at most
MAX_W_PER_DEVICE per device; trials distinct (a trial number twice, or two trials with the same
samples, is false precision); trial sample counts that add up to the samples held.

`recompute_run(doc, origin)` refuses a disagreement with one line; with fix=True (`import
--recompute`) it replaces the stated figures with the recomputed ones, adds the flag
"recomputed" to each result it changed and lists what changed in doc["recomputed"]. Either way
a document that passes reads the same in every view as the samples it carries. One document at a
time, so a streaming import can call it per document.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

from gpuparity.errors import UserError

REL_TOL = 1e-6                  # "beyond rounding": JSON keeps floats exactly; this allows other libms
ABS_TOL = 1e-12
FLAG = "recomputed"
MAX_W_PER_DEVICE = 3000.0       # the largest accelerator modules draw ~1.4 kW; a few kW is not a GPU
CLOCK_SKEW = timedelta(days=1)
MIN_DISTINCT = 2                # trials with this many identical timings are one trial copied (llm trials hold 2)
# missing ones make a figure look better
CHECKED_FLAGS = ("unstable", "peak_exceeded", "unverified_tokens", "invalid_requests")
MAX_NOTES = 20
RATE_FIELDS = ("tflops", "gbs", "tokens_per_s", "pct_peak")     # figure.derive_rates
SERVING_FIELDS = ("requests", "completed", "failed", "errors", "timeouts", "duration_s", "total_input_tokens",
                  "total_output_tokens", "request_throughput", "input_throughput", "output_throughput",
                  "total_throughput", "input_throughput_per_gpu", "output_throughput_per_gpu",
                  "total_throughput_per_gpu", "throughput_per_gpu", "interactivity", "log_se",
                  "interactivity_log_se", "peak_concurrency", "invalid", "rate_duration_s")


class Disagreement(Exception):
    """A figure the document states that its samples do not give (fixable by recomputing)."""


class _Checker:
    def __init__(self, origin: str, fix: bool):
        self.origin, self.fix, self.notes = origin, fix, []

    def refuse(self, where: str, what: str) -> None:
        raise UserError(f"{self.origin}: {where}: {what}")

    def differ(self, where: str, what: str) -> None:
        """A disagreement: refused with one line (the first one), or noted when fixing."""
        if not self.fix:
            raise UserError(f"{self.origin}: {where}: {what} (import --recompute stores what the samples give)")
        self.notes.append(f"{where}: {what}")

    def same(self, where: str, field: str, stated: Any, derived: Any) -> bool:
        """True when `stated` is what the samples give (or states nothing); else a disagreement."""
        if stated is None or _close(stated, derived):
            return True
        if derived is None:
            self.differ(where, f"{field} states {_show(stated)}, but nothing the document holds gives it")
        else:
            self.differ(where, f"{field} states {_show(stated)}, its samples give {_show(derived)}")
        return False


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) \
            or not isinstance(b, (int, float)):
        return a == b
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    return abs(a - b) <= ABS_TOL + REL_TOL * max(abs(a), abs(b))


def _show(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)[:60]


def _num(v: Any) -> float | None:
    """A finite number, else None (nan from a figure function means 'not known')."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


# -- the document ---------------------------------------------------------------------------
def recompute_run(doc: dict, origin: str = "document", fix: bool = False) -> dict:
    """Check (or, with fix, replace) every figure of a schema-validated run document; see the
    module notes. Returns the document (changed in place when fixing)."""
    chk = _Checker(origin, fix)
    check_dates(doc, origin)
    spec = (doc.get("fingerprint") or {}).get("spec")
    devices = _devices(doc)
    legacy = doc.get("schema_version") == 1
    for i, r in enumerate(doc.get("results") or []):
        where = f"result {i} ({str(r.get('workload'))[:40]} {r.get('key')})"
        check_power(r, devices, where, origin)
        before = chk.notes[:]
        _work(r, chk, where)
        _key(r, chk, where)
        _table(r, chk, where)
        if r.get("status") == "ok":
            _result(r, spec, chk, where, legacy)
        if fix and chk.notes != before and FLAG not in r.setdefault("flags", []):
            r["flags"].append(FLAG)
    _scaling(doc.get("results") or [], chk)
    if fix:
        seen: dict[str, int] = {}
        for i, r in enumerate(doc.get("results") or []):
            if seen.setdefault(r["key"], i) != i:
                raise UserError(f"{origin}: result {i} has the key of result {seen[r['key']]} once recomputed")
        if chk.notes:
            doc["recomputed"] = {"count": len(chk.notes), "changes": chk.notes[:MAX_NOTES]}
    return doc


def read_back(doc: dict, origin: str) -> dict:
    """A stored document as the views read it (an earlier version imported without recomputing):
    unchanged when its figures hold; else with the recomputed figures (flagged, doc["recomputed"]);
    a bound it breaks is noted in doc["evidence_warning"], never raised (it is stored already)."""
    import copy

    try:
        return recompute_run(doc, origin)
    except UserError:
        pass
    fixed = copy.deepcopy(doc)
    try:
        return recompute_run(fixed, origin, fix=True)
    except UserError as exc:
        doc["evidence_warning"] = str(exc)
        return doc


def check_dates(doc: dict, origin: str) -> None:
    """No date later than now plus the clock skew a machine may have (it would be 'latest' forever)."""
    limit = datetime.now(timezone.utc) + CLOCK_SKEW
    for field in ("started_at", "finished_at"):
        raw = doc.get(field)
        if not isinstance(raw, str):
            continue
        try:
            when = datetime.fromisoformat(raw)
        except ValueError:
            raise UserError(f"{origin}: {field} {raw[:40]!r} is not an ISO date and time") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        if when > limit:
            raise UserError(f"{origin}: {field} {raw[:40]} is in the future (more than a day past this "
                            "machine's clock)")


def _devices(doc: dict) -> int:
    fp = doc.get("fingerprint") or {}
    n = fp.get("device_count")
    world = ((fp.get("distributed") or {}).get("world_size"))
    counts = [c for c in (n, world) if isinstance(c, int) and not isinstance(c, bool) and c > 0]
    return max(counts, default=1)


def check_power(r: dict, devices: int, where: str, origin: str) -> None:
    """Mean power within what `devices` accelerators can draw, in the result and each trial."""
    limit = MAX_W_PER_DEVICE * max(devices, len(((r.get("telemetry") or {}).get("devices") or [])), 1)
    teles = [r.get("telemetry")] + [t.get("telemetry") for t in r.get("trials") or [] if isinstance(t, dict)]
    teles += list((r.get("telemetry") or {}).get("per_trial") or [])
    for tele in teles:
        if not isinstance(tele, dict):
            continue
        w = tele.get("mean_power_w")
        if isinstance(w, (int, float)) and not isinstance(w, bool) and w > limit:
            raise UserError(f"{origin}: {where}: telemetry.mean_power_w {w:.6g} W is more than {devices} "
                            f"device(s) can draw ({limit:g} W)")


def _work(r: dict, chk: _Checker, where: str) -> None:
    """The work a figure is timed against, and the samples it is timed from, as nothing can fix
    them (refused whatever the mode): a built-in workload's work (and each trial's) is what its
    params give (results/work.py); every time sample (and rate sample, and llm prefill sample) is
    positive, as a negative or zero one is no measurement (the median would just drop it); rate
    samples beside time samples are the rates those times give. A user's workload states work
    nothing here can check (`run` flags its results work_unchecked, results/work.py)."""
    from gpuparity.results.schema import primary_metric
    from gpuparity.results.work import work_problem

    problem = work_problem(r)
    if problem:
        chk.refuse(where, problem)
    metric, info = r.get("metric") or {}, r.get("info") or {}
    for field, values in (("samples", r.get("samples")), ("metric.samples", metric.get("samples")),
                          ("info.prefill_samples", info.get("prefill_samples"))):
        if values is None:
            continue
        bad = [v for v in values if _num(v) is None or v <= 0] if isinstance(values, list) else [values]
        if bad:
            chk.refuse(where, f"{field} holds {_show(bad[0])}: a time or rate measured is a positive number")
    pm = primary_metric(r.get("work") or {})
    if metric.get("samples") and r.get("samples") and pm:
        kind, _, scale = pm
        times, rates = r["samples"], metric["samples"]
        if len(rates) != len(times) or not all(_close(q, r["work"][kind] / t / scale) for q, t in zip(rates, times, strict=False)):
            chk.refuse(where, "metric.samples are not the rates its time samples and work give")


def _key(r: dict, chk: _Checker, where: str) -> None:
    from gpuparity.results.schema import result_key

    key = result_key(r["workload"], r["params"], r["dtype"])
    if key != r["key"]:
        chk.differ(where, f"key states {r['key']}, its workload + params + dtype give {key}")
        r["key"] = key


# -- one result -------------------------------------------------------------------------------
def _result(r: dict, spec: dict | None, chk: _Checker, where: str, legacy: bool) -> None:
    metric = r.get("metric") or {}
    info = r.get("info") or {}
    if r.get("category") == "serving" and isinstance(info.get("requests"), list) and info.get("serving"):
        _serving(r, chk, where)
        return
    if _num(metric.get("value")) is None:
        _derived(r, {}, chk, where, spec)          # no figure: no rate may be stated from one either
        return
    units = _trial_units(r, chk, where)
    if units is None:
        chk.refuse(where, f"metric.value {_show(metric['value'])} comes with no raw samples to derive it from")
    trials = [t for t in r.get("trials") or [] if _counted(t)]
    if legacy and not trials:                       # one trial, by the definitions schema 1 had
        _legacy(r, units, chk, where)
        _summary(r, chk, where)
        _derived(r, r, chk, where, spec, _legacy_peak_kind(r, spec))
        return
    _figure(r, units, chk, where)
    _summary(r, chk, where)
    _derived(r, r, chk, where, spec)


def _counted(t: dict) -> bool:
    """A trial whose samples are in the result's (base.merge_trials keeps ok trials with a figure)."""
    return isinstance(t, dict) and t.get("status", "ok") == "ok" and t.get("value") is not None


def _samples(r: dict) -> tuple[str, list[float]] | None:
    """('rate', throughput per sample) or ('time', seconds per invocation) of a result, or None."""
    from gpuparity.results.schema import primary_metric

    metric = r.get("metric") or {}
    if metric.get("samples"):
        return "rate", [float(x) for x in metric["samples"]]
    if primary_metric(r.get("work") or {}) is not None and r.get("samples"):
        return "time", [float(x) for x in r["samples"]]
    return None


def _trial_units(r: dict, chk: _Checker, where: str) -> list[tuple[float, float | None]] | None:
    """(figure, log se) per counted trial, recomputed from its slice of the samples."""
    from gpuparity.results.figure import rate_value, timing_value
    from gpuparity.results.schema import primary_metric

    found = _samples(r)
    if found is None:
        return None
    kind, samples = found
    slices = _slices(r, samples, chk, where)
    counted = [t for t in r.get("trials") or [] if _counted(t)] or [{}]
    out = []
    for t, s in zip(counted, slices, strict=True):
        if kind == "rate":
            value, se = rate_value(s)
        else:
            work = t.get("work") if isinstance(t.get("work"), dict) and primary_metric(t["work"]) else r["work"]
            work_kind, _, scale = primary_metric(work)
            value, se = timing_value(s, work[work_kind], scale)
        if _num(value) is None:
            chk.refuse(where, "a trial's samples give no figure (no positive sample)")
        out.append((value, _num(se)))
    return out


def _slices(r: dict, samples: list, chk: _Checker, where: str) -> list[list]:
    """The samples of each counted trial (each keeps `n`, in trial order); one slice without trials."""
    trials = [t for t in r.get("trials") or [] if isinstance(t, dict)]
    numbers = [t.get("trial") for t in trials]
    if len(set(numbers)) != len(numbers):
        chk.refuse(where, "a trial number appears twice (trials must be distinct)")
    counted = [t for t in trials if _counted(t)]
    if not counted:
        return [samples]
    total = sum(int(t.get("n") or 0) for t in counted)
    if total != len(samples):
        chk.refuse(where, f"its trials hold {total} samples between them, but the result has {len(samples)}")
    out, at = [], 0
    for t in counted:
        out.append(samples[at:at + int(t.get("n") or 0)])
        at += int(t.get("n") or 0)
    _distinct(out, chk, where)
    return out


def _distinct(sets: list[list], chk: _Checker, where: str) -> None:
    seen: dict[tuple, int] = {}
    for j, s in enumerate(sets):
        if len(s) < MIN_DISTINCT:
            continue
        first = seen.setdefault(tuple(s), j)
        if first != j:
            chk.refuse(where, f"trials {first + 1} and {j + 1} hold the same samples (one trial copied is not "
                              "two measurements)")


def _figure(r: dict, units: list[tuple[float, float | None]], chk: _Checker, where: str, combine=None) -> None:
    """Trial figures, then the result's figure and interval from them (figure.combine, or a
    serving point's serving_summary.point_figure)."""
    if combine is None:
        from gpuparity.results.figure import combine

    counted = [t for t in r.get("trials") or [] if _counted(t)]
    for t, (value, se) in zip(counted, units, strict=False):
        tw = f"{where} trial {t.get('trial')}"
        if not chk.same(tw, "value", t.get("value"), value):
            t["value"] = value
        if not chk.same(tw, "log_se", t.get("log_se"), se):
            t["log_se"] = se
    c = combine([u[0] for u in units], [u[1] for u in units])
    metric = r["metric"]
    for field in ("value", "ci_low", "ci_high", "log_se", "spread", "trials"):
        want = c.get(field)
        want = _num(want) if field != "trials" else want
        if not chk.same(where, f"metric.{field}", metric.get(field), want):
            metric[field] = want
    if chk.fix:
        metric["ci_basis"] = c["ci_basis"]


def _legacy(r: dict, units: list, chk: _Checker, where: str) -> None:
    """A schema-1 result (no trials): its figure and interval as one trial's. Its figure was then
    what it is now (work over the median time), or for rates given per sample their median or, as
    schema-1 serving points had it, their mean. Its interval was a bootstrap percentile interval,
    not redone exactly here but held to what one is: within the samples' range, around the figure.
    An interval stated with a log_se (as schema 2 writes one trial) is checked as one trial's."""
    import numpy as np

    from gpuparity.results.figure import combine
    from gpuparity.results.schema import metric_samples

    metric = r["metric"]
    value, se = units[0]
    rates = [x for x in metric_samples(r) if x > 0 and math.isfinite(x)]
    older = [value] + ([float(np.mean(rates))] if metric.get("samples") and rates else [])
    if not any(_close(metric["value"], v) for v in older):
        chk.differ(where, f"metric.value states {_show(metric['value'])}, its samples give {_show(value)}")
        metric["value"] = value
    c = combine([metric["value"]], [se])
    strict = ["log_se", "spread", "trials"]
    if metric.get("log_se") is not None:        # written as schema 2 writes one trial: one trial's interval
        strict[:0] = ["ci_low", "ci_high"]
    else:                                       # a bootstrap interval: within the samples, around the figure
        lo, hi, v = metric.get("ci_low"), metric.get("ci_high"), metric["value"]
        low, high = (min(rates) * (1 - REL_TOL), max(rates) * (1 + REL_TOL)) if rates else (0.0, 0.0)
        bad = [field for field, fits in (("ci_low", lo is None or low <= lo <= v * (1 + REL_TOL)),
                                         ("ci_high", hi is None or v * (1 - REL_TOL) <= hi <= high)) if not fits]
        for field in bad:
            chk.differ(where, f"metric.{field} states {_show(metric[field])}, which no interval of its samples "
                              "around its figure gives")
        if bad:
            metric.update(ci_low=c["ci_low"], ci_high=c["ci_high"], ci_basis=c["ci_basis"])
    for field in strict:
        want = c.get(field) if field == "trials" else _num(c.get(field))
        if not chk.same(where, f"metric.{field}", metric.get(field), want):
            metric[field] = want
            if field.startswith("ci_"):
                metric["ci_basis"] = c["ci_basis"]


def _legacy_peak_kind(r: dict, spec: dict | None) -> str | None:
    """Schema 1 kept its peak's value and unit (derived.peak), not its kind: the kind of the spec
    peak that value is, in the figure's unit (figure.peak_kind_for); None when it is none of them
    (a % of peak stated against it is then unfounded)."""
    from gpuparity.platform.specs import PEAK_COLUMN, peak_for
    from gpuparity.results.figure import peak_kind_for

    peak = (r.get("derived") or {}).get("peak")
    if (r.get("info") or {}).get("peak_kind") or not isinstance(peak, dict) or not spec:
        return None
    kinds = {"TFLOP/s": [f"flop:{d}" for d in PEAK_COLUMN], "GB/s": ["bytes"]}.get(peak.get("unit"), [])
    for kind in kinds:
        found = peak_for(spec, kind)
        if found and _close(float(found[0]), peak.get("value")):
            return peak_kind_for(kind, r.get("work") or {})
    return None


def _summary(r: dict, chk: _Checker, where: str) -> None:
    """n and median of the samples (`show` prints the median time)."""
    import numpy as np

    s = r.get("summary")
    x = [float(v) for v in r.get("samples") or []]
    if not isinstance(s, dict) or not x:
        return
    for field, want in (("n", len(x)), ("median", float(np.median(x)))):
        if not chk.same(where, f"summary.{field}", s.get(field), want):
            s[field] = want


def _derived(r: dict, source: dict, chk: _Checker, where: str, spec: dict | None,
             peak_kind: str | None = None) -> None:
    """tflops / gbs / tokens_per_s / pct_peak from the (recomputed) figure, the workload's own
    figures from those and the samples (figure.workload_figures: MFU, TTFT, busbw, ...), and the
    flags. A figure nothing in the document gives (no metric value, no peak, no prefill samples)
    must not be stated: refused, or dropped when fixing. peak_kind: a schema-1 result's peak."""
    import copy

    from gpuparity.results.figure import derive_rates, stability_flags, state, workload_figures

    _peak_kind(r, chk, where)
    info = dict(r.get("info") or {}, **({"peak_kind": peak_kind} if peak_kind else {}))
    probe = {"work": r.get("work") or {}, "metric": copy.deepcopy(source.get("metric")), "info": info,
             "derived": {}, "flags": [f for f in r.get("flags") or [] if f != "peak_exceeded"],
             "trials": r.get("trials") or []}
    derive_rates(probe, spec)
    probe.update(workload=r.get("workload"), params=r.get("params"), samples=r.get("samples"),
                 status=r.get("status"))
    want = {f: probe["derived"].get(f) for f in RATE_FIELDS} | workload_figures(probe)
    stated, before = r.setdefault("derived", {}), len(chk.notes)
    for field, value in want.items():
        if not chk.same(where, f"derived.{field}", stated.get(field), value):
            state(stated, field, value)
    if len(chk.notes) != before and "peak" in probe["derived"]:     # fixing: the peak the rates are against
        r["derived"]["peak"] = probe["derived"]["peak"]
    if _num((source.get("metric") or {}).get("value")) is not None:
        _flags(r, stability_flags(probe), chk, where)


def _peak_kind(r: dict, chk: _Checker, where: str) -> None:
    """A peak kind in another unit than its figure carries the work per unit (FLOP per token,
    figure.peak_kind_for): that of the result's work, or % of peak and MFU would rest on another."""
    from gpuparity.results.figure import peak_kind_for

    info = r.get("info") or {}
    kind = info.get("peak_kind")
    if not isinstance(kind, str) or "|" not in kind:
        return
    want = peak_kind_for(kind.partition("|")[0], r.get("work") or {})
    try:
        same = want is not None and _close(float(kind.partition("|")[2]), float(want.partition("|")[2]))
    except ValueError:
        same = False
    if not same:
        chk.differ(where, f"info.peak_kind states {kind[:60]}, its work gives {want}")
        if want is None:
            info.pop("peak_kind")
        else:
            info["peak_kind"] = want


def _table(r: dict, chk: _Checker, where: str) -> None:
    """`show` prints a result's info.table as its own; only a serving point has one (checked
    against its request rows in _serving): on any other result it is refused, or dropped."""
    info = r.get("info") or {}
    if info.get("table") is not None and r.get("category") != "serving":
        chk.differ(where, "info.table: only a serving point carries a table, and this result is not one")
        info.pop("table")


def _scaling(results: list, chk: _Checker) -> None:
    """Weak-scaling efficiency, against the 1-rank result of the same model in the same document
    (figure.weak_scaling, as the workload's finalize); after each result's own figures are checked."""
    from gpuparity.results.figure import state, weak_scaling

    runs = [(i, r) for i, r in enumerate(results) if r.get("workload") == "scaling"]
    for (i, r), found in zip(runs, weak_scaling([r for _, r in runs]), strict=True):
        before, d = len(chk.notes), r.setdefault("derived", {})
        for field, want in zip(("baseline_tokens_per_s", "weak_scaling_efficiency"), found or (None, None),
                               strict=True):
            if not chk.same(f"result {i} (scaling {r.get('key')})", f"derived.{field}", d.get(field), want):
                state(d, field, want)
        if len(chk.notes) != before and FLAG not in r.setdefault("flags", []):
            r["flags"].append(FLAG)


def _flags(r: dict, derived: list[str], chk: _Checker, where: str) -> None:
    for f in CHECKED_FLAGS:
        if f in derived and f not in (r.get("flags") or []):
            chk.differ(where, f"flags leave out {f!r}, which its samples give")
            r.setdefault("flags", []).append(f)


# -- a serving point ----------------------------------------------------------------------------
def _serving(r: dict, chk: _Checker, where: str) -> None:
    """Each trial's summary from its request rows, the point's summary, figure, samples, derived
    figures and table from those, as the serving workload's execute and merge_trials make them."""
    from gpuparity.results import serving_summary as sv
    from gpuparity.results.figure import UNVERIFIED_TOKENS

    info = r["info"]
    stated = info["serving"]
    rows = [row for row in info["requests"] if isinstance(row, dict)]
    by_trial: dict[Any, list] = {}
    for row in rows:
        by_trial.setdefault(row.get("trial"), []).append(row)
    numbers = sorted(by_trial, key=lambda t: t if isinstance(t, int) and not isinstance(t, bool) else -1)
    try:
        gpus = int(stated["gpus"]) if stated.get("gpus") is not None else None     # None: per server
        pct = [float(q) for q in stated["percentiles"]]
        slos = {k[:-3]: v for k, v in ((stated.get("goodput") or {}).get("slos") or {}).items()}
        tokenizer = (stated.get("usage") or {}).get("tokenizer")
        summaries = [sv.summarize_point(by_trial[t], gpus, pct, slos, tokenizer) for t in numbers]
        pooled = sv.summarize_point(rows, gpus, pct, slos, tokenizer)
        curve = sv.curve_key(r["params"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError) as exc:
        chk.refuse(where, f"its request rows cannot be summarised ({type(exc).__name__}: {str(exc)[:80]})")
    _distinct([[repr(sorted((k, str(v)) for k, v in row.items() if k != "trial")) for row in by_trial[t]]
               for t in numbers], chk, where)
    for row in rows:
        _request(row, tokenizer, chk, where)
    if info.get("curve_key") != curve:
        chk.differ(where, f"info.curve_key states {_show(info.get('curve_key'))}, its params give {curve}")
        info["curve_key"] = curve
    stated_trials = [t for t in stated.get("trials") or [] if isinstance(t, dict)]
    if stated_trials and len(stated_trials) != len(summaries):
        chk.refuse(where, f"states {len(stated_trials)} trial summaries for {len(summaries)} trials of requests")
    for t, s_t in zip(stated_trials or [stated], summaries, strict=False):
        s_t.update(warmup=t.get("warmup"), deadline_hit=t.get("deadline_hit"))
    units = [(s["throughput_per_gpu"], _num(s["log_se"])) for s in summaries if s["completed"]]
    if not units or len(units) != len(summaries):
        chk.refuse(where, "status ok, but a trial of the point has no completed request")
    counted = [t for t in r.get("trials") or [] if _counted(t)]
    if counted and len(counted) != len(units):
        chk.refuse(where, f"{len(counted)} trials with a figure, but {len(units)} trials of requests")
    if r.get("metric") is None:
        r["metric"] = {}
    _figure(r, units, chk, where, sv.point_figure)
    c = sv.point_figure([u[0] for u in units], [u[1] for u in units])
    merged = sv.merge_summaries(summaries, pooled, c["value"])
    merged["log_se"] = c.get("log_se")
    if stated_trials:
        for j, (t, s_t) in enumerate(zip(stated_trials, summaries, strict=True)):
            _serving_fields(t, s_t, chk, f"{where} trial {j + 1}")
        _serving_fields(stated, merged, chk, where)
    else:                               # a point summary without per-trial ones: one trial
        _serving_fields(stated, summaries[0], chk, where)
    e2el = [(row["end_us"] - row["start_us"]) / 1e6 for t in numbers for row in by_trial[t] if row.get("ok")]
    samples = r.get("samples") or []
    if len(samples) != len(e2el) or not all(_close(a, b) for a, b in zip(samples, e2el, strict=True)):
        chk.differ(where, f"samples: its {len(samples)} E2E latencies are not the {len(e2el)} its request rows give")
        r["samples"] = e2el
    _summary(r, chk, where)
    probe = {"info": {"curve_key": info["curve_key"]}, "params": r["params"], "metric": r["metric"]}
    sv.fill_derived(probe, merged)
    sv.table_of(probe, merged)
    stated_d = r.setdefault("derived", {})
    for field in ("tokens_per_s", "interactivity"):
        if not chk.same(where, f"derived.{field}", stated_d.get(field), probe["derived"].get(field)):
            stated_d[field] = probe["derived"].get(field)
    # the table is the summary rendered (serving_table), not a figure: rendered again, whatever
    # an earlier version wrote (its figures are each checked above)
    info["table"] = probe["info"]["table"]
    if chk.fix:
        info["serving"] = merged
    _flags(r, ([UNVERIFIED_TOKENS] if (merged.get("usage") or {}).get("verified") is False else [])
           + ([sv.INVALID_REQUESTS] if merged.get("invalid") else []), chk, where)


def _request(row: dict, tokenizer: str | None, chk: _Checker, where: str) -> None:
    """A completed request's token figures are the counts beside them, as the client chose them
    (serving_summary.counted_output), and nothing beside them contradicts its usage
    (serving_summary.token_problem, the client's own rules); never past max_tokens."""
    from gpuparity.results.serving_summary import counted_output, token_problem

    if not row.get("ok"):
        return
    s_out, c_out, out = row.get("server_output_tokens"), row.get("client_output_tokens"), row.get("output_tokens")
    what = f"{where} request {row.get('trial')}/{row.get('i')}"
    if out != counted_output(row):
        chk.refuse(what, f"output_tokens {_show(out)} is not the count beside it (server {s_out}, client {c_out})")
    if isinstance(row.get("max_tokens"), int) and isinstance(out, int) and out > row["max_tokens"]:
        chk.refuse(what, f"output_tokens {out} is past its max_tokens {row['max_tokens']}")
    problem = token_problem(row, bool(tokenizer))
    if problem:
        chk.refuse(what, f"marked ok, but {problem}")
    s_in, c_in = row.get("server_input_tokens"), row.get("client_input_tokens")
    if (c_in is not None or s_in is not None) and row.get("input_tokens") != (c_in if c_in is not None else s_in):
        chk.refuse(what, f"input_tokens {_show(row.get('input_tokens'))} is not the count beside it "
                         f"(client {c_in}, server {s_in})")


def _serving_fields(stated: dict, derived: dict, chk: _Checker, where: str) -> None:
    for field in SERVING_FIELDS:
        if field in derived and not chk.same(where, f"info.serving.{field}", stated.get(field), derived[field]):
            stated[field] = derived[field]
