"""One platform's results (a side), from run documents or the store's results table, and
how a side is named on the command line (run ids, files, stores, filters).

A side is columnar. Per key (a result's stable hash): metadata from the newest run holding it,
the number of runs, the union of the results' flags, the peak kind, measured power. Per unit
(one trial of one key in one run): the trial figure, its log standard error, and a unit id
(run, trial); the estimator (comparison/estimate.py) averages a key's trials within each run and
treats the run as the unit. Per run that was contended (the machine busy, platform/machine.py):
the reasons, from its document. `origin`: the store a side was read from (for its history).
"""

from __future__ import annotations

import functools
import gc
from dataclasses import dataclass, field

import numpy as np

from gpuparity.results.schema import run_stack

MAX_TRIALS = 1024          # unit id = run index * MAX_TRIALS + trial index


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
    """One platform's results, pooled by key, in columns (key i = row i of every per-key array)."""

    label: str
    runs: list                 # run summaries, oldest first (run_id, started_at, host, ..., fingerprint)
    keys: list                 # keys with status ok and at least one trial figure
    meta: list                 # per key: (workload, category, params, dtype, unit); params dict or JSON text
    newest_run: np.ndarray     # per key: index into runs of the newest run holding it
    n_runs: np.ndarray         # per key: how many runs hold it
    u_value: np.ndarray        # per unit: the trial figure
    u_se: np.ndarray           # per unit: its log standard error (NaN unknown)
    u_key: np.ndarray          # per unit: key index
    u_id: np.ndarray           # per unit: run index * MAX_TRIALS + trial index
    power: np.ndarray          # per key: mean valid measured power (W) or NaN
    flags: list                # per key: sorted flags of its results (union over runs)
    peak_kind: list            # per key: what % of peak divides by (newest run), or None
    extras: dict               # key index -> {"info", "work", "infos", "run_of"} where documents were read
    failed: dict               # key -> {ident..., "status", "reason"} for keys with no usable result
    index: dict = field(default_factory=dict)
    origin: str | None = None  # the store (url or path) the side was read from; None: documents
    contention: dict = field(default_factory=dict)   # run_id -> its load record (comparison/load.run_load)

    def __post_init__(self):
        if not self.index:
            self.index = {k: i for i, k in enumerate(self.keys)}

    def units(self, i: int) -> np.ndarray:
        return self.u_value[self.u_key == i]

    @property
    def u_run(self) -> np.ndarray:
        """Per unit: the index of its run."""
        return self.u_id // MAX_TRIALS

    @property
    def contended(self) -> list[dict]:
        """The side's contended runs: [{"run_id", "reasons"}] (empty: a quiet side)."""
        return [{"run_id": rid, "reasons": list(c.get("reasons") or [])} for rid, c in self.contention.items()
                if c.get("contended")]


def serving_infos(side: Side):
    """(key index, info, its run's summary or {}) of every serving result a side read from its
    documents: one per run that measured the key (extras' "infos" with "run_of")."""
    for i, extra in side.extras.items():
        if side.meta[i][1] != "serving":
            continue
        infos = extra.get("infos") or [extra.get("info") or {}]
        runs = extra.get("run_of") or [None] * len(infos)
        for info, ri in zip(infos, runs, strict=False):
            yield i, info, side.runs[ri] if ri is not None and ri < len(side.runs) else {}


def run_summary(run_id: str, started_at: str, host: str | None, fp: dict, label: str | None = None,
                boot: str | None = None) -> dict:
    spec = fp.get("spec") or None
    return {
        "run_id": run_id, "started_at": started_at, "host": host, "vendor": fp.get("vendor"),
        "product": fp.get("product"), "spec_id": (spec or {}).get("id"), "stack": run_stack(fp),
        "torch": fp.get("torch_version"), "driver": fp.get("driver_version"), "label": label, "fingerprint": fp,
        **_fleet(fp),
        "boot": boot if isinstance(boot, str) else None,
    }


def _fleet(fp: dict) -> dict:
    """A run of a SLURM job: its job id and node (a fleet side lists its nodes)."""
    job = fp.get("slurm") if isinstance(fp.get("slurm"), dict) else None
    return {"job": job.get("job"), "node": job.get("node") or fp.get("host")} if job else {}


