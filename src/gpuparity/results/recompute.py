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

Here: the document and the dispatch per result. How a figure is held (recompute_checker), the
bounds (recompute_bounds), one result's figures (recompute_figures) and a serving point's
(recompute_serving) each have their module.
"""

from __future__ import annotations

from gpuparity.errors import UserError
from gpuparity.results.recompute_bounds import _devices, _work, check_dates, check_power
from gpuparity.results.recompute_checker import FLAG, _Checker, _num, _show
from gpuparity.results.recompute_figures import (
    _counted,
    _derived,
    _figure,
    _key,
    _legacy,
    _legacy_peak_kind,
    _scaling,
    _summary,
    _table,
    _trial_units,
)
from gpuparity.results.recompute_serving import _serving

MAX_NOTES = 20


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
