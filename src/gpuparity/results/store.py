"""The run store: SQLite by default (stdlib sqlite3), PostgreSQL for teams (psycopg).

One SQL dialect serves both (only the parameter marker differs). SQLAlchemy would be the
usual toolkit, but importing it takes ~0.5 s, which breaks the fast start of `list`/`show`.
A run is written in one transaction; writing the same run id twice is a no-op.

Here: the Store (its transactions, queries and the runs and reference rows it reads and writes),
the pool of stores one command reads, and the check before a run that its store takes writes.
Opening a store is results/store_connect.py, its tables and migrations store_schema.py, the rows
a run becomes store_rows.py, the filters' SQL store_filters.py, which store a name means
store_url.py.
"""

from __future__ import annotations

import json
import os
import signal
from contextlib import contextmanager
from typing import Any, Iterator

from gpuparity.errors import UserError
from gpuparity.results.store_connect import _Cursor, connect_postgres, connect_sqlite
from gpuparity.results.store_connect import failed as store_failed
from gpuparity.results.store_filters import _like_escape, run_filter_sql
from gpuparity.results.store_rows import RunWriter, _insert_run
from gpuparity.results.store_schema import check_current, create_tables
from gpuparity.results.store_url import check_url, default_db, is_postgres


class Store:
    """A connection to one store. Use as a context manager or call close()."""

    def __init__(self, url: str | None = None, *, connect_timeout: float = 5.0):
        # only the default store (no --db, no GPUPARITY_DB) may create its folder: the user data dir
        self._own_folder = not url and not os.environ.get("GPUPARITY_DB")
        self.url = check_url(url or default_db(), "store" if url is None else "--db")
        self.postgres = is_postgres(self.url)
        self.read_only = False
        self.version = 0            # the layout version (STORE_VERSION once created or upgraded)
        if self.postgres:
            self._conn = connect_postgres(self, connect_timeout)
            self._mark = "%s"
        else:
            self._conn = connect_sqlite(self)
            self._mark = "?"
        if self.read_only:
            check_current(self)
        else:
            self._create()

    # -- connection -------------------------------------------------------
    @property
    def path(self) -> str:
        """The SQLite file; for PostgreSQL the URL as shown (its password masked)."""
        return self.shown if self.postgres else self.url.removeprefix("sqlite:///")

    @property
    def shown(self) -> str:
        """The store as messages and headers show it: a URL's password is ***."""
        from gpuparity.validate import mask_secrets

        return mask_secrets(self.url)

    def _create(self) -> None:
        """Create or upgrade the tables (store_schema); also what a new SQLite file is made with."""
        create_tables(self)

    def columns(self, table: str) -> set[str]:
        """The column names of a table (a store of an earlier version lacks the newer ones)."""
        assert table in ("runs", "results", "reference_results")
        if self.postgres:
            rows = self.query("SELECT column_name FROM information_schema.columns WHERE table_name = ?", (table,))
            return {row[0] for row in rows}
        return {row[1] for row in self.query(f"PRAGMA table_info({table})")}

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _sql(self, sql: str) -> str:
        return sql.replace("?", self._mark) if self._mark != "?" else sql

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """BEGIN .. COMMIT with Ctrl-C and SIGTERM held back and delivered after it, so neither ever
        leaves half a run. A signal the process ignores (nohup, a background job) stays ignored."""
        if self.read_only:
            raise UserError(f"{self.path}: the store is read-only")
        held: list[int] = []
        old: dict[int, Any] = {}
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                if signal.getsignal(signum) != signal.SIG_IGN:
                    old[signum] = signal.signal(signum, lambda s, f: held.append(s))
            except ValueError:  # not the main thread: signals go to the main thread anyway
                break
        cur = None
        try:
            cur = self._conn.cursor()
            # IMMEDIATE on SQLite: every transaction here writes, and taking the write lock up front
            # lets the busy timeout wait instead of failing a read-to-write upgrade.
            cur.execute("BEGIN" if self.postgres else "BEGIN IMMEDIATE")
            yield _Cursor(cur, self)
            cur.execute("COMMIT")
        except BaseException as exc:
            try:
                if cur is not None:
                    cur.execute("ROLLBACK")
            except Exception:
                pass
            failed = store_failed(self, exc)
            if failed is not None:
                raise failed from None
            raise
        finally:
            for signum, handler in old.items():
                signal.signal(signum, handler)
            for signum in dict.fromkeys(held):
                signal.raise_signal(signum)     # now with the handler the process had before

    def query(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        cur = None
        try:
            cur = self._conn.cursor()
            cur.execute(self._sql(sql), tuple(params))
            rows = cur.fetchall()
        except Exception as exc:
            failed = store_failed(self, exc)
            if failed is not None:
                raise failed from None
            raise
        finally:
            if cur is not None:
                cur.close()
        return rows

    # -- runs -------------------------------------------------------------
    def has_run(self, run_id: str) -> bool:
        return bool(self.query("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)))

    def save_run(self, doc: dict) -> bool:
        """Store a whole run in one transaction. False if that run id is already stored."""
        with self.transaction() as cur:
            return _insert_run(cur, doc)

    @contextmanager
    def writer(self, max_rows: int = 50_000, max_seconds: float = 1.0) -> Iterator["RunWriter"]:
        """Save many runs (an import), committing every max_rows result rows or max_seconds: one
        fsync per batch instead of per run, while a signal waits at most one batch and other
        writers get the lock between batches. What is open is committed when the block ends,
        rolled back when it raises."""
        w = RunWriter(self, max_rows, max_seconds)
        try:
            yield w
        except BaseException as exc:
            w.end(exc)
            raise
        w.end()

    def list_runs(self, limit: int = 50, **filters) -> list[dict]:
        where, args = run_filter_sql(**filters, postgres=self.postgres)
        rows = self.query(
            "SELECT run_id, started_at, status, host, vendor, product, spec_id, stack, n_results, label"
            f" FROM runs {where} ORDER BY started_at DESC, run_id DESC LIMIT {max(0, min(int(limit), 2**62))}",
            args,
        )
        cols = ("run_id", "started_at", "status", "host", "vendor", "product", "spec_id", "stack", "n_results",
                "label")
        return [dict(zip(cols, r, strict=True)) for r in rows]

    def resolve_run_id(self, ref: str) -> str:
        """A full run id, a unique prefix of one, or 'latest'."""
        if ref == "latest":
            rows = self.query("SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1")
        else:
            rows = self.query("SELECT run_id FROM runs WHERE run_id = ?", (ref,)) or self.query(
                "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '!' ORDER BY run_id LIMIT 2",
                (_like_escape(ref) + "%",))
        if not rows:
            raise UserError(f"no run '{ref}' in {self.shown}")
        if len(rows) > 1 and rows[0][0] != ref:
            raise UserError(f"'{ref}' matches several runs; give more of the id")
        return rows[0][0]

    def get_run(self, ref: str) -> dict:
        run_id = self.resolve_run_id(ref)
        (doc,) = self.query("SELECT doc FROM runs WHERE run_id = ?", (run_id,))[0]
        try:
            doc = json.loads(doc)
        except (TypeError, ValueError):
            raise UserError(f"{self.path}: run {run_id} is damaged in the store (its document is not JSON)") from None
        from gpuparity.results.recompute import read_back

        return read_back(doc, f"run {run_id}")     # figures from the samples, whatever version stored it

    def run_text(self, ref: str) -> tuple[str, str, int]:
        """(run id, its document as the stored JSON text, its number of results): what `export`
        writes as it is, so a run of many megabytes is never parsed into objects on the way out."""
        run_id = self.resolve_run_id(ref)
        (doc, n_results), = self.query("SELECT doc, n_results FROM runs WHERE run_id = ?", (run_id,))
        if not isinstance(doc, str) or not doc.startswith("{") or not doc.rstrip().endswith("}"):
            raise UserError(f"{self.path}: run {run_id} is damaged in the store (its document is not JSON)")
        return run_id, doc, n_results

    def run_ids(self, **filters) -> list[str]:
        where, args = run_filter_sql(**filters, postgres=self.postgres)
        return [r[0] for r in self.query(f"SELECT run_id FROM runs {where} ORDER BY started_at", args)]

    def count(self, table: str, at_most: int | None = None) -> int:
        """Rows in a table; with at_most, counting stops there (the cost of at_most rows, not the table)."""
        assert table in ("runs", "results", "reference_results")
        if at_most is not None:
            return self.query(f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} LIMIT {int(at_most)}) AS t")[0][0]
        return self.query(f"SELECT COUNT(*) FROM {table}")[0][0]

    # -- reference data (third-party results, e.g. MLPerf) ---------------------
    def save_references(self, rows: list[dict]) -> int:
        """Insert reference rows (each with ref_id, source, ...) in one transaction; returns new ones."""
        added = 0
        with self.transaction() as cur:
            for row in rows:
                cur.execute(
                    "INSERT INTO reference_results (ref_id, source, category, spec_id, model, scenario, doc)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (ref_id) DO NOTHING",
                    (row["ref_id"], row["source"], row.get("category"), row.get("spec_id"),
                     row.get("model"), row.get("scenario"), json.dumps(row)),
                )
                added += cur.rowcount
        return added

    def references(self, source: str | None = None) -> list[dict]:
        if source:
            rows = self.query("SELECT doc FROM reference_results WHERE source = ?", (source,))
        else:
            rows = self.query("SELECT doc FROM reference_results")
        return [json.loads(r[0]) for r in rows]

    # -- added for comparison/compare (issue 4): fingerprints without parsing whole documents --
    def run_fingerprints(self, run_ids: list[str]) -> dict[str, dict]:
        """{run_id: fingerprint}, from its own column: a run's whole document can be megabytes."""
        out = {}
        for i in range(0, len(run_ids), 500):
            chunk = list(run_ids[i:i + 500])
            marks = ",".join("?" * len(chunk))
            for run_id, fp in self.query(f"SELECT run_id, fingerprint FROM runs WHERE run_id IN ({marks})", chunk):
                out[run_id] = json.loads(fp) if fp else {}
        return out
    # -- end of addition --


class StorePool:
    """The stores one command reads, each opened once: a compare or report of two runs of one
    store (resolve both sides, read both, check claims) holds one connection, not one per step."""

    def __init__(self):
        self._open: dict[str, Store] = {}

    def get(self, url: str | None = None) -> Store:
        url = url or default_db()
        if url not in self._open:
            self._open[url] = Store(url)
        return self._open[url]

    def close(self) -> None:
        for store in self._open.values():
            store.close()
        self._open.clear()

    def __enter__(self) -> "StorePool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_writable(url: str | None, why: str = "a run could not be saved there; give a writable --db, or --no-store"
                   ) -> None:
    """Before work that ends in a save (`run`, `import`, `reference import`): the store opens and
    takes writes (a new one: could be made in its folder), or exit 2 now, `why` said. A PostgreSQL
    store is not probed: one that is down when the run ends gets the run spooled (results/spool.py)."""
    if url and is_postgres(url):
        return
    path = (url or default_db()).removeprefix("sqlite:///")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(path):
        # judged, not made: the save creates it, so a run stopped before then leaves no store behind
        from gpuparity.results.store_connect import check_target

        check_target(path, may_create_folder=url is None)
        while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
            folder = os.path.dirname(folder)              # the default store's folder is made where it is named
        if not os.access(folder, os.W_OK):
            raise UserError(f"{path}: its folder {folder} is read-only: {why}")
        return
    with Store(url) as store:
        if store.read_only:
            raise UserError(f"{store.path}: the store is read-only (or its folder is): {why}")
