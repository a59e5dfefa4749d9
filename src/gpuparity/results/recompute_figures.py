"""One result's figures recomputed (results/recompute.py): its key, each trial's figure from its
slice of the samples, the result's figure and interval, a schema-1 result as one trial, the
summary, the derived rates and workload figures, weak scaling, and the flags a reader relies on.
"""

from __future__ import annotations

import math

from gpuparity.results.recompute_checker import FLAG, REL_TOL, _Checker, _close, _num, _show

MIN_DISTINCT = 2                # trials with this many identical timings are one trial copied (llm trials hold 2)
# missing ones make a figure look better
CHECKED_FLAGS = ("unstable", "peak_exceeded", "unverified_tokens", "invalid_requests")
RATE_FIELDS = ("tflops", "gbs", "tokens_per_s", "pct_peak")     # figure.derive_rates


def _key(r: dict, chk: _Checker, where: str) -> None:
    from gpuparity.results.schema import result_key

    key = result_key(r["workload"], r["params"], r["dtype"])
    if key != r["key"]:
        chk.differ(where, f"key states {r['key']}, its workload + params + dtype give {key}")
        r["key"] = key


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
