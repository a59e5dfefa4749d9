"""Compare two platforms: per-key ratio B/A with a bootstrap CI, verdicts, category geomeans,
and the same ratios normalised per spec peak, per GPU-hour price and per watt.

Two loaders feed one columnar core (`compare_core`): run documents (`side_from_runs`: the
Python API, JSON files, the report) and the store's `results` table (`side_from_store`: the fast
path, which parses no run document unless a run has power telemetry or serving curves).

Statistics (repeated in the report's method notes):
- A side with several runs pools the raw samples of the same key (run-to-run spread counts as
  noise); spec, power and serving info come from the newest run holding the key.
- ratio = median(B samples) / median(A samples) of throughput (higher is better).
- 95% CI: bootstrap of the ratio of medians, each side resampled independently, as a normal
  interval in log space: log ratio +- z * sqrt(var_A + var_B), where var is the bootstrap
  variance of the log median. That variance is computed without resampling each key: for n
  sorted samples the median of a resample is the mean of two order statistics whose indices
  depend only on n, so their distribution is drawn once per n (Beta order statistics of
  uniforms, 20,000 draws) and applied to every key with that n as weights.
- verdict: faster / slower when the CI lies wholly beyond 1 +- tolerance, parity when it lies
  wholly within, inconclusive when it straddles a boundary or cannot be estimated (< 2 samples).
- category geomean: exp(mean log ratio) over keys with a CI; its CI sums the keys' variances
  (keys are measured independently).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from gpuparity.analysis.estimate import LEVEL, VERDICTS, geomean, log_median_stats, verdict, verdicts
from gpuparity.analysis.normalise import NORMALISED, _facts, _listed, _normalised_columns, _ratio_or_nan
from gpuparity.analysis.serving_compare import serving_at_equal_interactivity
from gpuparity.analysis.sides import Side, gc_paused, side_from_runs


@dataclass
class Core:
    """Matched keys (indices into each side) with ratios, CIs and verdict codes."""

    ia: np.ndarray
    ib: np.ndarray
    a_median: np.ndarray
    b_median: np.ndarray
    ratio: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    log_var: np.ndarray
    verdict: np.ndarray
    a_n: np.ndarray
    b_n: np.ndarray


def compare_core(a: Side, b: Side, tolerance: float = 0.05, level: float = LEVEL) -> Core:
    """Ratios B/A, CIs and verdicts for every key present (ok) on both sides."""
    other = np.array([b.index.get(k, -1) for k in a.keys], dtype=np.int64)
    ia = np.nonzero(other >= 0)[0]
    ib = other[ia]
    ma, va, na = log_median_stats(a.flat, a.owner, len(a.keys))
    mb, vb, nb = log_median_stats(b.flat, b.owner, len(b.keys))
    ratio = mb[ib] / ma[ia] if len(ia) else np.empty(0)
    log_var = va[ia] + vb[ib]
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    half = z * np.sqrt(log_var)
    with np.errstate(invalid="ignore"):
        lo, hi = ratio * np.exp(-half), ratio * np.exp(half)
    return Core(ia, ib, ma[ia], mb[ib], ratio, lo, hi, log_var, verdicts(lo, hi, tolerance), na[ia], nb[ib])


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


def side_summary(side: Side, prices) -> dict:
    newest = side.runs[-1] if side.runs else {}
    spec = (newest.get("fingerprint") or {}).get("spec") or {}
    price, source = prices.price(spec.get("id")) if prices else (None, None)

    def uniq(name):
        return sorted({str(r.get(name)) for r in side.runs if r.get(name) is not None})

    powered = int(np.isfinite(side.power).sum())
    return {
        "label": side.label, "run_ids": [r["run_id"] for r in side.runs], "hosts": uniq("host"),
        "products": uniq("product"), "spec_ids": uniq("spec_id"), "stacks": uniq("stack"), "torch": uniq("torch"),
        "drivers": uniq("driver"), "started": [side.runs[0]["started_at"], newest["started_at"]] if side.runs else [],
        "n_results": len(side.keys) + len(side.failed), "spec_estimated": bool(spec.get("estimated")),
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


@gc_paused
def compare_sides(a: Side, b: Side, tolerance: float = 0.05, prices=None, level: float = LEVEL) -> dict:
    """The comparison document (see compare_runs); the statistics come from `compare_core`, and
    every per-row figure is computed as a column (100k rows in about a second)."""
    if prices is None:
        from gpuparity.analysis.prices import PriceBook

        prices = PriceBook(use_config=False)
    core = compare_core(a, b, tolerance, level)
    ident = _idents(a, core.ia)
    order = _row_order(ident)
    cols = {name: [col[j] for j in order] for name, col in ident.items()}
    order = np.array(order, dtype=np.int64)
    ia, ib = core.ia[order], core.ib[order]
    ratio, lo, hi = core.ratio[order], core.ci_low[order], core.ci_high[order]
    a_value, b_value = core.a_median[order], core.b_median[order]
    n = len(ia)
    cols.update({
        "a_value": a_value.tolist(), "b_value": b_value.tolist(), "a_n": core.a_n[order].tolist(),
        "b_n": core.b_n[order].tolist(), "ratio": ratio.tolist(), "ci_low": _listed(lo), "ci_high": _listed(hi),
        "verdict": [VERDICTS[v] for v in core.verdict[order].tolist()], "tolerance": [tolerance] * n,
        "a_runs": a.n_runs[ia].tolist(), "b_runs": b.n_runs[ib].tolist(),
    })
    facts_a, facts_b = _facts(a, ia, prices), _facts(b, ib, prices)
    cols.update(_normalised_columns(a_value, *facts_a, cols["unit"], "a"))
    cols.update(_normalised_columns(b_value, *facts_b, cols["unit"], "b"))
    factors = {}
    for suffix, fa, fb in zip(NORMALISED, facts_a[:3], facts_b[:3], strict=True):
        # Per peak / per $ / per W ratio = (B/x_B) / (A/x_A) = ratio * x_A / x_B; the CI scales alike.
        f = factors[suffix] = _ratio_or_nan(fa, fb)
        cols[f"ratio_{suffix}"], cols[f"ci_low_{suffix}"], cols[f"ci_high_{suffix}"] = (
            _listed(ratio * f), _listed(lo * f), _listed(hi * f))
        known = np.isfinite(f).tolist()
        cols[f"verdict_{suffix}"] = [VERDICTS[v] if k else None
                                     for v, k in zip(verdicts(lo * f, hi * f, tolerance).tolist(), known, strict=True)]
    rows = _rows(cols)
    for j, k in enumerate(ib.tolist()):
        if b.meta[k][4] != cols["unit"][j]:
            rows[j]["note"] = f"units differ: {cols['unit'][j]} vs {b.meta[k][4]}"
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
    return {
        "tolerance": tolerance, "level": level, "price_basis": getattr(prices, "basis", None),
        "rows": rows, "only_a": _rows(_idents(a, only_a)), "only_b": _rows(_idents(b, only_b)),
        "not_compared": not_compared,
        "geomean": _geomeans(cols["category"], ratio, core.log_var[order], factors, tolerance, level),
        "serving": serving_at_equal_interactivity(a, b, tolerance),
        "sides": {"a": side_summary(a, prices), "b": side_summary(b, prices)},
    }


def _geomeans(categories: list, ratio: np.ndarray, log_var: np.ndarray, factors: dict, tolerance: float,
              level: float) -> dict:
    """Per category (and 'all' when there are several) geometric mean of ratios with a CI, over the
    keys with a CI; the normalised views only where every one of those keys has the normalisation."""
    cats = np.array([c or "other" for c in categories], dtype=object)
    has_ci = np.isfinite(log_var) & np.isfinite(ratio) & (ratio > 0)
    names = sorted(set(cats.tolist()))
    out = {}
    for cat in [*names, "all"]:
        sel = has_ci & (cats == cat) if cat != "all" else has_ci
        if not sel.any() or (cat == "all" and len(names) < 2):
            continue
        g, lo, hi = geomean(ratio[sel], log_var[sel], level)
        entry = {"ratio": g, "ci_low": lo, "ci_high": hi, "verdict": verdict(lo, hi, tolerance), "n": int(sel.sum())}
        for suffix in NORMALISED:
            f = factors[suffix][sel]
            if np.all(np.isfinite(f) & (f > 0)):
                m = math.exp(float(np.mean(np.log(f))))
                entry[f"ratio_{suffix}"], entry[f"ci_low_{suffix}"], entry[f"ci_high_{suffix}"] = g * m, lo * m, hi * m
                entry[f"verdict_{suffix}"] = verdict(lo * m, hi * m, tolerance)
        out[cat] = entry
    return out


def compare_runs(runs_a: list[dict], runs_b: list[dict], tolerance: float = 0.05) -> dict:
    """Compare run documents of platform A with those of platform B.

    Several runs on a side are pooled by key (see the module notes). Returns {"rows", "only_a",
    "only_b", "not_compared", "geomean", "serving", "sides", ...}; each row has key, workload,
    category, params, dtype, unit, a_value, b_value, ratio, ci_low, ci_high, verdict and the
    normalised fields (a_/b_pct_peak, ratio_per_peak, ratio_per_dollar, ratio_per_watt, ...).
    """
    return compare_sides(side_from_runs(runs_a, "A"), side_from_runs(runs_b, "B"), tolerance)


def slower_than(result: dict, threshold: float) -> list[str]:
    """Rows and category geomeans slower than 1 - threshold with confidence (CI upper bound below)."""
    bad = [f"{r['workload']} {r['key']}" for r in result["rows"]
           if r["ci_high"] is not None and r["ci_high"] < 1 - threshold]
    bad += [f"geomean {cat}" for cat, g in result["geomean"].items() if g["ci_high"] < 1 - threshold]
    return bad
