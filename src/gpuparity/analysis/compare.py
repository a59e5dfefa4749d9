"""Compare two platforms: per-key ratio B/A with a bootstrap CI, verdicts, category geomeans,
and the same ratios normalised per spec peak, per GPU-hour price and per watt.

Two loaders feed one core (`compare_sides`): run documents (`side_from_runs`, used by the
Python API, JSON files and the report) and the store's `results` table (`side_from_store`, the
fast path for large stores, which never parses whole run documents unless a run has power
telemetry or serving curves).

Statistics (also in the report's method notes):
- A side with several runs pools the raw samples of the same key (run-to-run spread counts as
  noise); spec, telemetry and serving info come from the newest run holding the key.
- ratio = median(B samples) / median(A samples) of throughput (higher is better).
- 95% CI: percentile bootstrap of the ratio of medians, each side resampled independently.
  Vectorised exactly: for n sorted samples the median of a resample is an order statistic
  whose index depends only on n, so the indices are drawn once per n (Beta-distributed order
  statistics of uniforms) and shared by every key with that n. Replicates are built in log
  space (for even n the two middle values are averaged geometrically, a second-order
  difference from the arithmetic median).
- verdict: faster / slower when the CI lies wholly beyond 1 +- tolerance, parity when it lies
  wholly within, inconclusive when it straddles a boundary or cannot be estimated (< 2 samples).
- category geomean: exp(mean log ratio) over keys with a CI; its CI combines the keys'
  bootstrap variances of log ratio (keys are measured independently; normal approximation).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from gpuparity.results.schema import metric_samples, run_stack

RESAMPLES = 1000
LEVEL = 0.95
SEED = 20240601
CHUNK = 4096


def verdict(ci_low: float | None, ci_high: float | None, tolerance: float = 0.05) -> str:
    """faster / parity / slower / inconclusive for a CI of the ratio B/A."""
    if ci_low is None or ci_high is None or not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return "inconclusive"
    lo_bound, hi_bound = 1.0 - tolerance, 1.0 + tolerance
    if ci_low > hi_bound:
        return "faster"
    if ci_high < lo_bound:
        return "slower"
    if ci_low >= lo_bound and ci_high <= hi_bound:
        return "parity"
    return "inconclusive"


# -- sides --------------------------------------------------------------------------------
@dataclass
class Entry:
    """One key on one side, pooled over that side's runs."""

    key: str
    workload: str
    category: str | None
    params: dict
    dtype: str | None
    unit: str | None = None
    status: str = "ok"
    reason: str | None = None
    samples: list = field(default_factory=list)
    run_ids: list = field(default_factory=list)
    spec: dict | None = None
    power_w: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    work: dict = field(default_factory=dict)


@dataclass
class Side:
    label: str
    runs: list            # run summaries, oldest first (run_id, started_at, host, product, ..., fingerprint)
    entries: dict         # key -> Entry with status ok and samples
    failed: dict          # key -> Entry that is failed / skipped / has no samples on this side


def run_summary(run_id: str, started_at: str, host: str | None, fp: dict) -> dict:
    spec = fp.get("spec") or None
    return {
        "run_id": run_id, "started_at": started_at, "host": host, "vendor": fp.get("vendor"),
        "product": fp.get("product"), "spec_id": (spec or {}).get("id"), "stack": run_stack(fp),
        "torch": fp.get("torch_version"), "driver": fp.get("driver_version"), "fingerprint": fp,
    }


def _add(side: Side, run: dict, key: str, workload: str, category, params, dtype, unit, status, reason,
         samples: list, result: dict | None) -> None:
    """Pool one stored result into a side (runs are added oldest first, so newest info wins)."""
    good = [s for s in samples if s and s > 0 and math.isfinite(s)]
    if status != "ok" or not good:
        if key not in side.entries:
            why = reason if status != "ok" else "no throughput samples"
            side.failed[key] = Entry(key, workload, category, params, dtype, unit, status, why,
                                     run_ids=[run["run_id"]], spec=run["fingerprint"].get("spec"))
        return
    side.failed.pop(key, None)
    e = side.entries.get(key)
    if e is None:
        e = side.entries[key] = Entry(key, workload, category, params, dtype, unit)
    e.samples.extend(good)
    e.run_ids.append(run["run_id"])
    e.spec = run["fingerprint"].get("spec") or e.spec
    e.unit = unit or e.unit
    if result is not None:
        tele = result.get("telemetry") or {}
        if tele.get("valid") is True and isinstance(tele.get("mean_power_w"), (int, float)):
            e.power_w.append(float(tele["mean_power_w"]))
        e.info = result.get("info") or e.info
        e.work = result.get("work") or e.work


