"""The rows of a comparison document: one per key present on both sides, in reading order
(category, workload, dtype, parameters), every per-row figure computed as a column (100k rows in
about a second): values, ratio, interval, verdict, its hold, the load and spread beside it, the
figures per peak, per $ and per W (comparison/normalise.py), a note where units or power differ.
Also the results not compared (failed or skipped on a side) and those on one side only."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from gpuparity.comparison.estimate import SideEstimate
from gpuparity.comparison.flags import held
from gpuparity.comparison.normalise import _facts, _listed, _normalised_columns, normalised_ratios
from gpuparity.comparison.ratios import Core
from gpuparity.comparison.sides import Side
from gpuparity.comparison.verdict import VERDICTS
from gpuparity.results.figure import PEAK_EXCEEDED


@dataclass
class Rows:
    """A comparison's rows and what its category means reuse of them (rows in `order` of the core's keys)."""

    order: np.ndarray       # row j is the core's key order[j]
    cols: dict              # the rows as columns
    rows: list[dict]
    factors: dict           # per normalised view: the factor per row, and its (low, high) range
    ranges: dict
    measured: np.ndarray    # per row: power measured on both sides
    watt_mixed: int         # rows with a per-watt ratio on datasheet TDP (no verdict)


def idents(side: Side, idx) -> dict:
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


def as_rows(columns: dict) -> list[dict]:
    names = list(columns)      # equal-length columns; strict zips cost a third more here
    return [dict(zip(names, values, strict=False)) for values in zip(*columns.values(), strict=False)]


def _natural(params: dict) -> tuple:
    """Parameters as a sort key whatever their types: numbers by value, anything else by text."""
    return tuple((k, (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v)))
                 for k, v in sorted((params or {}).items()))


def row_order(ident: dict) -> list[int]:
    """Rows by category, workload, dtype, then parameters (m=256 before m=1024), then key."""
    columns = (ident["category"], ident["workload"], ident["dtype"], ident["params"], ident["key"])

    def order(param_key) -> list[int]:
        keys = [(c or "", w, d or "", param_key(p), k) for c, w, d, p, k in zip(*columns, strict=True)]
        return sorted(range(len(keys)), key=keys.__getitem__)

    try:    # the usual case: a parameter has one type across rows, so its values compare directly
        return order(lambda p: tuple(sorted(p.items())) if p else ())
    except TypeError:
        return order(_natural)


def _assumed(est: SideEstimate, idx: np.ndarray) -> np.ndarray:
    """Per key: the run-to-run spread its side assumed (a Prior), NaN where its runs measured it."""
    with np.errstate(invalid="ignore"):
        return np.where(est.source[idx] >= 0, np.sqrt(est.shared[idx] + est.prior_key[idx] * est.runs[idx]), np.nan)


def result_rows(a: Side, b: Side, core: Core, adjusted: np.ndarray, prices, tolerance: float) -> Rows:
    """The rows of the keys both sides have: `adjusted` holds each key's Benjamini-Hochberg verdict code."""
    ident = idents(a, core.ia)
    order = row_order(ident)
    cols = {name: [col[j] for j in order] for name, col in ident.items()}
    order = np.array(order, dtype=np.int64)
    ia, ib = core.ia[order], core.ib[order]
    ratio, lo, hi = core.ratio[order], core.ci_low[order], core.ci_high[order]
    a_value, b_value = core.a_value[order], core.b_value[order]
    flagged = core.flagged[order]
    n = len(ia)
    flags = [sorted(set(a.flags[i]) | set(b.flags[j])) for i, j in zip(ia.tolist(), ib.tolist(), strict=True)]
    cols.update({
        "a_value": a_value.tolist(), "b_value": b_value.tolist(), "a_trials": core.a_units[order].astype(int).tolist(),
        "b_trials": core.b_units[order].astype(int).tolist(), "ratio": _listed(ratio), "ci_low": _listed(lo),
        "ci_high": _listed(hi), "verdict": [VERDICTS[v] for v in core.verdict[order].tolist()],
        "tolerance": [tolerance] * n, "a_runs": a.n_runs[ia].tolist(), "b_runs": b.n_runs[ib].tolist(),
        "log_se": _listed(np.sqrt(core.log_var[order])), "df": _listed(core.df[order]),
        "flags": flags, "held": held(core, order, flags),
        "fdr_verdict": [VERDICTS[v] for v in adjusted[order].tolist()],
        # beside every figure: the CPU load it was timed beside, the run-to-run spread a one-run side assumed
        "a_load": _listed(core.load_a[ia]), "b_load": _listed(core.load_b[ib]),
        "a_spread": _listed(_assumed(core.est_a, ia)), "b_spread": _listed(_assumed(core.est_b, ib)),
    })
    facts_a, facts_b = _facts(a, ia, prices), _facts(b, ib, prices)
    cols.update(_normalised_columns(a_value, *facts_a, cols["unit"], "a"))
    cols.update(_normalised_columns(b_value, *facts_b, cols["unit"], "b"))
    exceeded = cols.pop("_a_exceeded") | cols.pop("_b_exceeded")      # a peak the figure is above: flagged
    cols["flags"] = [sorted({*f, PEAK_EXCEEDED}) if x else f for f, x in zip(flags, exceeded.tolist(), strict=True)]
    normalised, factors, ranges, measured = normalised_ratios(a, ia, b, ib, prices, facts_a, facts_b, ratio, lo, hi,
                                                              flagged, tolerance)
    cols.update(normalised)
    rows = as_rows(cols)
    watt_mixed = 0
    for j, k in enumerate(ib.tolist()):
        notes = []
        if b.meta[k][4] != cols["unit"][j]:
            notes.append(f"units differ: {cols['unit'][j]} vs {b.meta[k][4]}")
        if not measured[j] and np.isfinite(factors["per_watt"][j]):
            watt_mixed += 1
            notes.append(f"per watt: power {facts_a[3][j] or 'unknown'} (A) vs {facts_b[3][j] or 'unknown'} (B): "
                         "a plain ratio, no verdict")
        if notes:
            rows[j]["note"] = "; ".join(notes)
    return Rows(order, cols, rows, factors, ranges, measured, watt_mixed)


def not_compared(a: Side, b: Side) -> list[dict]:
    """Every failed / skipped result, whether or not the other side has the key, with the other side's
    status; and every key ok on both sides in different units (comparison/units.py: no ratio)."""
    from gpuparity.comparison.units import mismatched

    out = mismatched(a, b)
    for side, other in ((a, b), (b, a)):
        for key, info in side.failed.items():
            p = info["params"]
            there = "ok" if key in other.index else other.failed[key]["status"] if key in other.failed else "absent"
            out.append({**info, "params": json.loads(p) if isinstance(p, str) else p,
                        "side": side.label, "other_side": there})
    out.sort(key=lambda r: (r["workload"], r["key"], r["side"]))
    return out


def only_on(side: Side, other: Side) -> list[dict]:
    """The keys of `side` that `other` neither has nor failed, as rows of their identity."""
    return as_rows(idents(side, [i for i, k in enumerate(side.keys) if k not in other.index and k not in other.failed]))
