"""The store's schema and its migrations: the tables and indexes, the layout version kept in
gpuparity_meta, creating the tables once, and bringing a store of an earlier version up to this
one (in the same transaction; a read-only store must already be current).
"""

from __future__ import annotations

import json

from gpuparity.errors import UserError
from gpuparity.results.store_connect import creation_allowed
from gpuparity.results.store_rows import RESULTS_INSERT, encode_samples, result_row

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


def schema_version(store) -> int:
    """The layout version in the metadata row (0: no row: an empty store or one of version 1
    or 2). One primary-key lookup: opening a store never looks through its tables."""
    if store.postgres:
        if store.query("SELECT to_regclass('gpuparity_meta')")[0][0] is None:
            return 0
    elif not store.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpuparity_meta'"):
        return 0
    rows = store.query("SELECT value FROM gpuparity_meta WHERE name = 'schema'")
    return int(rows[0][0]) if rows and str(rows[0][0]).isdigit() else 0


def check_current(store) -> None:
    """A read-only store cannot be upgraded: it must already have this version's columns
    (a version 2 store reads without the newer indexes and results.work)."""
    store.version = schema_version(store)
    if store.version >= STORE_VERSION:
        return
    if "runs" not in {r[0] for r in store._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}:
        raise UserError(f"{store.path}: read-only and empty: not a gpuparity store")
    if "trial_values" not in {r[1] for r in store._conn.execute("PRAGMA table_info(results)")}:
        raise UserError(f"{store.path}: a store of an earlier version, read-only: make it writable once "
                        "so that it can be upgraded")


def create_tables(store) -> None:
    """Create or upgrade the tables, once: a store at this version is left as it is (no write)."""
    store.version = schema_version(store)
    if store.version >= STORE_VERSION:
        return
    if not creation_allowed() and store.postgres and store.query("SELECT to_regclass('runs')")[0][0] is None:
        raise UserError(f"no store in {store.shown} (an empty database: gpuparity run, import or reference "
                        "import creates the tables)")
    with store.transaction() as cur:
        if store.postgres:
            # Serialise concurrent CREATE TABLE IF NOT EXISTS from many ranks.
            cur.execute("SELECT pg_advisory_xact_lock(727272)")
        for ddl in DDL:
            cur.execute(ddl.replace(" BLOB", " BYTEA") if store.postgres else ddl)
        cur.execute("SELECT value FROM gpuparity_meta WHERE name = 'schema'")
        row = cur.fetchone()            # another process may have upgraded it while this one waited
        if row and str(row[0]).isdigit() and int(row[0]) >= STORE_VERSION:
            store.version = int(row[0])
            return
        upgrade(store, cur)
        for ddl in INDEXES:
            cur.execute(ddl)
        cur.execute("INSERT INTO gpuparity_meta (name, value) VALUES ('schema', ?)"
                    " ON CONFLICT (name) DO UPDATE SET value = excluded.value", (str(STORE_VERSION),))
    store.version = STORE_VERSION


def upgrade(store, cur) -> None:
    """Bring a store written by an earlier version up to this schema, in the same transaction:
    runs.fingerprint (copied out of each document), runs.label, the trial columns of results
    (rows without them read as one trial: comparison.sides), results.work (NULL in rows written
    before it: readers take the work from those runs' documents), sample blobs (were JSON
    text) and result rows recomputed from their documents. Runs once per store: the metadata
    row records it."""
    blob = "BYTEA" if store.postgres else "BLOB"
    runs = store.columns("runs")
    if "fingerprint" not in runs:
        cur.execute("ALTER TABLE runs ADD COLUMN fingerprint TEXT")
        cur.execute("UPDATE runs SET fingerprint = (doc::json->'fingerprint')::text" if store.postgres
                    else "UPDATE runs SET fingerprint = json_extract(doc, '$.fingerprint')")
    if "label" not in runs:
        cur.execute("ALTER TABLE runs ADD COLUMN label TEXT")
    have = store.columns("results")
    for name, kind in (("ci_low", "DOUBLE PRECISION"), ("ci_high", "DOUBLE PRECISION"), ("trials", "INTEGER"),
                       ("trial_values", blob), ("trial_se", blob), ("flags", "TEXT"), ("peak_kind", "TEXT"),
                       ("power_w", "DOUBLE PRECISION"), ("work", "TEXT")):
        if name not in have:
            cur.execute(f"ALTER TABLE results ADD COLUMN {name} {kind}")
    _recompute_rows(cur)
    if store.postgres:
        return
    cur.execute("SELECT rowid, samples FROM results WHERE typeof(samples) = 'text'")
    for rowid, text in cur.fetchall():
        cur.execute("UPDATE results SET samples = ? WHERE rowid = ?",
                    (encode_samples([float(v) for v in json.loads(text or "[]")]), rowid))


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
