"""How a run becomes rows of the store: the result row of each result (samples and trial figures
as float64 blobs), a run's insert (one run id once), the check that a new id takes over no
stored run's prefix, and RunWriter, which commits an import's runs in batches.
"""

from __future__ import annotations

import json
import sys
import time
from array import array

from gpuparity.errors import UserError
from gpuparity.results.schema import metric_samples, run_stack
from gpuparity.results.store_filters import _like_escape

RESULTS_INSERT = (
    "INSERT INTO results (run_id, key, workload, category, dtype, params, status, reason, unit,"
    " value, samples, ci_low, ci_high, trials, trial_values, trial_se, flags, peak_kind, power_w, work)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


def encode_samples(values: list[float]) -> bytes:
    """Throughput samples as little-endian float64 bytes: comparisons read 100k rows with one
    np.frombuffer instead of parsing millions of JSON numbers."""
    arr = array("d", values)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr.tobytes()


def decode_samples(blob: bytes | memoryview | None) -> list[float]:
    arr = array("d", bytes(blob or b""))
    if sys.byteorder != "little":
        arr.byteswap()
    return arr.tolist()


def result_row(run_id: str, r: dict) -> tuple:
    from gpuparity.results.figure import result_units

    metric = r.get("metric") or {}
    values, ses = result_units(r)
    tele = r.get("telemetry") or {}
    power = tele.get("mean_power_w") if tele.get("valid") is True else None
    return (
        run_id, r["key"], r["workload"], r.get("category"), r.get("dtype"),
        json.dumps(r.get("params") or {}, sort_keys=True), r["status"], r.get("reason"),
        metric.get("unit"), metric.get("value"), encode_samples(metric_samples(r)),
        metric.get("ci_low"), metric.get("ci_high"), len(values) or None,
        encode_samples(values) if values else None, encode_samples(ses) if values else None,
        ",".join(r.get("flags") or []) or None, (r.get("info") or {}).get("peak_kind"),
        float(power) if isinstance(power, (int, float)) else None, json.dumps(r.get("work") or {}),
    )


def _insert_run(cur, doc: dict) -> bool:
    """The run's row and its result rows (inside the caller's transaction); False if that run id
    is already stored. ON CONFLICT, not SELECT-then-INSERT: two writers of one run id must not collide."""
    fp = doc.get("fingerprint") or {}
    cur.execute(
        "INSERT INTO runs (run_id, started_at, finished_at, status, host, vendor, product, spec_id,"
        " stack, torch, schema_version, benchmark_version, n_results, fingerprint, doc, label)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING",
        (
            doc["run_id"], doc["started_at"], doc.get("finished_at"), doc.get("status", "complete"),
            doc.get("host"), fp.get("vendor"), fp.get("product"), doc.get("spec_id"),
            run_stack(fp), fp.get("torch_version"), doc["schema_version"],
            doc.get("benchmark_version") or 0, len(doc["results"]), json.dumps(fp), json.dumps(doc),
            doc.get("label"),
        ),
    )
    if cur.rowcount == 0:
        return False
    cur.executemany(RESULTS_INSERT, [result_row(doc["run_id"], r) for r in doc["results"]])
    return True


class IdTaken(UserError):
    """A run id that would take over another stored run's references (nothing was written)."""


def _check_new_id(cur, run_id: str, postgres: bool) -> None:
    """A new run's id is never a prefix of a stored one (as resolve_run_id matches prefixes): it
    would take over `show PREFIX`, `compare PREFIX ...` from the run that prefix named. On SQLite a
    range of the primary key (ids are [A-Za-z0-9._:+-], all below '~'), so an import stays linear."""
    if postgres:
        cur.execute("SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '!' AND run_id <> ? LIMIT 1",
                    (_like_escape(run_id) + "%", run_id))
    else:
        cur.execute("SELECT run_id FROM runs WHERE run_id > ? AND run_id < ? LIMIT 1", (run_id, run_id + "~"))
    row = cur.fetchone()
    if row:
        raise IdTaken(f"run id '{run_id}' is a prefix of the stored run {row[0]} (references to that run by "
                      "prefix would name this one): give the run another id")


class RunWriter:
    """Store.writer(): runs written into a transaction that is committed in batches."""

    def __init__(self, store, max_rows: int, max_seconds: float):
        self.store, self.max_rows, self.max_seconds = store, max_rows, max_seconds
        self._tx = self._cur = None
        self._rows, self._since = 0, 0.0
        self.pending: list[str] = []        # run ids written since the last commit

    def save_run(self, doc: dict) -> bool:
        """Write the run (False: that run id is already stored); committed with its batch."""
        if self._tx is None:
            self._tx = self.store.transaction()
            self._cur = self._tx.__enter__()
            self._rows, self._since = 0, time.monotonic()
        try:
            _check_new_id(self._cur, doc["run_id"], self.store.postgres)    # a run from elsewhere
            added = _insert_run(self._cur, doc)
        except IdTaken:
            self.commit()       # nothing of this run was written: the runs before it stay stored
            raise
        except Exception as exc:
            self.end(exc)           # rolled back; a database error comes out as its one-line UserError
            raise
        self.pending.append(doc["run_id"])
        self._rows += 1 + len(doc["results"])
        if self._rows >= self.max_rows or time.monotonic() - self._since >= self.max_seconds:
            self.commit()
        return added

    def commit(self) -> None:
        if self._tx is not None:
            tx, self._tx = self._tx, None
            tx.__exit__(None, None, None)
        self.pending = []

    def end(self, exc: BaseException | None = None) -> None:
        """Commit what is open, or roll it back when exc is given (a write the store refused is
        then raised as the transaction's one-line UserError)."""
        if exc is None:
            self.commit()
        elif self._tx is not None:
            tx, self._tx = self._tx, None
            self.pending = []
            tx.__exit__(type(exc), exc, exc.__traceback__)
