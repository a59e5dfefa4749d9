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

import functools
import gc
import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from gpuparity.results.schema import metric_samples, run_stack
from gpuparity.results.store import encode_samples

LEVEL = 0.95
DRAWS = 20000
SEED = 20240601
VERDICTS = ("faster", "parity", "slower", "inconclusive")


def gc_paused(fn):
    """Run fn with the cyclic garbage collector off: building 100k rows of plain dicts (which hold
    no cycles) otherwise triggers collections that cost ~40% of the time."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was:
                gc.enable()
    return wrapper


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


def verdicts(ci_low: np.ndarray, ci_high: np.ndarray, tolerance: float) -> np.ndarray:
    """Vectorised `verdict`: indices into VERDICTS."""
    lo, hi = 1.0 - tolerance, 1.0 + tolerance
    with np.errstate(invalid="ignore"):
        return np.select([ci_low > hi, ci_high < lo, (ci_low >= lo) & (ci_high <= hi)], [0, 2, 1], 3)


# -- sides --------------------------------------------------------------------------------
@dataclass
class Side:
    """One platform's results, pooled by key, in columns (key i = row i of every array)."""

    label: str
    runs: list                 # run summaries, oldest first (run_id, started_at, host, ..., fingerprint)
    keys: list                 # keys with status ok and samples
    meta: list                 # per key: (workload, category, params, dtype, unit); params dict or JSON text
    newest_run: np.ndarray     # per key: index into runs of the newest run holding it
    n_runs: np.ndarray         # per key: how many runs were pooled
    flat: np.ndarray           # all samples (throughput), grouped by key in owner
    owner: np.ndarray          # key index of each sample
    power: np.ndarray          # per key: mean valid measured power (W) or NaN
    extras: dict               # key index -> {"info": ..., "work": ...} where the document was read
    failed: dict               # key -> {ident..., "status", "reason"} for keys with no usable result
    index: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.index:
            self.index = {k: i for i, k in enumerate(self.keys)}

    def samples(self, i: int) -> np.ndarray:
        return self.flat[self.owner == i]


def run_summary(run_id: str, started_at: str, host: str | None, fp: dict) -> dict:
    spec = fp.get("spec") or None
    return {
        "run_id": run_id, "started_at": started_at, "host": host, "vendor": fp.get("vendor"),
        "product": fp.get("product"), "spec_id": (spec or {}).get("id"), "stack": run_stack(fp),
        "torch": fp.get("torch_version"), "driver": fp.get("driver_version"), "fingerprint": fp,
    }


