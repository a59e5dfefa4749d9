"""The run store: SQLite by default (stdlib sqlite3), PostgreSQL for teams (psycopg).

One SQL dialect serves both (only the parameter marker differs). SQLAlchemy would be the
usual toolkit, but importing it takes ~0.5 s, which breaks the fast start of `list`/`show`.
A run is written in one transaction; writing the same run id twice is a no-op.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import sys
import time
from array import array
from contextlib import contextmanager
from typing import Any, Iterator

from gpuparity.errors import UserError
from gpuparity.results.schema import metric_samples, run_stack
from gpuparity.results.store_url import check_url, default_db, is_postgres, store_files, without_password  # noqa: F401

DDL = [
    """CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL,
        host TEXT,
        vendor TEXT,
        product TEXT,
        spec_id TEXT,
        stack TEXT,
        torch TEXT,
        schema_version INTEGER NOT NULL,
        benchmark_version INTEGER NOT NULL,
        n_results INTEGER NOT NULL,
        fingerprint TEXT NOT NULL,
        doc TEXT NOT NULL,
        label TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS results (
        run_id TEXT NOT NULL REFERENCES runs(run_id),
        key TEXT NOT NULL,
        workload TEXT NOT NULL,
        category TEXT,
        dtype TEXT,
        params TEXT,
        status TEXT NOT NULL,
        reason TEXT,
        unit TEXT,
        value DOUBLE PRECISION,  -- REAL is 4 bytes in PostgreSQL (8 in SQLite)
        samples BLOB,
        ci_low DOUBLE PRECISION,
        ci_high DOUBLE PRECISION,
        trials INTEGER,
        trial_values BLOB,       -- float64 per trial: the trial figures (results/figure.py)
        trial_se BLOB,           -- float64 per trial: their log standard errors (NaN unknown)
        flags TEXT,              -- comma-joined: unstable, timed_out, max_samples
        peak_kind TEXT,          -- the peak a result is measured against (platform/specs.peak_for)
        power_w DOUBLE PRECISION,  -- mean measured power where the telemetry is valid
        work TEXT,               -- JSON: the work of one invocation (flop, bytes, tokens): rates follow
        PRIMARY KEY (run_id, key)  -- also the index every lookup of a run's results uses
    )""",
    "CREATE INDEX IF NOT EXISTS results_key ON results(key)",
    """CREATE TABLE IF NOT EXISTS reference_results (
        ref_id TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        category TEXT,
        spec_id TEXT,
        model TEXT,
        scenario TEXT,
        doc TEXT NOT NULL
    )""",
    "CREATE TABLE IF NOT EXISTS gpuparity_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
]
# Created by the upgrade to STORE_VERSION 3 (after the columns they name exist): `list` and `show
# latest` read the newest runs off runs_started; --gpu and --host filters are index lookups.
INDEXES = [
    "CREATE INDEX IF NOT EXISTS runs_started ON runs(started_at, run_id)",
    "CREATE INDEX IF NOT EXISTS runs_spec ON runs(LOWER(spec_id))",
    "CREATE INDEX IF NOT EXISTS runs_product ON runs(LOWER(product))",
    "CREATE INDEX IF NOT EXISTS runs_host ON runs(host)",
    # a product and stack's newest runs (comparison/history: a one-run side's run-to-run spread)
    "CREATE INDEX IF NOT EXISTS runs_platform ON runs(spec_id, stack, started_at, run_id)",
]
# The store's layout, kept in gpuparity_meta (name 'schema') so that opening a store reads one row
# instead of inspecting its tables: 1 the first stores (samples as JSON text), 2 runs.fingerprint,
# runs.label and the trial columns of results (stores of 1 and 2 have no metadata row), 3 the
# metadata row, the indexes above and results.work, 4 the runs_platform index, 5 result rows as
# their documents' samples give them (the upgrade recomputes rows that earlier versions imported
# as stated: compare and report read those columns).
STORE_VERSION = 5
RESULTS_INSERT = (
    "INSERT INTO results (run_id, key, workload, category, dtype, params, status, reason, unit,"
    " value, samples, ci_low, ci_high, trials, trial_values, trial_se, flags, peak_kind, power_w, work)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


_may_create = True    # False while a command that only reads stores runs (cli.common.db_option)


def may_create(allowed: bool) -> None:
    """Whether opening a SQLite store that does not exist creates it (run, import) or is the
    one-line error "no store at PATH" (list, show, compare, ...: a reader never makes a store)."""
    global _may_create
    _may_create = allowed


@contextmanager
def creating():
    """Inside: a store may be created whatever the command (a dead run recovered by a reader goes
    to the store that run was asked to create)."""
    global _may_create
    before, _may_create = _may_create, True
    try:
        yield
    finally:
        _may_create = before


SQLITE_MAGIC = b"SQLite format 3\x00"


def store_missing(url: str | None = None) -> str | None:
    """The path of a SQLite store that does not exist yet (None when it exists, or for PostgreSQL):
    what a reader says instead of creating it."""
    url = url or default_db()
    if is_postgres(url):
        return None
    path = url.removeprefix("sqlite:///")
    return None if os.path.exists(path) else path


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
            self._conn = self._connect_postgres(connect_timeout)
            self._mark = "%s"
        else:
            self._conn = self._connect_sqlite()
            self._mark = "?"
        if self.read_only:
            self._check_current()
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

    def _connect_sqlite(self) -> sqlite3.Connection:
        path = self.path
        folder = os.path.dirname(os.path.abspath(path))
        if not _may_create and not os.path.exists(path):     # a reader, before any folder or file is made
            raise UserError(f"no store at {path} (gpuparity run, import or reference import creates one)")
        check_target(path, self._own_folder)
        if os.path.exists(path):
            self._check_header(path)
        else:
            if self._own_folder:
                try:
                    os.makedirs(folder, exist_ok=True)
                except OSError as exc:
                    raise UserError(f"{path}: cannot create its folder ({exc.strerror or exc})") from None
            self._create_file(path)
        if os.path.exists(path) and not (os.access(path, os.W_OK) and os.access(folder, os.W_OK)):
            # A read-only store still lists, shows and compares; a save is refused (and spooled).
            self.read_only = True
            try:
                conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30, isolation_level=None)
            except sqlite3.Error as exc:
                raise UserError(f"{path}: not a usable SQLite store ({exc})") from None
            self._check_foreign(conn)
            return conn
        deadline = time.monotonic() + 30
        while True:
            conn = None
            try:
                conn = sqlite3.connect(path, timeout=30, isolation_level=None)
                self._check_foreign(conn)          # before anything writes to the file
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA foreign_keys=ON")
                return conn
            except sqlite3.OperationalError as exc:
                if conn is not None:
                    conn.close()
                # Switching a new file to WAL while other processes open it can answer "locked"
                # without waiting on the busy timeout; that race is transient, so retry it.
                if "locked" in str(exc) and time.monotonic() < deadline:
                    time.sleep(0.01 + random.random() * 0.05)
                    continue
                raise UserError(f"{path}: not a usable SQLite store ({exc})") from None
            except sqlite3.DatabaseError as exc:
                if conn is not None:
                    conn.close()
                raise UserError(f"{path}: not a usable SQLite store ({exc})") from None
            except UserError:
                if conn is not None:
                    conn.close()
                raise
            except OSError as exc:
                raise UserError(f"{path}: cannot open store ({exc.strerror})") from None

    def _check_header(self, path: str) -> None:
        """An existing file is a SQLite database or is left alone: an empty file or one of any other
        content is never turned into a store (nor read as one)."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            try:
                head = os.read(fd, len(SQLITE_MAGIC))
            finally:
                os.close(fd)
        except OSError as exc:
            raise UserError(f"{path}: cannot open store ({exc.strerror or exc})") from None
        if not head:
            if not _may_create:
                raise UserError(f"no store at {path} (an empty file; gpuparity run, import or reference import "
                                "creates a store in a new file)")
            raise UserError(f"{path}: an empty file, not a store: it is left as it is (remove it, or give a new "
                            "file name)")
        if head != SQLITE_MAGIC:
            raise UserError(f"{path}: not a usable SQLite store (not a SQLite file: left as it is)")

    def _create_file(self, path: str) -> None:
        """A new store appears whole: its tables are made under a temporary name beside it, which is
        then linked into place (another process creating the same store at once wins or loses
        whole; no one ever sees a half-made store, nor an empty file to refuse)."""
        folder = os.path.dirname(os.path.abspath(path))
        tmp = os.path.join(folder, f".{os.path.basename(path)[:80]}.{os.getpid()}.{random.getrandbits(32):08x}.new")
        try:
            self._conn = sqlite3.connect(tmp, timeout=30, isolation_level=None)
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._mark = "?"
                self._create()
            finally:
                self._conn.close()
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass                        # another process made it first: that one is the store
            except OSError:                 # a file system without hard links
                if not os.path.exists(path):
                    os.rename(tmp, path)
        except sqlite3.Error as exc:
            raise UserError(f"{path}: cannot create the store ({exc})") from None
        except OSError as exc:
            raise UserError(f"{path}: cannot create the store ({exc.strerror or exc})") from None
        finally:
            for name in (tmp, tmp + "-wal", tmp + "-shm", tmp + "-journal"):
                try:
                    os.remove(name)
                except OSError:
                    pass

    def _connect_postgres(self, timeout: float):
        try:
            import psycopg
        except ImportError:
            raise UserError("a postgresql:// store needs psycopg: pip install 'gpuparity[postgres]'") from None
        url = self.url.replace("postgresql+psycopg://", "postgresql://")
        try:
            conn = psycopg.connect(url, connect_timeout=max(1, int(timeout)), autocommit=True)
        except psycopg.Error as exc:
            raise StoreUnavailable(f"PostgreSQL store unreachable: {_first_line(exc, url)}") from None
        return conn

    def _failed(self, exc: BaseException) -> UserError | None:
        """A database error as the one-line UserError it is for the user (None: not one): SQLite's
        damaged file, PostgreSQL's refusal (a role without privileges) or lost connection (the
        server stopped); the URL's password never shown."""
        if isinstance(exc, UserError):
            return None
        if isinstance(exc, (sqlite3.IntegrityError, sqlite3.DataError)):
            # nothing was written; a document the checks let through must still not traceback
            return UserError(f"{self.path}: the store refused the write ({exc})")
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return UserError(f"{self.path}: the store is busy ({exc}): try again")
        if isinstance(exc, sqlite3.DatabaseError):
            return UserError(f"{self.path}: the store is damaged or unreadable ({exc})")
        if self.postgres:
            import psycopg

            if isinstance(exc, psycopg.OperationalError):
                return StoreUnavailable(f"{self.shown}: the PostgreSQL store was lost ({_first_line(exc, self.url)})")
            if isinstance(exc, psycopg.Error):
                return UserError(f"{self.shown}: the PostgreSQL store refused it ({_first_line(exc, self.url)})")
        return None

    def _check_foreign(self, conn: sqlite3.Connection) -> None:
        """Refuse a SQLite file that belongs to something else: never add tables to it."""
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.OperationalError:
            raise
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.path}: not a usable SQLite store ({exc})") from None
        if tables and "runs" not in tables:
            names = ", ".join(sorted(tables)[:5])
            raise UserError(f"{self.path}: not a gpuparity store (it holds other tables: {names})")
        if not tables and not _may_create:      # a reader never makes the tables
            raise UserError(f"no store at {self.path} (a SQLite file without gpuparity's tables)")
        if "runs" in tables:
            cols = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
            if not {"run_id", "started_at", "doc"} <= cols:
                raise UserError(f"{self.path}: not a gpuparity store (its runs table has other columns)")

    def _version(self) -> int:
        """The layout version in the metadata row (0: no row: an empty store or one of version 1
        or 2). One primary-key lookup: opening a store never looks through its tables."""
        if self.postgres:
            if self.query("SELECT to_regclass('gpuparity_meta')")[0][0] is None:
                return 0
        elif not self.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpuparity_meta'"):
            return 0
        rows = self.query("SELECT value FROM gpuparity_meta WHERE name = 'schema'")
        return int(rows[0][0]) if rows and str(rows[0][0]).isdigit() else 0

    def _check_current(self) -> None:
        """A read-only store cannot be upgraded: it must already have this version's columns
        (a version 2 store reads without the newer indexes and results.work)."""
        self.version = self._version()
        if self.version >= STORE_VERSION:
            return
        if "runs" not in {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}:
            raise UserError(f"{self.path}: read-only and empty: not a gpuparity store")
        if "trial_values" not in {r[1] for r in self._conn.execute("PRAGMA table_info(results)")}:
            raise UserError(f"{self.path}: a store of an earlier version, read-only: make it writable once "
                            "so that it can be upgraded")

    def _create(self) -> None:
        """Create or upgrade the tables, once: a store at this version is left as it is (no write)."""
        self.version = self._version()
        if self.version >= STORE_VERSION:
            return
        if not _may_create and self.postgres and self.query("SELECT to_regclass('runs')")[0][0] is None:
            raise UserError(f"no store in {self.shown} (an empty database: gpuparity run, import or reference "
                            "import creates the tables)")
        with self.transaction() as cur:
            if self.postgres:
                # Serialise concurrent CREATE TABLE IF NOT EXISTS from many ranks.
                cur.execute("SELECT pg_advisory_xact_lock(727272)")
            for ddl in DDL:
                cur.execute(ddl.replace(" BLOB", " BYTEA") if self.postgres else ddl)
            cur.execute("SELECT value FROM gpuparity_meta WHERE name = 'schema'")
            row = cur.fetchone()            # another process may have upgraded it while this one waited
            if row and str(row[0]).isdigit() and int(row[0]) >= STORE_VERSION:
                self.version = int(row[0])
                return
            self._upgrade(cur)
            for ddl in INDEXES:
                cur.execute(ddl)
            cur.execute("INSERT INTO gpuparity_meta (name, value) VALUES ('schema', ?)"
                        " ON CONFLICT (name) DO UPDATE SET value = excluded.value", (str(STORE_VERSION),))
        self.version = STORE_VERSION

    def columns(self, table: str) -> set[str]:
        """The column names of a table (a store of an earlier version lacks the newer ones)."""
        assert table in ("runs", "results", "reference_results")
        if self.postgres:
            rows = self.query("SELECT column_name FROM information_schema.columns WHERE table_name = ?", (table,))
            return {row[0] for row in rows}
        return {row[1] for row in self.query(f"PRAGMA table_info({table})")}

    def _upgrade(self, cur) -> None:
        """Bring a store written by an earlier version up to this schema, in the same transaction:
        runs.fingerprint (copied out of each document), runs.label, the trial columns of results
        (rows without them read as one trial: comparison.sides), results.work (NULL in rows written
        before it: readers take the work from those runs' documents), sample blobs (were JSON
        text) and result rows recomputed from their documents. Runs once per store: the metadata
        row records it."""
        blob = "BYTEA" if self.postgres else "BLOB"
        runs = self.columns("runs")
        if "fingerprint" not in runs:
            cur.execute("ALTER TABLE runs ADD COLUMN fingerprint TEXT")
            cur.execute("UPDATE runs SET fingerprint = (doc::json->'fingerprint')::text" if self.postgres
                        else "UPDATE runs SET fingerprint = json_extract(doc, '$.fingerprint')")
        if "label" not in runs:
            cur.execute("ALTER TABLE runs ADD COLUMN label TEXT")
        have = self.columns("results")
        for name, kind in (("ci_low", "DOUBLE PRECISION"), ("ci_high", "DOUBLE PRECISION"), ("trials", "INTEGER"),
                           ("trial_values", blob), ("trial_se", blob), ("flags", "TEXT"), ("peak_kind", "TEXT"),
                           ("power_w", "DOUBLE PRECISION"), ("work", "TEXT")):
            if name not in have:
                cur.execute(f"ALTER TABLE results ADD COLUMN {name} {kind}")
        _recompute_rows(cur)
        if self.postgres:
            return
        cur.execute("SELECT rowid, samples FROM results WHERE typeof(samples) = 'text'")
        for rowid, text in cur.fetchall():
            cur.execute("UPDATE results SET samples = ? WHERE rowid = ?",
                        (encode_samples([float(v) for v in json.loads(text or "[]")]), rowid))

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
            failed = self._failed(exc)
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
            failed = self._failed(exc)
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


