"""Compare two platforms: per-key ratio B/A with its interval, verdicts, category geomeans, and
the same ratios normalised per spec peak, per GPU-hour price and per watt.

Two loaders (analysis/sides.py) feed one columnar core (`compare_core`); the statistics are in
analysis/estimate.py (read its notes: trials as units, a t-interval over trials, an assumed
run-to-run floor for single-trial sides, joint geomeans); normalisation in analysis/normalise.py;
serving at equal interactivity in analysis/serving_compare.py.

Rules beyond the statistics:
- A result flagged unstable or host_bound on either side is at most "inconclusive"; so is a serving
  point whose token counts no tokenizer checked (unverified_tokens: the server's word alone makes no claim).
- Per peak: each result against its own peak kind (HBM for memory kernels, the fabric for
  collectives, the host link for host<->device copies, the dtype's dense peak for FLOP/s).
- Per watt: a verdict only where both sides have the same power source (measured telemetry on
  both, or datasheet TDP on both); otherwise the ratio is shown with a note and no verdict.
- A/A: sides whose fingerprints are identical (host, hardware, driver, stack, libraries, env
  flags) are said to be an A/A comparison: any faster/slower there is noise or drift.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from gpuparity.analysis.estimate import (
    LEVEL,
    VERDICTS,
    geomean_ratio,
    key_estimates,
    log_interval,
    verdict,
    verdicts,
    welch_df,
)
from gpuparity.analysis.normalise import NORMALISED, _facts, _listed, _normalised_columns, _ratio_or_nan
from gpuparity.analysis.serving_compare import serving_at_equal_interactivity
from gpuparity.analysis.sides import Side, gc_paused, side_from_runs
from gpuparity.results.figure import PEAK_EXCEEDED

NO_CLAIM = {"unstable", "host_bound", "unverified_tokens"}      # flags that hold a verdict at "inconclusive"

VOLATILE_FINGERPRINT = ("telemetry", "unknown")     # describe the moment, not the platform


@dataclass
class Core:
    """Matched keys (indices into each side) with values, ratios, CIs and verdict codes."""

    ia: np.ndarray
    ib: np.ndarray
    a_value: np.ndarray
    b_value: np.ndarray
    ratio: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    log_var: np.ndarray
    df: np.ndarray
    verdict: np.ndarray
    a_units: np.ndarray
    b_units: np.ndarray
    unstable: np.ndarray
    est_a: tuple
    est_b: tuple


def run_spread(floor: float | None) -> float:
    from gpuparity.results.figure import run_spread_default

    return run_spread_default() if floor is None else floor


def compare_core(a: Side, b: Side, tolerance: float = 0.05, level: float = LEVEL,
                 floor: float | None = None) -> Core:
    """Ratios B/A, CIs and verdicts for every key present (ok) on both sides."""
    floor = run_spread(floor)
    other = np.array([b.index.get(k, -1) for k in a.keys], dtype=np.int64)
    ia = np.nonzero(other >= 0)[0]
    ib = other[ia]
    est_a, est_b = key_estimates(a, floor), key_estimates(b, floor)
    va, la, vara, dfa, na = (x[ia] for x in est_a)
    vb, lb, varb, dfb, nb = (x[ib] for x in est_b)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = vb / va
    log_var = vara + varb
    df = welch_df(vara, dfa, varb, dfb)
    lo, hi = log_interval(np.log(ratio), log_var, df, level)
    unstable = np.array([bool(NO_CLAIM & (set(a.flags[i]) | set(b.flags[j])))
                         for i, j in zip(ia.tolist(), ib.tolist(), strict=True)], dtype=bool)
    codes = verdicts(lo, hi, tolerance)
    codes = np.where(unstable, VERDICTS.index("inconclusive"), codes)
    return Core(ia, ib, va, vb, ratio, lo, hi, log_var, df, codes, na, nb, unstable, est_a, est_b)


def _idents(side: Side, idx) -> dict:
    """key, workload, category, params, dtype, unit of keys idx, as columns."""
    idx = [int(i) for i in idx]
    meta = [side.meta[i] for i in idx]
    raw = [m[2] for m in meta]
    if raw and all(isinstance(p, str) for p in raw):
        params = json.loads("[" + ",".join(raw) + "]")     # one parse for all: ~3x faster than each
    else:
        params = [json.loads(p) if isinstance(p, str) else p for p in raw]
    return {"key": [side.keys[i] for i in idx], "workload": [m[0] for m in meta], "category": [m[1] for m in meta],
            "params": params, "dtype": [m[3] for m in meta], "unit": [m[4] for m in meta]}


def _rows(columns: dict) -> list[dict]:
    names = list(columns)      # equal-length columns; strict zips cost a third more here
    return [dict(zip(names, values, strict=False)) for values in zip(*columns.values(), strict=False)]


def _flatten(obj, prefix: str = "") -> dict:
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: obj}


def fingerprint_diff(fa: dict | None, fb: dict | None) -> dict:
    """What differs between two fingerprints (dotted field names), volatile fields left out."""
    flat_a = {k: v for k, v in _flatten(fa or {}).items() if not k.startswith(VOLATILE_FINGERPRINT)}
    flat_b = {k: v for k, v in _flatten(fb or {}).items() if not k.startswith(VOLATILE_FINGERPRINT)}
    diff = sorted(k for k in set(flat_a) | set(flat_b) if flat_a.get(k) != flat_b.get(k))
    return {"identical": not diff and bool(flat_a), "differences": diff,
            "values": {k: [flat_a.get(k), flat_b.get(k)] for k in diff[:200]}}


def side_summary(side: Side, prices, floor: float | None = None) -> dict:
    newest = side.runs[-1] if side.runs else {}
    spec = (newest.get("fingerprint") or {}).get("spec") or {}
    price, source = prices.price(spec.get("id")) if prices else (None, None)

    def uniq(name):
        return sorted({str(r.get(name)) for r in side.runs if r.get(name) is not None})

    powered = int(np.isfinite(side.power).sum())
    units = np.bincount(side.u_key, minlength=len(side.keys)) if len(side.keys) else np.zeros(0)
    return {
        "label": side.label, "run_ids": [r["run_id"] for r in side.runs], "hosts": uniq("host"),
        "products": uniq("product"), "spec_ids": uniq("spec_id"), "stacks": uniq("stack"), "torch": uniq("torch"),
        "drivers": uniq("driver"), "labels": uniq("label"),
        "started": [side.runs[0]["started_at"], newest["started_at"]] if side.runs else [],
        "n_results": len(side.keys) + len(side.failed), "spec_estimated": bool(spec.get("estimated")),
        "runs": len(side.runs), "trials": int(units.sum()),
        "trials_per_result": float(np.median(units)) if len(units) else 0.0,
        "single_trial_results": int((units == 1).sum()), "run_spread_assumed": run_spread(floor),
        "usd_per_hour": price, "price_source": source, "tdp_w": spec.get("tdp_w"),
        "power": (f"measured on {powered} of {len(side.keys)} results, TDP elsewhere" if powered
                  else "datasheet TDP (no valid power telemetry)" if spec.get("tdp_w") else "unknown"),
        "fingerprint": newest.get("fingerprint"),
    }


def _natural(params: dict) -> tuple:
    """Parameters as a sort key whatever their types: numbers by value, anything else by text."""
    return tuple((k, (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v)))
                 for k, v in sorted((params or {}).items()))


def _row_order(ident: dict) -> list[int]:
    """Rows by category, workload, dtype, then parameters (m=256 before m=1024), then key."""
    columns = (ident["category"], ident["workload"], ident["dtype"], ident["params"], ident["key"])

    def order(param_key) -> list[int]:
        keys = [(c or "", w, d or "", param_key(p), k) for c, w, d, p, k in zip(*columns, strict=True)]
        return sorted(range(len(keys)), key=keys.__getitem__)

    try:    # the usual case: a parameter has one type across rows, so its values compare directly
        return order(lambda p: tuple(sorted(p.items())) if p else ())
    except TypeError:
        return order(_natural)


def _notes(a: Side, b: Side, core: Core, floor: float, aa: dict, watt_mixed: int) -> list[str]:
    notes = []
    single = [s.label for s, n in ((a, core.a_units), (b, core.b_units)) if len(n) and (n == 1).any()]
    if single:
        notes.append(f"single run: run-to-run spread assumed {100 * floor:g}% on side {' and '.join(single)} "
                     "(one trial cannot measure its own spread; --run-spread sets it, --trials N measures it)")
    if aa.get("identical"):
        notes.append("A/A: both sides have identical fingerprints (same host, hardware, driver and stack); "
                     "any faster/slower verdict here is noise or drift")
    if core.unstable.any():
        notes.append(f"{int(core.unstable.sum())} result(s) unstable, host-bound or with token counts no "
                     "tokenizer checked on a side: their verdicts are at most inconclusive")
    for side in (a, b):
        if len(side_products := {r.get("product") for r in side.runs}) > 1:
            notes.append(f"side {side.label} pools {len(side_products)} products: "
                         f"{', '.join(sorted(str(p) for p in side_products))}")
    if watt_mixed:
        notes.append(f"per watt: {watt_mixed} row(s) compare measured power with datasheet TDP; shown, no verdict")
    return notes


@gc_paused
def compare_sides(a: Side, b: Side, tolerance: float = 0.05, prices=None, level: float = LEVEL,
                  floor: float | None = None) -> dict:
    """The comparison document (see compare_runs); the statistics come from `compare_core`, and
    every per-row figure is computed as a column (100k rows in about a second)."""
    if prices is None:
        from gpuparity.analysis.prices import PriceBook

        prices = PriceBook(use_config=False)
    floor = run_spread(floor)
    core = compare_core(a, b, tolerance, level, floor)
    ident = _idents(a, core.ia)
    order = _row_order(ident)
    cols = {name: [col[j] for j in order] for name, col in ident.items()}
    order = np.array(order, dtype=np.int64)
    ia, ib = core.ia[order], core.ib[order]
    ratio, lo, hi = core.ratio[order], core.ci_low[order], core.ci_high[order]
    a_value, b_value = core.a_value[order], core.b_value[order]
    n = len(ia)
    flags = [sorted(set(a.flags[i]) | set(b.flags[j])) for i, j in zip(ia.tolist(), ib.tolist(), strict=True)]
    cols.update({
        "a_value": a_value.tolist(), "b_value": b_value.tolist(), "a_trials": core.a_units[order].astype(int).tolist(),
        "b_trials": core.b_units[order].astype(int).tolist(), "ratio": _listed(ratio), "ci_low": _listed(lo),
        "ci_high": _listed(hi), "verdict": [VERDICTS[v] for v in core.verdict[order].tolist()],
        "tolerance": [tolerance] * n, "a_runs": a.n_runs[ia].tolist(), "b_runs": b.n_runs[ib].tolist(),
        "flags": flags,
    })
    facts_a, facts_b = _facts(a, ia, prices), _facts(b, ib, prices)
    cols.update(_normalised_columns(a_value, *facts_a, cols["unit"], "a"))
    cols.update(_normalised_columns(b_value, *facts_b, cols["unit"], "b"))
    exceeded = cols.pop("_a_exceeded") | cols.pop("_b_exceeded")      # a peak the figure is above: flagged
    cols["flags"] = [sorted({*f, PEAK_EXCEEDED}) if x else f for f, x in zip(flags, exceeded.tolist(), strict=True)]
    same_power = np.array([sa == sb for sa, sb in zip(facts_a[3], facts_b[3], strict=True)], dtype=bool)
    factors = {}
    for suffix, fa, fb in zip(NORMALISED, facts_a[:3], facts_b[:3], strict=True):
        # Per peak / per $ / per W ratio = (B/x_B) / (A/x_A) = ratio * x_A / x_B; the CI scales alike.
        f = factors[suffix] = _ratio_or_nan(fa, fb)
        cols[f"ratio_{suffix}"], cols[f"ci_low_{suffix}"], cols[f"ci_high_{suffix}"] = (
            _listed(ratio * f), _listed(lo * f), _listed(hi * f))
        known = np.isfinite(f) & (same_power if suffix == "per_watt" else True)
        codes = np.where(core.unstable[order], VERDICTS.index("inconclusive"), verdicts(lo * f, hi * f, tolerance))
        cols[f"verdict_{suffix}"] = [VERDICTS[v] if k else None
                                     for v, k in zip(codes.tolist(), known.tolist(), strict=True)]
    rows = _rows(cols)
    watt_mixed = 0
    for j, k in enumerate(ib.tolist()):
        notes = []
        if b.meta[k][4] != cols["unit"][j]:
            notes.append(f"units differ: {cols['unit'][j]} vs {b.meta[k][4]}")
        if not same_power[j] and np.isfinite(factors["per_watt"][j]):
            watt_mixed += 1
            notes.append(f"per watt: power {facts_a[3][j] or 'unknown'} (A) vs {facts_b[3][j] or 'unknown'} (B)")
        if notes:
            rows[j]["note"] = "; ".join(notes)
    not_compared = []          # every failed / skipped result, whether or not the other side has the key
    for side, other in ((a, b), (b, a)):
        for key, info in side.failed.items():
            p = info["params"]
            there = "ok" if key in other.index else other.failed[key]["status"] if key in other.failed else "absent"
            not_compared.append({**info, "params": json.loads(p) if isinstance(p, str) else p,
                                 "side": side.label, "other_side": there})
    not_compared.sort(key=lambda r: (r["workload"], r["key"], r["side"]))
    only_a = [i for i, k in enumerate(a.keys) if k not in b.index and k not in b.failed]
    only_b = [i for i, k in enumerate(b.keys) if k not in a.index and k not in a.failed]
    sa, sb = side_summary(a, prices, floor), side_summary(b, prices, floor)
    aa = fingerprint_diff(sa.get("fingerprint"), sb.get("fingerprint"))
    aa["identical"] = aa["identical"] and len(sa["products"]) <= 1 and len(sb["products"]) <= 1
    return {
        "tolerance": tolerance, "level": level, "price_basis": getattr(prices, "basis", None),
        "run_spread_assumed": floor,
        "rows": rows, "only_a": _rows(_idents(a, only_a)), "only_b": _rows(_idents(b, only_b)),
        "not_compared": not_compared,
        "geomean": _geomeans(a, b, core, order, cols["category"], factors, same_power, tolerance, level, floor),
        "serving": serving_at_equal_interactivity(a, b, tolerance, floor=floor),
        "sides": {"a": sa, "b": sb}, "aa": aa,
        "notes": _notes(a, b, core, floor, aa, watt_mixed),
    }


def _geomeans(a: Side, b: Side, core: Core, order: np.ndarray, categories: list, factors: dict,
              same_power: np.ndarray, tolerance: float, level: float, floor: float) -> dict:
    """Per category (and 'all' when there are several) geometric mean of ratios with a joint CI
    (estimate.geomean_ratio) over the keys with a CI; normalised views only where every one of
    those keys has the normalisation (per watt: and the same power source on both sides)."""
    cats = np.array([c or "other" for c in categories], dtype=object)
    ratio, log_var = core.ratio[order], core.log_var[order]
    has_ci = np.isfinite(log_var) & np.isfinite(ratio) & (ratio > 0)
    ia, ib = core.ia[order], core.ib[order]
    names = sorted(set(cats.tolist()))
    out = {}
    for cat in [*names, "all"]:
        sel = has_ci & (cats == cat) if cat != "all" else has_ci
        if not sel.any() or (cat == "all" and len(names) < 2):
            continue
        g, lo, hi = geomean_ratio(a, b, ia[sel], ib[sel], core.est_a, core.est_b, floor, level)
        unstable = bool(core.unstable[order][sel].all())
        entry = {"ratio": g, "ci_low": lo, "ci_high": hi, "n": int(sel.sum()),
                 "verdict": "inconclusive" if unstable else verdict(lo, hi, tolerance),
                 "a_trials": float(np.median(core.a_units[order][sel])),
                 "b_trials": float(np.median(core.b_units[order][sel]))}
        for suffix in NORMALISED:
            f = factors[suffix][sel]
            ok = np.all(np.isfinite(f) & (f > 0)) and (suffix != "per_watt" or bool(same_power[sel].all()))
            if ok:
                m = math.exp(float(np.mean(np.log(f))))
                entry[f"ratio_{suffix}"], entry[f"ci_low_{suffix}"], entry[f"ci_high_{suffix}"] = g * m, lo * m, hi * m
                entry[f"verdict_{suffix}"] = entry["verdict"] if unstable else verdict(lo * m, hi * m, tolerance)
        out[cat] = entry
    return out


def compare_runs(runs_a: list[dict], runs_b: list[dict], tolerance: float = 0.05, floor: float | None = None) -> dict:
    """Compare run documents of platform A with those of platform B.

    Several runs on a side are pooled by key (their trials are the units). Returns {"rows",
    "only_a", "only_b", "not_compared", "geomean", "serving", "sides", "aa", "notes", ...}; each row
    has key, workload, category, params, dtype, unit, a_value, b_value, a_trials, b_trials, ratio,
    ci_low, ci_high, verdict, flags and the normalised fields (a_/b_pct_peak, ratio_per_peak,
    ratio_per_dollar, ratio_per_watt, ...).
    """
    return compare_sides(side_from_runs(runs_a, "A"), side_from_runs(runs_b, "B"), tolerance, floor=floor)


def regression_gate(doc: dict, threshold: float) -> dict:
    """Rows and category geomeans slower than 1 - threshold with confidence (CI upper bound
    below it): what `compare --fail-if-slower` fails on, named by workload, params and dtype."""
    failed = [{"workload": r["workload"], "params": r["params"], "dtype": r["dtype"], "key": r["key"],
               "ratio": r["ratio"], "ci_high": r["ci_high"]}
              for r in doc["rows"] if r["ci_high"] is not None and r["ci_high"] < 1 - threshold]
    failed += [{"workload": f"geomean {cat}", "params": {}, "dtype": None, "key": None, "ratio": g["ratio"],
                "ci_high": g["ci_high"]}
               for cat, g in doc["geomean"].items() if g["ci_high"] is not None and g["ci_high"] < 1 - threshold]
    return {"threshold": threshold, "passed": not failed, "failed": failed}
