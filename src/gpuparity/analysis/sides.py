"""One platform's results (a side), from run documents or the store's results table, and
how a side is named on the command line (run ids, files, stores, filters).
"""

from __future__ import annotations

import functools
import gc
import json
from dataclasses import dataclass, field

import numpy as np

from gpuparity.results.schema import metric_samples, run_stack
from gpuparity.results.store import encode_samples


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