def _parse_sample_blobs(blobs: list) -> tuple[np.ndarray, np.ndarray]:
    """float64 sample blobs (as the store writes them) -> (flat values, count per blob), in C."""
    counts = np.fromiter((len(b) // 8 for b in blobs), dtype=np.int64, count=len(blobs))
    flat = np.frombuffer(b"".join(blobs), dtype="<f8") if counts.sum() else np.empty(0)
    return flat, counts


def _build(label: str, runs: list[dict], run_index: list[int], rows: list[tuple], flat: np.ndarray,
           counts: np.ndarray, results: list | None) -> Side:
    """Pool rows (anything, key, workload, category, params, dtype, unit, status, reason) of runs
    runs[run_index[i]], oldest run first, whose samples are flat/counts; results[i] is row i's
    result dict where the document was read."""
    row_of = np.repeat(np.arange(len(rows)), counts)
    usable = np.isfinite(flat) & (flat > 0)
    flat, row_of = flat[usable], row_of[usable]
    good = (np.bincount(row_of, minlength=len(rows)) > 0).tolist()
    ok = [g and row[7] == "ok" for g, row in zip(good, rows, strict=True)]
    # Keys in first-seen order; a pooled key takes its metadata from its newest (last) row.
    last = {row[1]: i for i, row in enumerate(rows) if ok[i]}
    index = {k: j for j, k in enumerate(last)}
    newest = list(last.values())
    meta = [rows[i][2:7] for i in newest]
    row_key = [index[row[1]] if ok[i] else -1 for i, row in enumerate(rows)]
    row_key_arr = np.array(row_key, dtype=np.int64)
    keep = row_key_arr[row_of] >= 0
    owner = row_key_arr[row_of[keep]]
    run_of_row = np.array(run_index, dtype=np.int64)
    failed = {}
    for i in np.nonzero(row_key_arr < 0)[0].tolist():
        row = rows[i]
        if row[1] not in index:
            failed[row[1]] = {"key": row[1], "workload": row[2], "category": row[3], "params": row[4],
                              "dtype": row[5], "unit": row[6], "status": row[7],
                              "reason": row[8] if row[7] != "ok" else "no throughput samples"}
    power = np.full(len(meta), np.nan)
    extras = {}
    if results is not None:
        watts: dict[int, list] = {}
        for i, res in enumerate(results):
            if res is None or row_key[i] < 0:
                continue
            k = row_key[i]
            tele = res.get("telemetry") or {}
            if tele.get("valid") is True and isinstance(tele.get("mean_power_w"), (int, float)):
                watts.setdefault(k, []).append(float(tele["mean_power_w"]))
            extras[k] = {"info": res.get("info") or {}, "work": res.get("work") or {}}
        for k, w in watts.items():
            power[k] = float(np.mean(w))
    return Side(label, runs, list(index), meta, run_of_row[np.array(newest, dtype=np.int64)],
                np.bincount(row_key_arr[row_key_arr >= 0], minlength=len(meta)), flat[keep], owner, power,
                extras, failed, index)


@gc_paused
def side_from_runs(docs: list[dict], label: str = "A") -> Side:
    """A side from run documents (pooled by key)."""
    docs = sorted(docs, key=lambda d: (d.get("started_at") or "", d.get("run_id") or ""))
    runs, run_index, rows, results, lists = [], [], [], [], []
    for ri, doc in enumerate(docs):
        fp = doc.get("fingerprint") or {}
        runs.append(run_summary(doc["run_id"], doc.get("started_at"), doc.get("host"), fp))
        for r in doc.get("results") or []:
            run_index.append(ri)
            rows.append((ri, r["key"], r["workload"], r.get("category"), r.get("params") or {}, r.get("dtype"),
                         (r.get("metric") or {}).get("unit"), r["status"], r.get("reason")))
            results.append(r)
            lists.append(_samples_or_value(metric_samples(r), (r.get("metric") or {}).get("value")))
    counts = np.array([len(x) for x in lists], dtype=np.int64)
    flat = np.array([v for x in lists for v in x], dtype=float)
    return _build(label, runs, run_index, rows, flat, counts, results)


def _samples_or_value(samples: list, value) -> list:
    """A result with a figure but no raw samples counts as one sample (no CI: inconclusive)."""
    if not samples and isinstance(value, (int, float)) and value > 0:
        return [float(value)]
    return samples


def _needs_documents(fp: dict, has_serving: bool) -> bool:
    """Power telemetry and serving curves live only in the run document."""
    return has_serving or (fp.get("telemetry") or {}).get("method") != "none"


@gc_paused
def side_from_store(store, run_ids: list[str], label: str = "A") -> Side:
    """A side from stored runs, read from the results table columns (fast path)."""
    fps = store.run_fingerprints(list(run_ids)) if run_ids else {}
    runs = []
    for chunk in _chunks(list(fps), 500):
        marks = ",".join("?" * len(chunk))
        for run_id, started_at, host in store.query(
                f"SELECT run_id, started_at, host FROM runs WHERE run_id IN ({marks})", chunk):
            runs.append(run_summary(run_id, started_at, host, fps[run_id]))
    runs.sort(key=lambda r: (r["started_at"] or "", r["run_id"]))
    rank = {r["run_id"]: i for i, r in enumerate(runs)}
    # reason and value only where they are used: building 100k needless objects costs time
    select = ("SELECT run_id, key, workload, category, params, dtype, unit, status,"
              " CASE WHEN status = 'ok' THEN NULL ELSE reason END, samples,"
              " CASE WHEN length(samples) > 0 THEN NULL ELSE value END FROM results")
    if not store.postgres and 4 * len(runs) >= store.count("runs"):
        # Most of a SQLite store: one table scan filtered here beats an index lookup per row (~1.7x).
        fetched = [r for r in store.query(select) if r[0] in rank]
    else:
        fetched = []
        for chunk in _chunks([r["run_id"] for r in runs], 500):
            fetched += store.query(f"{select} WHERE run_id IN ({','.join('?' * len(chunk))})", chunk)
    fetched.sort(key=lambda r: rank[r[0]])
    flat, counts = _parse_sample_blobs([bytes(r[9]) if r[9] else _value_blob(r[10]) for r in fetched])
    serving_runs = {r[0] for r in fetched if r[3] == "serving"}
    results = None
    docs = {}
    for run in runs:
        if _needs_documents(run["fingerprint"], run["run_id"] in serving_runs):
            docs[run["run_id"]] = {r["key"]: r for r in store.get_run(run["run_id"]).get("results") or []}
    if docs:
        results = [docs.get(r[0], {}).get(r[1]) for r in fetched]
    return _build(label, runs, [rank[r[0]] for r in fetched], fetched, flat, counts, results)


def _value_blob(value) -> bytes:
    """A result with a figure but no raw samples counts as one sample (see _samples_or_value)."""
    return encode_samples([float(value)]) if isinstance(value, (int, float)) and value > 0 else b""


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]


# -- the vectorised bootstrap ----------------------------------------------------------------
def _median_pattern(n: int, draws: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """0-based indices (lo, hi) of the two middle order statistics of n draws with replacement
    from n sorted items, one pair per draw (lo == hi for odd n)."""
    k = (n + 1) // 2 if n % 2 else n // 2
    u_lo = rng.beta(k, n - k + 1, size=draws)
    lo = np.minimum((u_lo * n).astype(np.int64), n - 1)
    if n % 2:
        return lo, lo
    u_hi = u_lo + (1.0 - u_lo) * rng.beta(1, n - k, size=draws)
    return lo, np.minimum((u_hi * n).astype(np.int64), n - 1)


@lru_cache(maxsize=4096)
def median_weights(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (lo, hi) order-statistic pairs of a bootstrap median of n samples and their weights."""
    lo, hi = _median_pattern(n, DRAWS, np.random.default_rng([SEED, n]))
    codes, counts = np.unique(lo * n + hi, return_counts=True)
    return codes // n, codes % n, counts / DRAWS


def log_median_stats(flat: np.ndarray, owner: np.ndarray, n_keys: int) -> tuple[np.ndarray, ...]:
    """Per key: median, bootstrap variance of the log median (NaN for n < 2), and sample count."""
    if len(owner) > 1 and np.any(owner[1:] < owner[:-1]):     # pooled runs: group each key's samples
        order = np.argsort(owner, kind="stable")
        flat, owner = flat[order], owner[order]
    counts = np.bincount(owner, minlength=n_keys)
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    median = np.full(n_keys, np.nan)
    var = np.full(n_keys, np.nan)
    for n in np.unique(counts[counts > 0]):
        n = int(n)
        keys = np.nonzero(counts == n)[0]
        lo, hi, w = median_weights(n) if n > 1 else (None, None, None)
        step = max(1, 2_000_000 // (n + (len(w) if w is not None else 0)))
        for i in range(0, len(keys), step):
            sel = keys[i:i + step]
            xs = np.sort(flat[offsets[sel][:, None] + np.arange(n)[None, :]], axis=1)   # (g, n)
            median[sel] = (xs[:, (n - 1) // 2] + xs[:, n // 2]) / 2
            if n < 2:
                continue
            lx = np.log(xs)
            lx -= lx[:, [n // 2]]                     # centre: no cancellation in E[v^2] - E[v]^2
            v = (lx[:, lo] + lx[:, hi]) * 0.5         # log median of each distinct resample pattern
            m = v @ w
            var[sel] = np.maximum((v * v) @ w - m * m, 0.0)
    return median, var, counts


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


def geomean(ratios: np.ndarray, log_vars: np.ndarray, level: float = LEVEL) -> tuple[float, float, float]:
    """Geometric mean of ratios and its CI from the keys' log-ratio bootstrap variances."""
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


def _facts(side: Side, idx: np.ndarray, prices) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """Per key idx[j] of a side: peak, GPU-hour price, watts (NaN where unknown) and the power
    source ("measured" telemetry, datasheet "tdp", or None). Looked up once per (run, unit, dtype)."""
    cache: dict = {}

    def lookup(run: int, unit, dtype) -> tuple:
        ck = (run, unit, dtype)
        if ck not in cache:
            spec = side.runs[run]["fingerprint"].get("spec") if side.runs else None
            price = prices.price((spec or {}).get("id"))[0] if prices else None
            tdp = (spec or {}).get("tdp_w")
            cache[ck] = (_peak(spec, unit, dtype) or np.nan, price or np.nan, float(tdp) if tdp else np.nan)
        return cache[ck]

    looked = [lookup(run, side.meta[i][4], side.meta[i][3])
              for run, i in zip(side.newest_run[idx].tolist(), idx.tolist(), strict=True)]
    peak, price, tdp = np.array(looked, dtype=float).reshape(len(idx), 3).T
    measured = np.isfinite(side.power[idx])
    watts = np.where(measured, side.power[idx], tdp)
    source = np.where(measured, "measured", np.where(np.isfinite(tdp), "tdp", "")).tolist()
    return peak, price, watts, [x or None for x in source]


def _ratio_or_nan(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x / y where both are known and y is not zero; NaN elsewhere."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(x) & np.isfinite(y) & (y != 0), x / y, np.nan)


def _listed(x: np.ndarray) -> list:
    """Floats for JSON: NaN and infinities become None."""
    x = np.asarray(x, dtype=float)
    out = x.astype(object)
    out[~np.isfinite(x)] = None
    return out.tolist()


def _normalised_columns(value: np.ndarray, peak, price, watts, source, units: list, tag: str) -> dict:
    """One side's per-peak, per-dollar and per-watt figures, as columns."""
    from gpuparity.analysis.prices import usd_per_million_tokens

    tokens = np.where([(u or "").startswith("tokens/s") for u in units], value, np.nan)  # tokens/s(/GPU)
    price_l, tokens_l = _listed(price), _listed(tokens)
    return {
        f"{tag}_peak": _listed(peak), f"{tag}_pct_peak": _listed(100.0 * _ratio_or_nan(value, peak)),
        f"{tag}_usd_per_hour": price_l, f"{tag}_per_dollar": _listed(_ratio_or_nan(value, price)),
        f"{tag}_watts": _listed(watts), f"{tag}_power_source": source,
        f"{tag}_per_watt": _listed(_ratio_or_nan(value, watts)),
        f"{tag}_usd_per_mtok": [usd_per_million_tokens(p, t) for p, t in zip(price_l, tokens_l, strict=True)],
        f"{tag}_tokens_per_kw": _listed(_ratio_or_nan(tokens, watts / 1000.0)),
    }


# -- the comparison -----------------------------------------------------------------------
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


NORMALISED = ("per_peak", "per_dollar", "per_watt")


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


# -- serving at equal interactivity ----------------------------------------------------------
def _serving_points(side: Side) -> dict[str, list[tuple[float, float]]]:
    curves: dict[str, list] = {}
    for i, extra in side.extras.items():
        info = extra.get("info") or {}
        s = info.get("serving") or {}
        x, y, ckey = s.get("interactivity"), s.get("throughput_per_gpu"), info.get("curve_key")
        failures = (s.get("errors") or 0) + (s.get("timeouts") or 0)
        if side.meta[i][1] != "serving" or not ckey or x is None or y is None or failures > 0:
            continue
        curves.setdefault(str(ckey), []).append((float(x), float(y)))
    return curves


def pareto(points: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Best throughput reachable at or above each interactivity: x ascending, y non-increasing."""
    xs, ys, best = [], [], -math.inf
    for x, y in sorted(points, key=lambda p: (-p[0], -p[1])):
        if y > best:
            xs.append(x)
            ys.append(y)
            best = y
    return np.array(xs[::-1]), np.array(ys[::-1])


def serving_at_equal_interactivity(a: Side, b: Side, tolerance: float = 0.05, levels: int = 5) -> list[dict]:
    """Throughput per GPU of B over A at equal tokens/s per user, along each side's Pareto curve
    (linear interpolation of the monotone envelope), at levels spread over the shared range.
    Point estimates (one measurement per concurrency): the verdict uses the point alone. Points
    with request errors or timeouts are left out of the curves."""
    pa, pb = _serving_points(a), _serving_points(b)
    out = []
    for ckey in sorted(set(pa) & set(pb)):
        xa, ya = pareto(pa[ckey])
        xb, yb = pareto(pb[ckey])
        lo, hi = max(xa[0], xb[0]), min(xa[-1], xb[-1])
        if not (lo > 0 and hi >= lo):
            out.append({"curve_key": ckey, "interactivity": None, "note": "interactivity ranges do not overlap"})
            continue
        for x in (np.unique(np.geomspace(lo, hi, levels)) if hi > lo else [lo]):
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
        out[ckey] = {"points": sorted(pts), "pareto": [[x, y] for x, y in zip(xs.tolist(), ys.tolist(), strict=True)]}
    return out


# -- naming a side on the command line -------------------------------------------------------
FILTER_KEYS = ("gpu", "stack", "host", "since", "db")


def parse_filter(text: str) -> dict:
    """'gpu=mi300x,stack=rocm' -> {"gpu": "mi300x", "stack": "rocm"}."""
    out = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise_user(f"'{text}': a filter is key=value pairs joined by commas ({', '.join(FILTER_KEYS)})")
        k, v = (x.strip() for x in part.split("=", 1))
        if k not in FILTER_KEYS:
            raise_user(f"'{text}': unknown filter '{k}'; use {', '.join(FILTER_KEYS)}")
        out[k] = v
    return out


def raise_user(message: str):
    from gpuparity.errors import UserError

    raise UserError(message)


def _check_since(since: str | None) -> None:
    if since:
        from datetime import datetime

        try:
            datetime.fromisoformat(since)
        except ValueError:
            raise_user(f"--since '{since}' is not an ISO date (e.g. 2025-06-01)")


def _is_sqlite(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def load_run_docs(path: str) -> list[dict]:
    """An exported run file (one run document, or a JSON list of them)."""
    from gpuparity.results.schema import load_run_file, validate_run

    if path.endswith(".json"):
        try:
            with open(path, encoding="utf-8") as fh:
                head = fh.read(1)
        except OSError as exc:
            raise_user(f"{path}: cannot read ({exc.strerror})")
        if head == "[":
            with open(path, encoding="utf-8") as fh:
                try:
                    docs = json.load(fh)
                except json.JSONDecodeError as exc:
                    raise_user(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})")
            return [validate_run(d, f"{path}[{i}]") for i, d in enumerate(docs)]
    return [load_run_file(path)]


def resolve_runs(token: str | None, db: str | None = None, **filters) -> tuple[str, list[dict] | None, list[str]]:
    """What a side names: (store url or file, run documents, run ids in the store).

    token: an exported JSON run file, a SQLite store file, a run id (prefix, 'latest') in `db`,
    a filter 'gpu=..,stack=..,host=..,since=..,db=..', or None (filters alone)."""
    import os

    from gpuparity.results.store import Store

    filters = {k: v for k, v in filters.items() if v}
    if token and "=" in token and not os.path.exists(token):
        parsed = parse_filter(token)
        db = parsed.pop("db", None) or db
        filters = {**filters, **parsed}
        token = None
    if token and not os.path.exists(token) and (token.endswith((".json", ".db", ".sqlite")) or os.sep in token):
        raise_user(f"{token}: no such file")
    if token and os.path.isfile(token) and not _is_sqlite(token):
        return token, load_run_docs(token), []
    if token and os.path.isfile(token):
        db, token = token, None
    _check_since(filters.get("since"))
    with Store(db) as store:
        if token:
            ids = [store.resolve_run_id(token)]
        else:
            ids = store.run_ids(**filters)
            if not ids:
                desc = ",".join(f"{k}={v}" for k, v in filters.items()) or "any run"
                raise_user(f"no stored run matches {desc} in {store.url}")
        return store.url, None, ids


def load_side(token: str | None, label: str, db: str | None = None, **filters) -> Side:
    """A Side for a command-line token (see resolve_runs); stores go through the fast path."""
    from gpuparity.results.store import Store

    origin, docs, ids = resolve_runs(token, db, **filters)
    if docs is not None:
        return side_from_runs(docs, label)
    with Store(origin) as store:
        return side_from_store(store, ids, label)
