"""Compare two platforms: per-key ratio B/A with its interval, verdicts, category means, and
the same ratios normalised per spec peak, per GPU-hour price and per watt.

Two loaders (comparison/sides.py) feed one columnar core (`compare_core`); the statistics are in
comparison/estimate.py (read its notes: the run as the unit, moderated variances, a prior for the
run-to-run spread a one-run side cannot see, the symmetric band, multiplicity), the means in
comparison/means.py; the prior comes from the store's history over occasions
(comparison/history.py) or a default with 2 df (comparison/priors.py);
normalisation in comparison/normalise.py; serving at equal interactivity in
comparison/serving_compare.py.

Rules beyond the statistics:
- A result flagged unstable, host_bound or contended on either side is at most "inconclusive"; so
  is a serving point whose token counts no tokenizer checked (unverified_tokens: the server's word
  alone makes no claim), and a category mean whose results are mostly flagged. Each row's and
  mean's "held" says why its verdict is held there (None: not held).
- A result flagged "throttled" (the loop kept batches timed with the SM clock below 3/4 of its
  warmed-up clock, measure/loop.py) is held too when the driver's reasons for it were thermal or
  hardware slowdown, or were not recorded: heat and hardware faults are a state of this box at
  that moment, not of the platform. Power (or current) capping alone is not held: a GPU at its
  power cap runs at the clock the cap allows, its steady state under load, which is what the
  platform delivers (platform/machine.py draws the same line for contention).
- A side with a contended run (the machine was busy: platform/machine.py) gives no faster or
  slower verdict anywhere in the comparison (rows, means, normalised views, serving); the notes,
  doc["contended"], each side summary and the headline say which side and why.
- Per peak: each result against its own peak kind (HBM for memory kernels, the fabric for
  collectives, the host link for host<->device copies, the dtype's dense peak for FLOP/s).
- Per dollar: the ratio scales by price A / price B; its interval by that factor's range over the
  price book's bases (comparison/normalise.dollar_range), so a verdict holds at any of them.
- Per watt: a verdict only where both sides measured power; datasheet TDP (on either side) gives a
  plain ratio with a note and no verdict.
- Means: per category, and "all" with categories weighted equally (comparison/means.py); a mean
  whose keys disagree beyond the band reads "mixed" (comparison/heterogeneity.py).
- Load: each row carries the CPU load its figures were timed beside (a_load, b_load) and, for a
  one-run side, the run-to-run spread it assumed (a_spread, b_spread); a busy result's interval is
  widened for its load (comparison/load.py).
- A/A: sides whose fingerprints are identical (host, hardware, driver, stack, libraries, env
  flags) are said to be an A/A comparison: any faster/slower there is noise or drift.
- Scope: with one box a side the verdicts are about those boxes; doc["scope"] says what a claim
  about the products assumes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from gpuparity.comparison.estimate import (
    LEVEL,
    MOSTLY,
    VERDICTS,
    SideEstimate,
    fdr_counts,
    fdr_verdicts,
    gate_failures,
    log_interval,
    pair_df,
    side_estimate,
    verdicts,
)
from gpuparity.comparison.flags import flagged as _flagged
from gpuparity.comparison.flags import hot_throttled, read_throttle_infos
from gpuparity.comparison.heterogeneity import mixed
from gpuparity.comparison.load import load_words, side_load
from gpuparity.comparison.means import group_means
from gpuparity.comparison.normalise import (
    NORMALISED,
    _facts,
    _listed,
    _normalised_columns,
    _ratio_or_nan,
    dollar_range,
)
from gpuparity.comparison.priors import default_priors
from gpuparity.comparison.serving_compare import serving_at_equal_interactivity
from gpuparity.comparison.sides import Side, gc_paused, side_from_runs
from gpuparity.results.figure import PEAK_EXCEEDED, UNVERIFIED_TOKENS

NO_CLAIM = {"unstable", "host_bound", UNVERIFIED_TOKENS}      # flags that hold a verdict at "inconclusive"

VOLATILE_FINGERPRINT = ("telemetry", "unknown", "slurm")     # describe the moment (and job), not the platform
INCONCLUSIVE = VERDICTS.index("inconclusive")


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
    est_a: SideEstimate
    est_b: SideEstimate
    log_ratio: np.ndarray = None
    flagged: np.ndarray = None      # unstable, throttled by heat or contended on a side: at most inconclusive
    contended: list = None          # [{"side", "runs": [{"run_id", "reasons"}]}] of contended sides
    throttled: np.ndarray = None    # throttled, not by power capping alone (see the module notes)
    load_a: np.ndarray = None       # per key of each side: the CPU load share it was timed beside (comparison/load)
    load_b: np.ndarray = None


def run_spread(floor: float | None, category: str | None = None) -> float:
    """The spread assumed without history: --run-spread, GPUPARITY_RUN_SPREAD or the default."""
    from gpuparity.results.figure import run_spread_default

    return run_spread_default(category) if floor is None else floor


def compare_core(a: Side, b: Side, tolerance: float = 0.05, level: float = LEVEL,
                 floor: float | None = None, priors: tuple | None = None) -> Core:
    """Ratios B/A, CIs and verdicts for every key present (ok) on both sides. `priors`: (A's,
    B's) {category: Prior} for the categories they cannot measure (default_priors when None)."""
    pa, pb = priors if priors is not None else (default_priors(a, floor), default_priors(b, floor))
    other = np.array([b.index.get(k, -1) for k in a.keys], dtype=np.int64)
    ia = np.nonzero(other >= 0)[0]
    ib = other[ia]
    (load_a, bias_a), (load_b, bias_b) = side_load(a), side_load(b)
    est_a, est_b = side_estimate(a, pa, bias_a), side_estimate(b, pb, bias_b)
    va, la, vara, na = est_a.value[ia], est_a.mean[ia], est_a.var[ia], est_a.trials[ia]
    vb, lb, varb, nb = est_b.value[ib], est_b.mean[ib], est_b.var[ib], est_b.trials[ib]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = vb / va
    log_ratio = lb - la
    log_var = vara + varb
    df = pair_df(est_a, est_b, ia, ib)
    lo, hi = log_interval(log_ratio, log_var, df, level)
    # the row's ratio is of the values shown (a single trial's stored figure); its CI is centred on it
    with np.errstate(invalid="ignore", divide="ignore"):
        shift = np.where(np.isfinite(ratio) & (ratio > 0), np.log(np.where(ratio > 0, ratio, 1.0)) - log_ratio, 0.0)
    lo, hi = lo * np.exp(shift), hi * np.exp(shift)
    unstable = np.zeros(len(ia), dtype=bool)
    for flag in NO_CLAIM:
        unstable |= _flagged(a, b, ia, ib, flag)
    throttled = hot_throttled(a)[ia] | hot_throttled(b)[ib]
    contended = [{"side": s.label, "runs": s.contended} for s in (a, b) if s.contended]
    flagged = unstable | throttled | _flagged(a, b, ia, ib, "contended") | bool(contended)
    codes = np.where(flagged, INCONCLUSIVE, verdicts(lo, hi, tolerance))
    return Core(ia, ib, va, vb, ratio, lo, hi, log_var, df, codes, na, nb, unstable, est_a, est_b,
                log_ratio + shift, flagged, contended, throttled, load_a, load_b)


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


def side_summary(side: Side, prices, floor: float | None = None, est: SideEstimate | None = None) -> dict:
    newest = side.runs[-1] if side.runs else {}
    spec = (newest.get("fingerprint") or {}).get("spec") or {}
    price, source = prices.price(spec.get("id")) if prices else (None, None)

    def uniq(name):
        return sorted({str(r.get(name)) for r in side.runs if r.get(name) is not None})

    powered = int(np.isfinite(side.power).sum())
    units = np.bincount(side.u_key, minlength=len(side.keys)) if len(side.keys) else np.zeros(0)
    spreads = (est.basis if est is not None else {})
    assumed = [v["spread"] for v in spreads.values() if v["source"] != "runs"]
    return {
        "label": side.label, "run_ids": [r["run_id"] for r in side.runs], "hosts": uniq("host"),
        "products": uniq("product"), "spec_ids": uniq("spec_id"), "stacks": uniq("stack"), "torch": uniq("torch"),
        "drivers": uniq("driver"), "labels": uniq("label"), "jobs": uniq("job"), "nodes": uniq("node"),
        "started": [side.runs[0]["started_at"], newest["started_at"]] if side.runs else [],
        "n_results": len(side.keys) + len(side.failed), "spec_estimated": bool(spec.get("estimated")),
        "runs": len(side.runs), "trials": int(units.sum()),
        "trials_per_result": float(np.median(units)) if len(units) else 0.0,
        "runs_per_result": float(np.median(side.n_runs)) if len(side.n_runs) else 0.0,
        "single_trial_results": int((units == 1).sum()),
        "run_spread_assumed": max(assumed) if assumed else (run_spread(floor) if est is None else None),
        "run_spread": {cat: dict(v) for cat, v in spreads.items()},
        "contended": bool(side.contended), "contention": side.contended,
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


def _spread_notes(sides: list[Side], ests: list[SideEstimate]) -> list[str]:
    """Where each one-run side's run-to-run spread came from, one line per distinct source."""
    lines: dict[str, list[tuple]] = {}
    for side, est in zip(sides, ests, strict=True):
        for cat, b in est.basis.items():
            if b["source"] != "runs":
                lines.setdefault(b["text"], []).append((side.label, cat))     # a label may hold spaces (trend)
    out = []
    for text, where in lines.items():
        sides_text = " and ".join(dict.fromkeys(label for label, _ in where))
        cats = sorted({cat for _, cat in where})
        out.append(f"one run a side cannot measure its run-to-run spread: side {sides_text} ({', '.join(cats)}): "
                   f"{text}; --run-spread sets it, a second run measures it")
    return out


def _contention_notes(core: Core, a: Side, b: Side) -> list[str]:
    notes = []
    for c in core.contended:
        runs = "; ".join(f"run {r['run_id']}: {', '.join(r['reasons']) or 'busy'}" for r in c["runs"][:3])
        notes.append(f"side {c['side']} was contended (the machine was busy: {runs}): no result, category or "
                     "overall verdict is faster or slower; rerun it on a quiet machine")
    keys = int(_flagged(a, b, core.ia, core.ib, "contended").sum())
    if keys and not core.contended:
        notes.append(f"{keys} result(s) contended on a side (throttled or disturbed while timed): their verdicts "
                     "are at most inconclusive")
    return notes


def scope(sa: dict, sb: dict) -> dict:
    """What the verdicts are about: these boxes (one host a side), or the products (several)."""
    ha, hb = sa["hosts"], sb["hosts"]
    one_box = len(ha) <= 1 and len(hb) <= 1

    def spread(s: dict) -> str:
        parts = sorted({f"{100 * v['spread']:.1f}% {v['source'] if v['source'] != 'runs' else 'measured'}"
                        for v in (s.get("run_spread") or {}).values() if v.get("spread") is not None})
        return ", ".join(parts) or "?"

    if one_box:
        boxes = f"{(ha or ['?'])[0]} vs {(hb or ['?'])[0]}" if ha != hb else f"{(ha or ['?'])[0]} on both sides"
        text = (f"one box a side ({boxes}): the verdicts are about these boxes; as a claim about "
                f"{'/'.join(sa['products']) or 'A'} vs {'/'.join(sb['products']) or 'B'} they assume that another "
                f"box of the same product differs by no more than the run-to-run spread used here "
                f"(A: {spread(sa)}; B: {spread(sb)})")
    else:
        text = (f"side A spans {len(ha)} box(es), side B {len(hb)}: box-to-box spread is inside the run-to-run "
                "spread measured")
    return {"claim": "boxes" if one_box else "platforms", "hosts": {"A": ha, "B": hb}, "text": text}


def _notes(a: Side, b: Side, core: Core, aa: dict, watt_mixed: int, doc_scope: dict) -> list[str]:
    notes = _contention_notes(core, a, b)
    notes += _spread_notes([a, b], [core.est_a, core.est_b])
    if aa.get("identical"):
        notes.append("A/A: both sides have identical fingerprints (same host, hardware, driver and stack); "
                     "any faster/slower verdict here is noise or drift")
    if core.unstable.any():
        notes.append(f"{int(core.unstable.sum())} result(s) unstable, host-bound or with token counts no "
                     "tokenizer checked on a side: their verdicts are at most inconclusive")
    if core.throttled.any():
        notes.append(f"{int(core.throttled.sum())} result(s) throttled while timed by heat or a hardware slowdown "
                     "(or for reasons not recorded) on a side: their verdicts are at most inconclusive; power "
                     "capping alone is the platform's steady state and keeps its verdict")
    for side in (a, b):
        if len(side_products := {r.get("product") for r in side.runs}) > 1:
            notes.append(f"side {side.label} pools {len(side_products)} products: "
                         f"{', '.join(sorted(str(p) for p in side_products))}")
    if watt_mixed:
        notes.append(f"per watt: {watt_mixed} row(s) without measured power on both sides (datasheet TDP): shown as "
                     "plain ratios, no verdict")
    if doc_scope["claim"] == "boxes":
        notes.append("scope: " + doc_scope["text"])
    return notes


@gc_paused
def compare_sides(a: Side, b: Side, tolerance: float = 0.05, prices=None, level: float = LEVEL,
                  floor: float | None = None, history=None, stores=None) -> dict:
    """The comparison document (see compare_runs); the statistics come from `compare_core`, and
    every per-row figure is computed as a column (100k rows in about a second).

    history: where a one-run side's run-to-run spread is learned (comparison/history.store_for):
    None (not at all: the default or `floor`), "auto" (the store a side came from, else the
    default store if it exists) or {label: store url}. stores: the command's StorePool (the
    history is read through the connection the sides came through)."""
    if prices is None:
        from gpuparity.platform.prices import PriceBook

        prices = PriceBook(use_config=False)
    from gpuparity.comparison.history import resolve_priors

    priors = resolve_priors(a, b, floor, history, stores)
    for side in (a, b):
        read_throttle_infos(side, stores)
    core = compare_core(a, b, tolerance, level, floor, priors)
    # the verdicts that survive Benjamini-Hochberg over every key: the headline's counts, trend's changes
    adjusted = fdr_verdicts(core.log_ratio, core.log_var, core.df, tolerance,
                            ~core.flagged & np.isfinite(core.log_var))
    ident = _idents(a, core.ia)
    order = _row_order(ident)
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
        "flags": flags, "held": _held(core, order, flags),
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
    measured = np.array([sa == sb == "measured" for sa, sb in zip(facts_a[3], facts_b[3], strict=True)], dtype=bool)
    factors, ranges = {}, {}
    for suffix, fa, fb in zip(NORMALISED, facts_a[:3], facts_b[:3], strict=True):
        # Per peak / per $ / per W ratio = (B/x_B) / (A/x_A) = ratio * x_A / x_B; the CI scales alike,
        # per $ by the price factor's range over the price book's bases (its uncertainty)
        f = factors[suffix] = _ratio_or_nan(fa, fb)
        f_lo, f_hi = ranges[suffix] = dollar_range(a, ia, b, ib, prices, f) if suffix == "per_dollar" else (f, f)
        cols[f"ratio_{suffix}"], cols[f"ci_low_{suffix}"], cols[f"ci_high_{suffix}"] = (
            _listed(ratio * f), _listed(lo * f_lo), _listed(hi * f_hi))
        known = np.isfinite(f) & (measured if suffix == "per_watt" else True)     # per W: measured power only
        codes = np.where(flagged, INCONCLUSIVE, verdicts(lo * f_lo, hi * f_hi, tolerance))
        cols[f"verdict_{suffix}"] = [VERDICTS[v] if k else None
                                     for v, k in zip(codes.tolist(), known.tolist(), strict=True)]
    rows = _rows(cols)
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
    sa, sb = side_summary(a, prices, floor, core.est_a), side_summary(b, prices, floor, core.est_b)
    for summary, side, share in ((sa, a, core.load_a), (sb, b, core.load_b)):
        seen = share[np.isfinite(share)]
        summary["load"] = {"max": float(seen.max()) if len(seen) else None, "text": load_words(side, share)}
    aa = fingerprint_diff(sa.get("fingerprint"), sb.get("fingerprint"))
    aa["identical"] = aa["identical"] and len(sa["products"]) <= 1 and len(sb["products"]) <= 1
    doc_scope = scope(sa, sb)
    serving_floor = tuple(_serving_spread(s, est) for s, est in ((a, core.est_a), (b, core.est_b)))
    return {
        "tolerance": tolerance, "level": level, "price_basis": getattr(prices, "basis", None),
        "run_spread_assumed": max([x for x in (sa["run_spread_assumed"], sb["run_spread_assumed"]) if x is not None],
                                  default=None),
        "run_spread": {"A": sa["run_spread"], "B": sb["run_spread"]},
        "rows": rows, "only_a": _rows(_idents(a, only_a)), "only_b": _rows(_idents(b, only_b)),
        "not_compared": not_compared,
        "geomean": _geomeans(core, order, cols, factors, ranges, measured, adjusted[order], tolerance, level),
        "serving": serving_at_equal_interactivity(a, b, tolerance, floor=serving_floor, df=tuple(
            _serving_df(est) for est in (core.est_a, core.est_b)),
                                                  contended=bool(core.contended)),
        "counts": fdr_counts(adjusted),
        "contended": [{"side": c["side"], "reasons": sorted({r for run in c["runs"] for r in run["reasons"]}),
                       "runs": [run["run_id"] for run in c["runs"]]} for c in core.contended],
        "scope": doc_scope,
        "sides": {"a": sa, "b": sb}, "aa": aa,
        "notes": _notes(a, b, core, aa, watt_mixed, doc_scope),
    }


def _contended_words(core: Core) -> str:
    """Why every verdict of a comparison with a contended side is held: 'side B contended'."""
    return "side " + " and ".join(c["side"] for c in core.contended) + " contended"


def _held(core: Core, order: np.ndarray, flags: list) -> list:
    """Per row (in `order`): why its verdict is held at inconclusive, None where it is not."""
    if core.contended:
        return [_contended_words(core)] * len(order)
    out = [None] * len(order)
    throttled = core.throttled[order]
    for j in np.nonzero(core.flagged[order])[0].tolist():
        named = [f for f in flags[j] if f == "contended" or f in NO_CLAIM]
        out[j] = named[0] if named else "throttled (heat, hardware or unknown)" if throttled[j] else "flagged"
    return out


def _serving_df(est: SideEstimate) -> float:
    """The degrees of freedom of the serving category's prior (infinite: measured or set)."""
    b = est.basis.get("serving") or {}
    return float(b["df"]) if b.get("source") not in (None, "runs", "set") and b.get("df") else math.inf


def _serving_spread(side: Side, est: SideEstimate) -> float | None:
    """The run-to-run spread a one-trial serving point adds: the serving category's prior."""
    b = est.basis.get("serving")
    return b["spread"] if b else None


def _geomeans(core: Core, order: np.ndarray, cols: dict, factors: dict, ranges: dict, measured: np.ndarray,
              fdr: np.ndarray, tolerance: float, level: float) -> dict:
    """Per category (and 'all' when there are several: categories weighted equally) the
    random-effects mean of the ratios with its CI (means.group_means) over the keys with a CI,
    "mixed" where its keys disagree beyond the band (comparison/heterogeneity.py); normalised
    views only where every one of those keys has the normalisation (per $: the CI over the price
    factor's range; per watt: a verdict only on measured power on both sides). One group_means
    call for all categories (a store may hold hundreds), one for 'all'."""
    cats = [c or "other" for c in cols["category"]]
    ratio, log_var = core.ratio[order], core.log_var[order]
    keep = np.nonzero(np.isfinite(log_var) & np.isfinite(ratio) & (ratio > 0))[0]
    ia, ib = core.ia[order][keep], core.ib[order][keep]
    names = sorted({cats[j] for j in keep.tolist()})
    index = {c: i for i, c in enumerate(names)}
    code = np.array([index[cats[j]] for j in keep.tolist()], dtype=np.int64)
    by = np.argsort(code, kind="stable")
    members = np.split(keep[by], np.cumsum(np.bincount(code, minlength=len(names)))[:-1]) if len(names) else []
    per_cat = group_means(core.est_a, core.est_b, ia, ib, code, len(names), level) if names else {}
    groups = [(cat, members[i], per_cat, i) for i, cat in enumerate(names)]
    if len(names) >= 2:
        # categories weighted equally: a suite's key count per category is no measure of importance
        groups.append(("all", keep, group_means(core.est_a, core.est_b, ia, ib, np.zeros(len(keep), np.int64), 1,
                                                level, strata=code), 0))
    flagged, a_units, b_units = core.flagged[order], core.a_units[order], core.b_units[order]
    het = _het_var(core.est_a, core.ia[order]) + _het_var(core.est_b, core.ib[order])
    fdr_words = [VERDICTS[v] for v in fdr.tolist()]
    row_names = [" ".join(x for x in (w, " ".join(f"{k}={v}" for k, v in (p or {}).items() if k != "dtype"), d) if x)
                 for w, p, d in zip(cols["workload"], cols["params"], cols["dtype"], strict=True)]
    out = {}
    for cat, sel, g, i in groups:
        ratio_g, lo, hi = math.exp(float(g["log_ratio"][i])), float(g["ci_low"][i]), float(g["ci_high"][i])
        n_flagged = int(flagged[sel].sum())
        held = (_contended_words(core) if core.contended
                else f"mostly flagged ({n_flagged} of {len(sel)})" if n_flagged > MOSTLY * len(sel) else None)
        capped = held is not None
        verdict = "inconclusive" if capped else _verdict1(lo, hi, tolerance)
        disagree = None if capped else mixed(sel, fdr_words, core.log_ratio[order], het, core.df[order],
                                             float(g["log_ratio"][i]), verdict, tolerance, row_names)
        entry = {"ratio": ratio_g, "ci_low": lo if math.isfinite(lo) else None,
                 "ci_high": hi if math.isfinite(hi) else None, "n": len(sel),
                 "verdict": "mixed" if disagree else verdict, "mixed": disagree,
                 "a_trials": float(np.median(a_units[sel])), "b_trials": float(np.median(b_units[sel])),
                 "a_runs": float(np.median(core.est_a.runs[core.ia[order][sel]])),
                 "b_runs": float(np.median(core.est_b.runs[core.ib[order][sel]])),
                 "log_se": _finite(math.sqrt(float(g["var"][i]))), "df": _finite(float(g["df"][i])),
                 "key_basis": str(g["key_basis"][i]), "flagged": n_flagged, "held": held,
                 "weights": "categories equally" if cat == "all" else "keys equally"}
        for suffix in NORMALISED:
            f, (f_lo, f_hi) = factors[suffix][sel], (r[sel] for r in ranges[suffix])
            if np.all(np.isfinite(f) & (f > 0)) and np.all(np.isfinite(f_lo) & np.isfinite(f_hi)):
                m, m_lo, m_hi = (math.exp(float(np.mean(np.log(x)))) for x in (f, f_lo, f_hi))
                entry[f"ratio_{suffix}"], entry[f"ci_low_{suffix}"], entry[f"ci_high_{suffix}"] = (
                    ratio_g * m, _finite(lo * m_lo), _finite(hi * m_hi))
                judged = suffix != "per_watt" or bool(measured[sel].all())      # per W: measured power only
                entry[f"verdict_{suffix}"] = (None if not judged else "inconclusive" if capped else "mixed"
                                              if disagree else _verdict1(lo * m_lo, hi * m_hi, tolerance))
        out[cat] = entry
    return out


def _assumed(est: SideEstimate, idx: np.ndarray) -> np.ndarray:
    """Per key: the run-to-run spread its side assumed (a Prior), NaN where its runs measured it."""
    with np.errstate(invalid="ignore"):
        return np.where(est.source[idx] >= 0, np.sqrt(est.shared[idx] + est.prior_key[idx] * est.runs[idx]), np.nan)


def _het_var(est: SideEstimate, idx: np.ndarray) -> np.ndarray:
    """A key's variance that differs between keys (heterogeneity.py): the key-specific part,
    and for a key on a Prior its whole variance (a default does not split the run effect out)."""
    return est.key_var[idx] + np.where(est.source[idx] >= 0, est.shared[idx] / np.maximum(est.runs[idx], 1), 0.0)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _verdict1(lo: float, hi: float, tolerance: float) -> str:
    return VERDICTS[int(verdicts(np.array([lo]), np.array([hi]), tolerance)[0])]


def compare_runs(runs_a: list[dict], runs_b: list[dict], tolerance: float = 0.05, floor: float | None = None) -> dict:
    """Compare run documents of platform A with those of platform B.

    Several runs on a side are pooled by key (the run is the unit; a run's trials are averaged
    first). No store history is read (compare_sides(history="auto") does). Returns {"rows",
    "only_a", "only_b", "not_compared", "geomean", "serving", "counts", "contended", "scope",
    "run_spread", "sides", "aa", "notes", ...}; each row has key, workload, category, params, dtype,
    unit, a_value, b_value, a_trials, b_trials, a_runs, b_runs, ratio, ci_low, ci_high, log_se, df,
    verdict, flags, held (why the verdict is held at inconclusive, None where it is not) and the
    normalised fields (a_/b_pct_peak, ratio_per_peak, ratio_per_dollar,
    ratio_per_watt, ...).
    """
    return compare_sides(side_from_runs(runs_a, "A"), side_from_runs(runs_b, "B"), tolerance, floor=floor)


def regression_gate(doc: dict, threshold: float) -> dict:
    """Results and category means below (1 - threshold) x A with confidence, Holm-adjusted over
    all of them (one-sided, family-wise 2.5%: estimate.gate_failures): what `compare
    --fail-if-slower` fails on, named by workload, params and dtype.

    Only what can carry a verdict is tested: a row or mean whose verdict is held (its "held":
    flagged unstable, host_bound, contended or throttled by heat; a mean mostly of those) cannot
    show "slower", so it is not judged, and "not_judged" counts them by reason. With a contended
    side nothing is judged. "judged" False (nothing could be judged) is no pass: passed is False."""
    from collections import Counter

    contended = [c["side"] for c in doc.get("contended") or []]
    # a mean over one result is that result: tested once
    means = {cat: g for cat, g in doc["geomean"].items() if (g.get("n") or 0) >= 2}
    candidates = [({"workload": r["workload"], "params": r["params"], "dtype": r["dtype"], "key": r["key"],
                    "ratio": r["ratio"], "ci_high": r["ci_high"]}, r) for r in doc["rows"]]
    candidates += [({"workload": f"geomean {cat}", "params": {}, "dtype": None, "key": None, "ratio": g["ratio"],
                     "ci_high": g["ci_high"]}, g) for cat, g in means.items()]

    def why_not(x: dict) -> str | None:
        if x.get("held"):
            return x["held"]
        # a document from before "held": its flags say it
        named = sorted(set(x.get("flags") or []) & (NO_CLAIM | {"contended"})) if "held" not in x else []
        if named:
            return named[0]
        return None if isinstance(x.get("log_se"), (int, float)) and isinstance(x.get("ratio"), (int, float)) \
            else "no interval"

    reasons = [why_not(x) for _, x in candidates]
    n_rows = len(doc["rows"])
    not_judged = {"results": sum(w is not None for w in reasons[:n_rows]),
                  "means": sum(w is not None for w in reasons[n_rows:]),
                  "why": dict(Counter(w for w in reasons if w is not None))}
    judge = [i for i, w in enumerate(reasons) if w is None and not contended]
    tests = [candidates[i] for i in judge]
    lr = np.array([math.log(x["ratio"]) if x["ratio"] > 0 else np.nan for _, x in tests])
    se = np.array([float(x["log_se"]) for _, x in tests])
    df = np.array([float(x["df"]) if isinstance(x.get("df"), (int, float)) else np.inf for _, x in tests])
    fails = gate_failures(lr, se * se, df, threshold) if tests else np.zeros(0, dtype=bool)
    failed = [t for (t, _), f in zip(tests, fails.tolist(), strict=True) if f]
    judged_rows = sum(i < n_rows for i in judge)
    judged = bool(tests)
    return {"threshold": threshold, "passed": judged and not failed, "judged": judged, "failed": failed,
            "method": f"Holm over {judged_rows} result(s) and {len(tests) - judged_rows} category mean(s), "
                      "one-sided, family-wise 2.5%",
            "not_judged": not_judged, "contended": contended}