def _recompute_rows(cur) -> None:
    """Versions before 5 imported documents without recomputing their figures, and `compare` and
    `report` read the result rows, not the documents: each run's rows are written again from its
    document as read_back gives it (figures from the samples) where that differs. The documents
    stay as they came (`show` reads them back the same way). One run at a time; a document this
    version cannot read is left to `show` to name."""
    from gpuparity.errors import UserError
    from gpuparity.results.document import validate_document
    from gpuparity.results.recompute import read_back

    cur.execute("SELECT run_id FROM runs")
    for (run_id,) in cur.fetchall():
        cur.execute("SELECT doc FROM runs WHERE run_id = ?", (run_id,))
        try:
            doc = validate_document(json.loads(cur.fetchone()[0]), f"run {run_id}")
        except (TypeError, ValueError, UserError):
            continue
        doc = read_back(doc, f"run {run_id}")
        if (doc.get("recomputed") or {}).get("count"):
            cur.execute("DELETE FROM results WHERE run_id = ?", (run_id,))
            cur.executemany(RESULTS_INSERT, [result_row(run_id, r) for r in doc["results"]])


class RunWriter:
    """Store.writer(): runs written into a transaction that is committed in batches."""

    def __init__(self, store: Store, max_rows: int, max_seconds: float):
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


