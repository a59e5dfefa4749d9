"""Where a store is and how it is opened: the creation rule (a reader never makes a store), a
SQLite file checked before it is opened (a regular file, SQLite's header, gpuparity's tables),
made whole or not at all, opened read-only when it cannot be written; a PostgreSQL server
connected with its password masked; database errors as one-line messages; one '?' cursor for
both back ends. results/store.py's Store uses these; store_url.py says which store a name means.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from contextlib import contextmanager

from gpuparity.errors import UserError
from gpuparity.results.store_url import default_db, is_postgres

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


def creation_allowed() -> bool:
    """What may_create last set (or creating() holds)."""
    return _may_create


SQLITE_MAGIC = b"SQLite format 3\x00"


def store_missing(url: str | None = None) -> str | None:
    """The path of a SQLite store that does not exist yet (None when it exists, or for PostgreSQL):
    what a reader says instead of creating it."""
    url = url or default_db()
    if is_postgres(url):
        return None
    path = url.removeprefix("sqlite:///")
    return None if os.path.exists(path) else path


def connect_sqlite(store) -> sqlite3.Connection:
    path = store.path
    folder = os.path.dirname(os.path.abspath(path))
    if not _may_create and not os.path.exists(path):     # a reader, before any folder or file is made
        raise UserError(f"no store at {path} (gpuparity run, import or reference import creates one)")
    check_target(path, store._own_folder)
    if os.path.exists(path):
        check_header(path)
    else:
        if store._own_folder:
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError as exc:
                raise UserError(f"{path}: cannot create its folder ({exc.strerror or exc})") from None
        create_file(store, path)
    if os.path.exists(path) and not (os.access(path, os.W_OK) and os.access(folder, os.W_OK)):
        # A read-only store still lists, shows and compares; a save is refused (and spooled).
        store.read_only = True
        conn = None
        try:
            conn = sqlite3.connect(read_only_uri(path), uri=True, timeout=30, isolation_level=None)
            check_foreign(store, conn)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            raise UserError(f"{path}: not a usable SQLite store ({exc})") from None
        except UserError:
            conn.close()
            raise
        return conn
    deadline = time.monotonic() + 30
    while True:
        conn = None
        try:
            conn = sqlite3.connect(path, timeout=30, isolation_level=None)
            check_foreign(store, conn)          # before anything writes to the file
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
            if disk_full(path):         # SQLite says "disk I/O error" where it cannot grow its -shm
                raise UserError(f"{path}: the store's disk is full ({exc}): nothing was written") from None
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


def read_only_uri(path: str) -> str:
    """The SQLite URI that reads a store this process cannot write (a read-only share, a 0444 file,
    a folder without write permission) without writing anything beside it. The path is %-quoted:
    a '?' or '#' in a file name is part of the name, never the URI's query (`r?mode=rwc&x.db`).
    mode=ro alone would still make -shm and -wal files beside it (or fail where it cannot: WAL
    needs them), so with no -wal file (no writer has it open, nothing is waiting in a WAL) it is
    read as immutable: no locks, no -shm. With a -wal that holds writes, a reader needs the
    writer's -shm beside it; without one it is refused (one line) rather than read without them."""
    import urllib.parse

    wal, shm = path + "-wal", path + "-shm"
    base = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"
    try:
        pending = os.path.getsize(wal) > 0
    except OSError:
        pending = False
    if not pending:
        return base + "&immutable=1"
    if os.path.exists(shm):
        return base
    raise UserError(f"{path}: its -wal file holds writes not yet in the store and no -shm file is beside it; the "
                    "store cannot be written here, so they cannot be read: open it once where it can be written")


def disk_full(path: str) -> bool:
    """Whether the file system of a SQLite store has no room left (what a failed write meant)."""
    try:
        return os.statvfs(os.path.dirname(os.path.abspath(path))).f_bavail == 0
    except OSError:
        return False


def check_header(path: str) -> None:
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


def create_file(store, path: str) -> None:
    """A new store appears whole: its tables are made under a temporary name beside it, which is
    then linked into place (another process creating the same store at once wins or loses
    whole; no one ever sees a half-made store, nor an empty file to refuse)."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)[:80]}.{os.getpid()}.{random.getrandbits(32):08x}.new")
    try:
        store._conn = sqlite3.connect(tmp, timeout=30, isolation_level=None)
        try:
            store._conn.execute("PRAGMA journal_mode=WAL")
            store._mark = "?"
            store._create()
        finally:
            store._conn.close()
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


def connect_postgres(store, timeout: float):
    try:
        import psycopg
    except ImportError:
        raise UserError("a postgresql:// store needs psycopg: pip install 'gpuparity[postgres]'") from None
    url = store.url.replace("postgresql+psycopg://", "postgresql://")
    try:
        conn = psycopg.connect(url, connect_timeout=max(1, int(timeout)), autocommit=True)
    except psycopg.Error as exc:
        raise StoreUnavailable(f"PostgreSQL store unreachable: {_first_line(exc, url)}") from None
    return conn


def failed(store, exc: BaseException) -> UserError | None:
    """A database error as the one-line UserError it is for the user (None: not one): SQLite's
    damaged file, PostgreSQL's refusal (a role without privileges) or lost connection (the
    server stopped); the URL's password never shown."""
    if isinstance(exc, UserError):
        return None
    if isinstance(exc, (sqlite3.IntegrityError, sqlite3.DataError)):
        # nothing was written; a document the checks let through must still not traceback
        return UserError(f"{store.path}: the store refused the write ({exc})")
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return UserError(f"{store.path}: the store is busy ({exc}): try again")
    if isinstance(exc, sqlite3.OperationalError) and (
            getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or disk_full(store.path)):
        return UserError(f"{store.path}: the store's disk is full ({exc}): this write was not kept, the store is "
                         "as it was")
    if isinstance(exc, sqlite3.DatabaseError):
        return UserError(f"{store.path}: the store is damaged or unreadable ({exc})")
    if store.postgres:
        import psycopg

        if isinstance(exc, psycopg.OperationalError):
            return StoreUnavailable(f"{store.shown}: the PostgreSQL store was lost ({_first_line(exc, store.url)})")
        if isinstance(exc, psycopg.Error):
            return UserError(f"{store.shown}: the PostgreSQL store refused it ({_first_line(exc, store.url)})")
    return None


def check_foreign(store, conn: sqlite3.Connection) -> None:
    """Refuse a SQLite file that belongs to something else: never add tables to it."""
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{store.path}: not a usable SQLite store ({exc})") from None
    if tables and "runs" not in tables:
        names = ", ".join(sorted(tables)[:5])
        raise UserError(f"{store.path}: not a gpuparity store (it holds other tables: {names})")
    if not tables and not _may_create:      # a reader never makes the tables
        raise UserError(f"no store at {store.path} (a SQLite file without gpuparity's tables)")
    if "runs" in tables:
        cols = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
        if not {"run_id", "started_at", "doc"} <= cols:
            raise UserError(f"{store.path}: not a gpuparity store (its runs table has other columns)")


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


class _Cursor:
    """A cursor that speaks '?' markers on both back ends."""

    def __init__(self, cur, store):
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