def side_from_runs(docs: list[dict], label: str = "A") -> Side:
    """A side from run documents (pooled by key)."""
    side = Side(label, [], {}, {})
    for doc in sorted(docs, key=lambda d: (d.get("started_at") or "", d.get("run_id") or "")):
        fp = doc.get("fingerprint") or {}
        run = run_summary(doc["run_id"], doc.get("started_at"), doc.get("host"), fp)
        side.runs.append(run)
        for r in doc.get("results") or []:
            unit = (r.get("metric") or {}).get("unit")
            _add(side, run, r["key"], r["workload"], r.get("category"), r.get("params") or {}, r.get("dtype"),
                 unit, r["status"], r.get("reason"), metric_samples(r), r)
    return side


def _needs_documents(fp: dict, has_serving: bool) -> bool:
    """Power telemetry and serving curves live only in the run document."""
    method = (fp.get("telemetry") or {}).get("method")
    return has_serving or method not in ("none",)


def side_from_store(store, run_ids: list[str], label: str = "A") -> Side:
    """A side from stored runs, read from the results table columns (fast path)."""
    side = Side(label, [], {}, {})
    if not run_ids:
        return side
    fps = store.run_fingerprints(run_ids)
    meta = {}
    for chunk in _chunks(run_ids, 500):
        marks = ",".join("?" * len(chunk))
        for run_id, started_at, host in store.query(
                f"SELECT run_id, started_at, host FROM runs WHERE run_id IN ({marks})", chunk):
            meta[run_id] = run_summary(run_id, started_at, host, fps.get(run_id) or {})
    order = sorted(meta.values(), key=lambda r: (r["started_at"] or "", r["run_id"]))
    side.runs = order
    rank = {r["run_id"]: i for i, r in enumerate(order)}
    rows = []
    for chunk in _chunks(list(meta), 500):
        marks = ",".join("?" * len(chunk))
        rows += store.query(
            "SELECT run_id, key, workload, category, dtype, params, status, reason, unit, samples"
            f" FROM results WHERE run_id IN ({marks})", chunk)
    rows.sort(key=lambda r: rank[r[0]])
    # One json.loads for all sample lists and all params (100k small loads cost ~10x more).
    samples = json.loads("[" + ",".join(r[9] or "[]" for r in rows) + "]")
    params = json.loads("[" + ",".join(r[5] or "{}" for r in rows) + "]")
    serving_runs = {r[0] for r in rows if r[3] == "serving"}
    docs = {}
    for run in order:
        if _needs_documents(run["fingerprint"], run["run_id"] in serving_runs):
            doc = store.get_run(run["run_id"])
            docs[run["run_id"]] = {r["key"]: r for r in doc.get("results") or []}
    for row, s, p in zip(rows, samples, params):
        run_id, key, workload, category, dtype, _, status, reason, unit, _ = row
        result = docs.get(run_id, {}).get(key)
        _add(side, meta[run_id], key, workload, category, p, dtype, unit, status, reason, s, result)
    return side


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]