def check_target(path: str, may_create_folder: bool = False) -> None:
    """Refuse, before anything is opened or created, a SQLite store path that is a folder, not a
    regular file (/dev/null, a FIFO), or in a folder that does not exist (a store file is created
    only in an existing folder; only the default store makes its own)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise UserError(f"{path}: cannot open store ({exc.strerror or exc})") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise UserError(f"{path}: is a folder, not a store file")
    if mode is not None and not stat.S_ISREG(mode):
        raise UserError(f"{path}: not a regular file (a device or pipe), not a store file")
    folder = os.path.dirname(os.path.abspath(path))
    if mode is None and not may_create_folder and not os.path.isdir(folder):
        raise UserError(f"{path}: folder {folder} does not exist (give a store file in an existing folder)")


def check_writable(url: str | None) -> None:
    """Before work that ends in a save (`run`): the store opens (created if new, in an existing
    folder) and takes writes, or exit 2 now. A PostgreSQL store is not probed: one that is down
    when the run ends gets the run spooled (results/spool.py)."""
    if url and is_postgres(url):
        return
    path = (url or default_db()).removeprefix("sqlite:///")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(path) and os.path.isdir(folder) and not os.access(folder, os.W_OK):
        raise UserError(f"{path}: its folder {folder} is read-only: a run could not be saved there; give a "
                        "writable --db, or --no-store")
    with Store(url) as store:
        if store.read_only:
            raise UserError(f"{store.path}: the store is read-only (or its folder is): a run could not be saved "
                            "there; give a writable --db, or --no-store")


class _Cursor:
    """A cursor that speaks '?' markers on both back ends."""

    def __init__(self, cur, store: Store):
        self._cur, self._store = cur, store

    def execute(self, sql: str, params: tuple = ()):
        return self._cur.execute(self._store._sql(sql), params)

    def executemany(self, sql: str, rows: list[tuple]):
        if rows:
            self._cur.executemany(self._store._sql(sql), rows)

    def fetchone(self):
        return self._cur.fetchone()

    def fetchall(self):
        return self._cur.fetchall()

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount


class StoreUnavailable(UserError):
    """The store could not be reached (a PostgreSQL server down); callers may spool instead."""


def _first_line(exc: BaseException, url: str = "") -> str:
    """An exception's first line, a URL password in it (the store's own too) masked."""
    from gpuparity.results.store_url import hide_password

    text = str(exc).strip()
    return hide_password(text.splitlines()[0] if text else type(exc).__name__, url)


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


def run_filter_sql(gpu: str | None = None, stack: str | None = None, since: str | None = None,
                   host: str | None = None, run_ids: list[str] | None = None,
                   label: str | None = None, job: str | None = None,
                   postgres: bool = False) -> tuple[str, list]:
    """WHERE clause for the filters every verb shares (--gpu, --stack, --since, --host, label=, job=).

    gpu: a spec id or product name, exactly (case-insensitive), so h100 never pools H100 SXM with
    H100 PCIe; 'h100*' is a prefix (comparisons then say which products a side pools).
    stack: whole version parts: 'rocm' matches 'rocm 6.2.4', 'rocm 6.2' matches 'rocm 6.2.4'
    but not 'rocm 6.20'."""
    clauses, args = [], []
    if gpu:
        g = gpu.lower()
        if g.endswith("*"):
            prefix = _like_escape(g[:-1]) + "%"
            clauses.append("(LOWER(product) LIKE ? ESCAPE '!' OR LOWER(spec_id) LIKE ? ESCAPE '!')")
            args += [prefix, prefix]
        else:
            clauses.append("(LOWER(product) = ? OR LOWER(spec_id) = ?)")
            args += [g, g]
    if stack:
        st = _like_escape(stack.lower().strip())
        clauses.append("(LOWER(stack) = ? OR LOWER(stack) LIKE ? ESCAPE '!' OR LOWER(stack) LIKE ? ESCAPE '!')")
        args += [stack.lower().strip(), f"{st} %", f"{st}.%"]
    if since:
        clauses.append("started_at >= ?")
        args.append(since)
    if host:
        clauses.append("host = ?")
        args.append(host)
    if label:                   # a run's `run --label`, exactly
        clauses.append("label = ?")
        args.append(label)
    if job:
        sql, values = _job_clause(job, postgres)
        clauses.append(sql)
        args += values
    if run_ids:
        clauses.append("run_id IN (" + ",".join("?" * len(run_ids)) + ")")
        args += list(run_ids)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", args


def _job_clause(job: str, postgres: bool) -> tuple[str, list]:
    """job=12345: the runs of that SLURM job (every task of an array: the id sbatch printed, or one
    task's own id); job=12345_2: one array task. Read from the fingerprint's slurm block."""
    import re

    m = re.fullmatch(r"([0-9]{1,20})(?:_([0-9]{1,9}))?", job.strip())
    if not m:
        raise UserError(f"job={job}: a SLURM job id is a number (12345, or 12345_2 for one task of an array)")

    def field(name: str) -> str:
        return f"(fingerprint::jsonb #>> '{{slurm,{name}}}')" if postgres else f"(fingerprint ->> '$.slurm.{name}')"

    if m.group(2) is not None:
        task = str(int(m.group(2))) if postgres else int(m.group(2))      # #>> gives text; ->> an integer
        return f"({field('job')} = ? AND {field('array_task_id')} = ?)", [m.group(1), task]
    return f"({field('job')} = ? OR {field('job_id')} = ?)", [m.group(1), m.group(1)]


def _like_escape(text: str) -> str:
    """A literal for LIKE ... ESCAPE '!': % and _ in a name match only themselves."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")