def _parse_blobs(blobs: list) -> tuple[np.ndarray, np.ndarray]:
    """float64 blobs (as the store writes them) -> (flat values, count per blob), in C."""
    counts = np.fromiter((len(b) // 8 for b in blobs), dtype=np.int64, count=len(blobs))
    flat = np.frombuffer(b"".join(blobs), dtype="<f8") if counts.sum() else np.empty(0)
    return flat, counts


# Row layout both loaders produce: (run index, key, workload, category, params, dtype, unit, status,
# reason, flags text, peak kind, measured power W)
STATUS, REASON, FLAGS, PEAK, POWER = 7, 8, 9, 10, 11


def _build(label: str, runs: list[dict], rows: list[tuple], values: np.ndarray, ses: np.ndarray,
           counts: np.ndarray, results: list | None) -> Side:
    """Pool rows of runs (oldest run first) whose trial figures are values/ses (counts per row);
    results[i] is row i's result dict where the document was read."""
    row_of = np.repeat(np.arange(len(rows)), counts)
    trial_of = np.arange(len(row_of)) - np.repeat(np.cumsum(counts) - counts, counts)
    usable = np.isfinite(values) & (values > 0)
    values, ses, row_of, trial_of = values[usable], ses[usable], row_of[usable], trial_of[usable]
    good = (np.bincount(row_of, minlength=len(rows)) > 0).tolist()
    ok = [g and row[STATUS] == "ok" for g, row in zip(good, rows, strict=True)]
    # Keys in first-seen order; a pooled key takes its metadata from its newest (last) row.
    last = {row[1]: i for i, row in enumerate(rows) if ok[i]}
    index = {k: j for j, k in enumerate(last)}
    newest = list(last.values())
    meta = [rows[i][2:7] for i in newest]
    row_key = np.array([index[row[1]] if ok[i] else -1 for i, row in enumerate(rows)], dtype=np.int64)
    run_of_row = np.array([row[0] for row in rows], dtype=np.int64)
    keep = row_key[row_of] >= 0
    u_key = row_key[row_of[keep]]
    u_id = run_of_row[row_of[keep]] * MAX_TRIALS + np.minimum(trial_of[keep], MAX_TRIALS - 1)
    failed = {}
    for i in np.nonzero(row_key < 0)[0].tolist():
        row = rows[i]
        if row[1] not in index:
            failed[row[1]] = {"key": row[1], "workload": row[2], "category": row[3], "params": row[4],
                              "dtype": row[5], "unit": row[6], "status": row[STATUS],
                              "reason": row[REASON] if row[STATUS] != "ok" else "no throughput figure"}
    n_keys = len(meta)
    flags: list[set] = [set() for _ in range(n_keys)]
    watts: dict[int, list] = {}
    for i, row in enumerate(rows):
        k = int(row_key[i])
        if k < 0:
            continue
        if row[FLAGS]:
            flags[k].update(row[FLAGS].split(",") if isinstance(row[FLAGS], str) else row[FLAGS])
        if isinstance(row[POWER], (int, float)) and row[POWER] > 0:
            watts.setdefault(k, []).append(float(row[POWER]))
    power = np.full(n_keys, np.nan)
    for k, w in watts.items():
        power[k] = float(np.mean(w))
    extras = {}
    if results is not None:
        for i, res in enumerate(results):
            k = int(row_key[i])
            if res is None or k < 0:
                continue
            info = res.get("info") or {}
            prev = extras.get(k, {})
            extras[k] = {"info": info, "work": res.get("work") or {}, "infos": [*prev.get("infos", []), info],
                         "run_of": [*prev.get("run_of", []), int(rows[i][0])]}     # each info's run (index into runs)
    return Side(label, runs, list(index), meta, run_of_row[np.array(newest, dtype=np.int64)],
                np.bincount(row_key[row_key >= 0], minlength=n_keys), values[keep], ses[keep], u_key, u_id,
                power, [sorted(f) for f in flags], [rows[i][PEAK] for i in newest], extras, failed, index)


def _doc_row(ri: int, r: dict) -> tuple:
    tele = r.get("telemetry") or {}
    power = tele.get("mean_power_w") if tele.get("valid") is True else None
    return (ri, r["key"], r["workload"], r.get("category"), r.get("params") or {}, r.get("dtype"),
            (r.get("metric") or {}).get("unit"), r["status"], r.get("reason"), r.get("flags") or None,
            (r.get("info") or {}).get("peak_kind"), power)


@gc_paused
def side_from_runs(docs: list[dict], label: str = "A") -> Side:
    """A side from run documents (pooled by key)."""
    from gpuparity.results.figure import result_units

    docs = sorted(docs, key=lambda d: (d.get("started_at") or "", d.get("run_id") or ""))
    runs, rows, results, vals, ses, contention = [], [], [], [], [], {}
    for ri, doc in enumerate(docs):
        fp = doc.get("fingerprint") or {}
        machine = doc.get("machine") if isinstance(doc.get("machine"), dict) else {}
        boot = (machine.get("start") or {}).get("boot_id") if isinstance(machine.get("start"), dict) else None
        runs.append(run_summary(doc["run_id"], doc.get("started_at"), doc.get("host"), fp, doc.get("label"), boot))
        found = run_contention(machine.get("contention"))
        if found:
            contention[doc["run_id"]] = found
        for r in doc.get("results") or []:
            rows.append(_doc_row(ri, r))
            results.append(r)
            v, s = result_units(r)
            vals.append(v)
            ses.append(s)
    counts = np.array([len(x) for x in vals], dtype=np.int64)
    side = _build(label, runs, rows, np.array([v for x in vals for v in x], dtype=float),
                  np.array([v for x in ses for v in x], dtype=float), counts, results)
    side.contention = contention
    return side


def run_contention(found) -> dict | None:
    """A run document's machine.contention as comparison/load.py reads it (load.run_load), None
    when it says nothing (documents from before it was recorded)."""
    from gpuparity.comparison.load import run_load

    return run_load(found)


@gc_paused
def side_from_store(store, run_ids: list[str], label: str = "A") -> Side:
    """A side from stored runs, read from the results table columns (fast path)."""
    from gpuparity.measure.stats import log_median_se_many

    fps = store.run_fingerprints(list(run_ids)) if run_ids else {}
    runs = []
    for chunk in _chunks(list(fps), 500):
        marks = ",".join("?" * len(chunk))
        for run_id, started_at, host, run_label in store.query(
                f"SELECT run_id, started_at, host, label FROM runs WHERE run_id IN ({marks})", chunk):
            runs.append(run_summary(run_id, started_at, host, fps[run_id], run_label))
    runs.sort(key=lambda r: (r["started_at"] or "", r["run_id"]))
    rank = {r["run_id"]: i for i, r in enumerate(runs)}
    # reason, value and samples only where they are used: building 100k needless objects costs time
    select = ("SELECT run_id, key, workload, category, params, dtype, unit, status,"
              " CASE WHEN status = 'ok' THEN NULL ELSE reason END, flags, peak_kind, power_w, trial_values, trial_se,"
              " CASE WHEN trial_values IS NULL THEN value END, CASE WHEN trial_values IS NULL THEN samples END"
              " FROM results")
    if not store.postgres and 4 * len(runs) >= store.count("runs", at_most=4 * len(runs) + 1):
        # Most of a SQLite store: one table scan filtered here beats an index lookup per row (~1.7x).
        fetched = [r for r in store.query(select) if r[0] in rank]
    else:
        fetched = []
        for chunk in _chunks([r["run_id"] for r in runs], 500):
            fetched += store.query(f"{select} WHERE run_id IN ({','.join('?' * len(chunk))})", chunk)
    fetched.sort(key=lambda r: rank[r[0]])
    values, counts = _parse_blobs([bytes(r[12]) if r[12] else _legacy_value(r[14]) for r in fetched])
    ses, _ = _parse_blobs([bytes(r[13]) if r[12] else b"" for r in fetched])
    legacy = [i for i, r in enumerate(fetched) if not r[12] and counts[i] == 1]
    if legacy:          # rows of an earlier schema: one trial, its se from the samples' log median
        full = np.full(len(values), np.nan)
        full[np.nonzero(np.repeat([bool(r[12]) for r in fetched], counts))[0]] = ses
        flat, n = _parse_blobs([bytes(fetched[i][15] or b"") for i in legacy])
        offsets = np.cumsum(counts) - counts
        full[offsets[legacy]] = log_median_se_many(flat, n)
        ses = full
    # Serving curves and per-point summaries live only in the run document: read those runs' documents.
    serving_runs = {r[0] for r in fetched if r[3] == "serving"}
    results = None
    docs = {}
    for run in runs:
        if run["run_id"] in serving_runs:
            docs[run["run_id"]] = {r["key"]: r for r in store.get_run(run["run_id"]).get("results") or []}
    if docs:
        results = [docs.get(r[0], {}).get(r[1]) for r in fetched]
    rows = [(rank[r[0]], *r[1:12]) for r in fetched]
    side = _build(label, runs, rows, values, ses, counts, results)
    side.origin = store.url
    side.contention, boots = _stored_machine(store, [r["run_id"] for r in runs])
    for r in runs:
        r["boot"] = boots.get(r["run_id"])
    return side


def _stored_machine(store, run_ids: list[str]) -> tuple[dict, dict]:
    """Every run's contention record and boot id, read from its document in SQL (only those
    fields are returned): a busy run is found whether or not its results carry the flag."""

    from gpuparity.errors import UserError

    if not run_ids:
        return {}, {}
    if store.postgres:       # PostgreSQL's json refuses NaN, which older writers stored: those are read here
        odd = "doc ~ '\\mNaN\\M|Infinity'"
        expr = f"CASE WHEN {odd} THEN NULL ELSE (doc::json -> 'machine')::text END, {odd}"
    else:                    # one parse per document (no JSON cache before SQLite 3.45); none without a machine
        expr = "CASE WHEN instr(doc, '\"machine\"') > 0 THEN json_extract(doc, '$.machine') END, 0"
    out, boots = {}, {}
    for chunk in _chunks(run_ids, 500):
        marks = ",".join("?" * len(chunk))
        try:
            got = store.query(f"SELECT run_id, {expr} FROM runs WHERE run_id IN ({marks})", chunk)
        except UserError:       # a document SQLite's JSON reader refuses (NaN from older writers)
            got = [(run_id, None, True) for run_id in chunk]
        fields = {r[0]: machine_fields(r[1], whole=False) for r in got if not r[2]}
        odd = [r[0] for r in got if r[2]]
        if odd:
            fields.update({run_id: machine_fields(text) for run_id, text in store.query(
                f"SELECT run_id, doc FROM runs WHERE run_id IN ({','.join('?' * len(odd))})", odd)})
        for run_id, (contention, boot) in fields.items():
            found = run_contention(contention)
            if found:
                out[run_id] = found
            boots[run_id] = boot if isinstance(boot, str) else None
    return out, boots


def machine_fields(text: str | None, whole: bool = True) -> tuple:
    """(machine.contention, machine.start.boot_id) of a run document (whole) or of its machine
    section, parsed here."""
    import json

    try:
        machine = json.loads(text) if text else {}
        machine = (machine.get("machine") if whole else machine) or {}
    except (ValueError, AttributeError):
        return None, None
    if not isinstance(machine, dict):
        return None, None
    start = machine.get("start") if isinstance(machine.get("start"), dict) else {}
    return machine.get("contention"), start.get("boot_id")


def stored_results(store, run_ids: list[str]) -> list[dict]:
    """Per key, its newest result among these runs (the newest ok one, else the first seen), in
    the shape the report's charts read a result document: identity, status, flags, metric, work,
    the rates that follow from them (results.figure.derive_rates) and info.peak_kind, all from
    the results table's columns. Serving results (their curves and latencies) and rows written
    before results.work existed come from their runs' documents."""
    import json

    from gpuparity.results.figure import derive_rates

    fps = store.run_fingerprints(list(run_ids)) if run_ids else {}
    started = {}
    for chunk in _chunks(list(fps), 500):
        started.update(store.query(f"SELECT run_id, started_at FROM runs WHERE run_id IN ({','.join('?' * len(chunk))})",
                                   chunk))
    order = sorted(started, key=lambda i: (started[i] or "", i))
    rank = {run_id: i for i, run_id in enumerate(order)}
    work = "work" if store.version >= 3 else "NULL"       # a read-only store of version 2 has no column
    rows = []
    for chunk in _chunks(order, 500):
        rows += store.query("SELECT run_id, key, workload, category, dtype, params, status, reason, unit, value,"
                            f" ci_low, ci_high, flags, peak_kind, {work} FROM results"
                            f" WHERE run_id IN ({','.join('?' * len(chunk))})", chunk)
    rows.sort(key=lambda r: rank[r[0]])
    newest = {}
    for r in rows:
        if r[6] == "ok" or r[1] not in newest:
            newest[r[1]] = r
    from_docs = {r[0] for r in newest.values() if r[3] == "serving" or (r[6] == "ok" and r[14] is None)}
    docs = {i: {x["key"]: x for x in store.get_run(i).get("results") or []} for i in sorted(from_docs, key=rank.get)}
    out = []
    for r in newest.values():
        if r[0] in docs and r[1] in docs[r[0]]:
            out.append(docs[r[0]][r[1]])
            continue
        res = {"key": r[1], "workload": r[2], "category": r[3], "dtype": r[4], "params": json.loads(r[5] or "{}"),
               "status": r[6], "reason": r[7], "metric": {"unit": r[8], "value": r[9], "ci_low": r[10],
                                                          "ci_high": r[11]},
               "flags": r[12].split(",") if r[12] else [], "info": {"peak_kind": r[13]} if r[13] else {},
               "work": json.loads(r[14] or "{}")}
        derive_rates(res, (fps.get(r[0]) or {}).get("spec"))
        out.append(res)
    return out


def _legacy_value(value) -> bytes:
    from gpuparity.results.store_rows import encode_samples

    return encode_samples([float(value)]) if isinstance(value, (int, float)) and value > 0 else b""


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]


# -- naming a side on the command line -------------------------------------------------------
FILTER_KEYS = ("gpu", "stack", "host", "since", "label", "job", "db")


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
        if not v:               # 'gpu=' would silently mean every run
            raise_user(f"'{text}': {k}= names no value")
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
    """An exported run file (one run document, or a JSON list of them), bounded and validated."""
    from gpuparity.results.document import validate_run
    from gpuparity.validate import load_json

    data = load_json(path, None, "run file")
    if isinstance(data, list):
        return [validate_run(d, f"{path}[{i}]") for i, d in enumerate(data)]
    return [validate_run(data, path)]


def resolve_runs(token: str | None, db: str | None = None, stores=None,
                 **filters) -> tuple[str, list[dict] | None, list[str]]:
    """What a side names: (store url or file, run documents, run ids in the store).

    token: an exported JSON run file, a SQLite store file, a run id (prefix, 'latest') in `db`,
    a filter 'gpu=..,stack=..,host=..,since=..,label=..,job=..,db=..', or None (filters alone). stores: the
    command's StorePool (each store opened once per command); None opens and closes one here."""
    import os

    filters = {k: v for k, v in filters.items() if v}
    if token and "=" in token and not os.path.exists(token):
        parsed = parse_filter(token)
        db = parsed.pop("db", None) or db
        filters = {**filters, **parsed}
        token = None
    if token and not os.path.exists(token) and (token.endswith((".json", ".db", ".sqlite")) or os.sep in token):
        raise_user(f"{token}: no such file")
    if token and os.path.exists(token) and not os.path.isfile(token):
        from gpuparity.validate import check_regular

        check_regular(token, "run file or store")       # a FIFO or device: refused, never read
    if token and os.path.isfile(token) and not _is_sqlite(token):
        return token, load_run_docs(token), []
    if token and os.path.isfile(token):
        db, token = token, None
    _check_since(filters.get("since"))
    with _pool(stores) as pool:
        store = pool.get(db)
        if token:
            ids = [store.resolve_run_id(token)]
        else:
            ids = store.run_ids(**filters)
            if not ids:
                desc = ",".join(f"{k}={v}" for k, v in filters.items()) or "any run"
                raise_user(f"no stored run matches {desc} in {store.shown}")
        return store.url, None, ids


def _pool(stores):
    """The caller's StorePool (left open), or a new one closed at the end of the block."""
    from contextlib import nullcontext

    from gpuparity.results.store import StorePool

    return nullcontext(stores) if stores is not None else StorePool()


def load_side(token: str | None, label: str, db: str | None = None, stores=None, **filters) -> Side:
    """A Side for a command-line token (see resolve_runs); stores go through the fast path."""
    with _pool(stores) as pool:
        origin, docs, ids = resolve_runs(token, db, pool, **filters)
        if docs is not None:
            return side_from_runs(docs, label)
        return side_from_store(pool.get(origin), ids, label)