# -- the vectorised bootstrap ----------------------------------------------------------------
def _median_pattern(n: int, resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """0-based indices (lo, hi) of the two middle order statistics of n draws with replacement
    from n sorted items, for each resample (lo == hi for odd n)."""
    k = (n + 1) // 2 if n % 2 else n // 2
    u_lo = rng.beta(k, n - k + 1, size=resamples)
    lo = np.minimum((u_lo * n).astype(np.int64), n - 1)
    if n % 2:
        return lo, lo
    u_hi = u_lo + (1.0 - u_lo) * rng.beta(1, n - k, size=resamples)
    hi = np.minimum((u_hi * n).astype(np.int64), n - 1)
    return lo, hi


class _Patterns:
    def __init__(self, resamples: int, seed: int):
        self.resamples, self.seed, self.cache = resamples, seed, {}

    def get(self, n: int):
        if n not in self.cache:
            # Seeded per n so a key's CI does not depend on which other keys are compared.
            self.cache[n] = _median_pattern(n, self.resamples, np.random.default_rng([self.seed, n]))
        return self.cache[n]


def _flatten(sample_lists: list[list[float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Log samples sorted within each key, with per-key offsets and counts."""
    counts = np.fromiter((len(s) for s in sample_lists), dtype=np.int64, count=len(sample_lists))
    flat = np.fromiter((v for s in sample_lists for v in s), dtype=np.float64, count=int(counts.sum()))
    owner = np.repeat(np.arange(len(sample_lists)), counts)
    flat = np.log(flat)
    flat = flat[np.lexsort((flat, owner))]
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    return flat, offsets, counts


def _medians(flat, offsets, counts) -> np.ndarray:
    """Arithmetic median of each key's samples (flat holds sorted logs)."""
    lo = np.exp(flat[offsets + (counts - 1) // 2])
    hi = np.exp(flat[offsets + counts // 2])
    return (lo + hi) / 2


def _replicates(flat, offsets, counts, rows: np.ndarray, patterns: _Patterns) -> np.ndarray:
    """(len(rows), resamples) bootstrap medians in log space for the given keys."""
    out = np.empty((len(rows), patterns.resamples), dtype=np.float32)
    n_rows = counts[rows]
    for n in np.unique(n_rows):
        sel = np.nonzero(n_rows == n)[0]
        lo, hi = patterns.get(int(n))
        base = offsets[rows[sel]][:, None]
        vals = flat[base + np.arange(n)[None, :]].astype(np.float32)   # (g, n) sorted logs
        if n % 2:
            out[sel] = vals[:, lo]
        else:
            out[sel] = (vals[:, lo] + vals[:, hi]) * np.float32(0.5)
    return out


def bootstrap_ratios(samples_a: list[list[float]], samples_b: list[list[float]],
                     resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED) -> dict:
    """Ratio of medians B/A per key with percentile-bootstrap CIs (NaN where a side has < 2 samples).

    Returns arrays: a_median, b_median, ratio, ci_low, ci_high, log_var (bootstrap variance of
    the log ratio, for combining keys)."""
    k = len(samples_a)
    out = {name: np.full(k, np.nan) for name in ("ci_low", "ci_high", "log_var")}
    if k == 0:
        out.update(a_median=np.array([]), b_median=np.array([]), ratio=np.array([]))
        return out
    fa, oa, ca = _flatten(samples_a)
    fb, ob, cb = _flatten(samples_b)
    out["a_median"], out["b_median"] = _medians(fa, oa, ca), _medians(fb, ob, cb)
    out["ratio"] = out["b_median"] / out["a_median"]
    pa, pb = _Patterns(resamples, seed), _Patterns(resamples, seed + 1)
    alpha = (1 - level) / 2
    k_lo = int(math.floor(alpha * (resamples - 1)))
    k_hi = int(math.ceil((1 - alpha) * (resamples - 1)))
    valid = np.nonzero((ca >= 2) & (cb >= 2))[0]
    valid = valid[np.lexsort((cb[valid], ca[valid]))]   # chunks then hold few distinct sizes
    for i in range(0, len(valid), CHUNK):
        rows = valid[i:i + CHUNK]
        d = _replicates(fb, ob, cb, rows, pb)
        d -= _replicates(fa, oa, ca, rows, pa)
        out["log_var"][rows] = d.var(axis=1, dtype=np.float64)
        d.partition([k_lo, k_hi], axis=1)
        out["ci_low"][rows] = np.exp(d[:, k_lo].astype(np.float64))
        out["ci_high"][rows] = np.exp(d[:, k_hi].astype(np.float64))
    return out


def geomean(ratios: np.ndarray, log_vars: np.ndarray, level: float = LEVEL) -> tuple[float, float, float]:
    """Geometric mean of ratios and its CI from the keys' log-ratio bootstrap variances."""
    from statistics import NormalDist

    logs = np.log(ratios)
    mean = float(logs.mean())
    half = NormalDist().inv_cdf(1 - (1 - level) / 2) * math.sqrt(float(log_vars.sum())) / len(logs)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


# -- normalisation ------------------------------------------------------------------------
def _peak(spec: dict | None, unit: str | None, dtype: str | None) -> float | None:
    from gpuparity.platform.specs import peak_bandwidth_gbs, peak_tflops

    if unit == "TFLOP/s":
        return peak_tflops(spec, dtype or "")
    if unit == "GB/s":
        return peak_bandwidth_gbs(spec)
    return None


def _power(e: Entry) -> tuple[float | None, str | None]:
    if e.power_w:
        return float(np.mean(e.power_w)), "measured"
    tdp = (e.spec or {}).get("tdp_w")
    return (float(tdp), "tdp") if tdp else (None, None)


def _scaled(row: dict, suffix: str, factor: float | None) -> None:
    """ratio, CI and verdict scaled by a constant factor (peak, price or power of A over B)."""
    if factor is None:
        row[f"ratio_{suffix}"] = row[f"ci_low_{suffix}"] = row[f"ci_high_{suffix}"] = None
        row[f"verdict_{suffix}"] = None
        return
    for name in ("ratio", "ci_low", "ci_high"):
        v = row[name]
        row[f"{name}_{suffix}"] = v * factor if v is not None and math.isfinite(v) else None
    row[f"verdict_{suffix}"] = verdict(row[f"ci_low_{suffix}"], row[f"ci_high_{suffix}"], row["tolerance"])


def _div(x, y):
    return x / y if x is not None and y else None


def _normalise(row: dict, ea: Entry, eb: Entry, prices) -> None:
    from gpuparity.analysis.prices import usd_per_million_tokens

    for tag, e, value in (("a", ea, row["a_value"]), ("b", eb, row["b_value"])):
        peak = _peak(e.spec, e.unit, e.dtype)
        row[f"{tag}_peak"] = peak
        row[f"{tag}_pct_peak"] = 100.0 * value / peak if peak else None
        spec_id = (e.spec or {}).get("id")
        price, _ = prices.price(spec_id) if prices else (None, None)
        row[f"{tag}_usd_per_hour"] = price
        row[f"{tag}_per_dollar"] = _div(value, price)          # unit per ($ per GPU-hour)
        watts, source = _power(e)
        row[f"{tag}_watts"], row[f"{tag}_power_source"] = watts, source
        row[f"{tag}_per_watt"] = _div(value, watts)
        tokens = value if e.unit == "tokens/s" else None
        row[f"{tag}_usd_per_mtok"] = usd_per_million_tokens(price, tokens)
        row[f"{tag}_tokens_per_kw"] = _div(tokens, watts / 1000.0 if watts else None)
    _scaled(row, "per_peak", _div(row["a_peak"], row["b_peak"]) if row["a_peak"] and row["b_peak"] else None)
    pa, pb = row["a_usd_per_hour"], row["b_usd_per_hour"]
    _scaled(row, "per_dollar", pa / pb if pa and pb else None)
    wa, wb = row["a_watts"], row["b_watts"]
    _scaled(row, "per_watt", wa / wb if wa and wb else None)


# -- the comparison -----------------------------------------------------------------------
def _ident(e: Entry) -> dict:
    return {"key": e.key, "workload": e.workload, "category": e.category, "params": e.params,
            "dtype": e.dtype, "unit": e.unit}


def side_summary(side: Side, prices) -> dict:
    newest = side.runs[-1] if side.runs else {}
    spec = (newest.get("fingerprint") or {}).get("spec") or {}
    price, source = prices.price(spec.get("id")) if prices else (None, None)

    def uniq(name):
        return sorted({str(r.get(name)) for r in side.runs if r.get(name) is not None})

    powered = sum(1 for e in side.entries.values() if e.power_w)
    return {
        "label": side.label, "run_ids": [r["run_id"] for r in side.runs], "hosts": uniq("host"),
        "products": uniq("product"), "spec_ids": uniq("spec_id"), "stacks": uniq("stack"), "torch": uniq("torch"),
        "drivers": uniq("driver"), "started": [side.runs[0]["started_at"], newest["started_at"]] if side.runs else [],
        "n_results": len(side.entries) + len(side.failed), "spec_estimated": bool(spec.get("estimated")),
        "usd_per_hour": price, "price_source": source, "tdp_w": spec.get("tdp_w"),
        "power": (f"measured on {powered} of {len(side.entries)} results, TDP elsewhere" if powered
                  else "datasheet TDP (no valid power telemetry)" if spec.get("tdp_w") else "unknown"),
        "fingerprint": newest.get("fingerprint"),
    }


def compare_sides(a: Side, b: Side, tolerance: float = 0.05, prices=None, resamples: int = RESAMPLES,
                  level: float = LEVEL) -> dict:
    """The comparison document (see compare_runs)."""
    if prices is None:
        from gpuparity.analysis.prices import PriceBook

        prices = PriceBook(use_config=False)
    matched = sorted(set(a.entries) & set(b.entries), key=lambda k: (
        a.entries[k].category or "", a.entries[k].workload, json.dumps(a.entries[k].params, sort_keys=True,
                                                                        default=str), k))
    not_compared = []
    for side, other in ((a, b), (b, a)):
        for key, e in side.failed.items():
            if key in other.entries or key in other.failed:
                not_compared.append({**_ident(e), "side": side.label, "status": e.status, "reason": e.reason})
    not_compared.sort(key=lambda r: (r["workload"], r["key"], r["side"]))
    only_a = [_ident(a.entries[k]) for k in sorted(set(a.entries) - set(b.entries) - set(b.failed))]
    only_b = [_ident(b.entries[k]) for k in sorted(set(b.entries) - set(a.entries) - set(a.failed))]
    stats = bootstrap_ratios([a.entries[k].samples for k in matched], [b.entries[k].samples for k in matched],
                             resamples=resamples, level=level)
    rows = []
    for i, key in enumerate(matched):
        ea, eb = a.entries[key], b.entries[key]
        lo, hi = stats["ci_low"][i], stats["ci_high"][i]
        row = {**_ident(ea), "a_value": float(stats["a_median"][i]), "b_value": float(stats["b_median"][i]),
               "a_n": len(ea.samples), "b_n": len(eb.samples), "ratio": float(stats["ratio"][i]),
               "ci_low": None if math.isnan(lo) else float(lo), "ci_high": None if math.isnan(hi) else float(hi),
               "tolerance": tolerance, "a_runs": len(ea.run_ids), "b_runs": len(eb.run_ids)}
        row["verdict"] = verdict(row["ci_low"], row["ci_high"], tolerance)
        if eb.unit != ea.unit:
            row["note"] = f"units differ: {ea.unit} vs {eb.unit}"
        _normalise(row, ea, eb, prices)
        rows.append(row)
    return {
        "tolerance": tolerance, "level": level, "resamples": resamples,
        "rows": rows, "only_a": only_a, "only_b": only_b, "not_compared": not_compared,
        "geomean": _geomeans(rows, stats, tolerance, level),
        "serving": serving_at_equal_interactivity(a, b, tolerance),
        "sides": {"a": side_summary(a, prices), "b": side_summary(b, prices)},
        "price_basis": getattr(prices, "basis", None),
    }


def _geomeans(rows: list[dict], stats: dict, tolerance: float, level: float) -> dict:
    out = {}
    cats = sorted({r["category"] or "other" for r in rows})
    for cat in [*cats, "all"]:
        idx = [i for i, r in enumerate(rows) if r["ci_low"] is not None and (cat == "all" or
                                                                             (r["category"] or "other") == cat)]
        if not idx or (cat == "all" and len(cats) < 2):
            continue
        g, lo, hi = geomean(stats["ratio"][idx], stats["log_var"][idx], level)
        entry = {"ratio": g, "ci_low": lo, "ci_high": hi, "verdict": verdict(lo, hi, tolerance), "n": len(idx)}
        for suffix in ("per_peak", "per_dollar", "per_watt"):
            factors = [rows[i][f"ratio_{suffix}"] / rows[i]["ratio"] for i in idx if rows[i][f"ratio_{suffix}"]]
            if len(factors) == len(idx):   # only when every key has the normalisation
                f = math.exp(float(np.mean(np.log(factors))))
                entry[f"ratio_{suffix}"], entry[f"ci_low_{suffix}"], entry[f"ci_high_{suffix}"] = g * f, lo * f, hi * f
                entry[f"verdict_{suffix}"] = verdict(lo * f, hi * f, tolerance)
        out[cat] = entry
    return out


def compare_runs(runs_a: list[dict], runs_b: list[dict], tolerance: float = 0.05) -> dict:
    """Compare run documents of platform A with those of platform B.

    Several runs on a side are pooled by key (see the module notes). Returns {"rows", "only_a",
    "only_b", "not_compared", "geomean", "serving", "sides", ...}; each row has key, workload,
    category, params, dtype, unit, a_value, b_value, ratio, ci_low, ci_high, verdict and the
    normalised fields (*_pct_peak, ratio_per_peak, ratio_per_dollar, ratio_per_watt, ...).
    """
    return compare_sides(side_from_runs(runs_a, "A"), side_from_runs(runs_b, "B"), tolerance)


def slower_than(result: dict, threshold: float) -> list[str]:
    """Rows and category geomeans slower than 1 - threshold with confidence (CI upper bound below)."""
    bad = [f"{r['workload']} {r['key']}" for r in result["rows"]
           if r["ci_high"] is not None and r["ci_high"] < 1 - threshold]
    bad += [f"geomean {cat}" for cat, g in result["geomean"].items() if g["ci_high"] < 1 - threshold]
    return bad


# -- serving at equal interactivity ----------------------------------------------------------
def _serving_points(side: Side) -> dict[str, list[tuple[float, float]]]:
    curves: dict[str, list] = {}
    for e in side.entries.values():
        s = (e.info or {}).get("serving") or {}
        ckey = (e.info or {}).get("curve_key")
        x, y = s.get("interactivity"), s.get("throughput_per_gpu")
        if e.category != "serving" or not ckey or x is None or y is None or (s.get("errors") or 0) > 0:
            continue
        curves.setdefault(str(ckey), []).append((float(x), float(y)))
    return curves


def pareto(points: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Best throughput reachable at or above each interactivity: x ascending, y non-increasing."""
    pts = sorted(points, key=lambda p: (-p[0], -p[1]))
    xs, ys, best = [], [], -math.inf
    for x, y in pts:
        if y > best:
            xs.append(x)
            ys.append(y)
            best = y
    return np.array(xs[::-1]), np.array(ys[::-1])


def serving_at_equal_interactivity(a: Side, b: Side, tolerance: float = 0.05, levels: int = 5) -> list[dict]:
    """Throughput per GPU of B over A at equal tokens/s per user, along each Pareto curve
    (linear interpolation of the monotone envelope), at levels spread over the shared range.
    Point estimates: no CI, so the verdict says faster/parity/slower on the point alone."""
    pa, pb = _serving_points(a), _serving_points(b)
    out = []
    for ckey in sorted(set(pa) & set(pb)):
        xa, ya = pareto(pa[ckey])
        xb, yb = pareto(pb[ckey])
        lo, hi = max(xa[0], xb[0]), min(xa[-1], xb[-1])
        if not (lo > 0 and hi >= lo):
            out.append({"curve_key": ckey, "interactivity": None, "note": "interactivity ranges do not overlap"})
            continue
        for x in np.unique(np.geomspace(lo, hi, levels)) if hi > lo else [lo]:
            ta, tb = float(np.interp(x, xa, ya)), float(np.interp(x, xb, yb))
            ratio = tb / ta if ta > 0 else None
            out.append({"curve_key": ckey, "interactivity": float(x), "a_throughput": ta, "b_throughput": tb,
                        "ratio": ratio, "verdict": verdict(ratio, ratio, tolerance) if ratio else "inconclusive"})
    return out


def serving_curves(side: Side) -> dict[str, dict]:
    """Raw points and the Pareto envelope per curve key (for plots)."""
    out = {}
    for ckey, pts in _serving_points(side).items():
        xs, ys = pareto(pts)
        out[ckey] = {"points": sorted(pts), "pareto": list(zip(xs.tolist(), ys.tolist()))}
    return out
