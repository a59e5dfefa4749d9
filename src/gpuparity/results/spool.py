"""Save a run, or spool it to a JSON file when the store cannot take it (import it later).

A measured run is never lost to the store: a PostgreSQL server that is down or dies before the
save, a refused write (read-only, permissions), a locked or unusable SQLite file, or psycopg
missing all leave the run document in the spool folder ($GPUPARITY_SPOOL, else
<user data dir>/spool; the temp dir if that is not writable), and the user is told the file and
the `gpuparity import` line that stores it. The spooled file is the run document itself, so the
import stores exactly what an uninterrupted save would have stored.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import tempfile

from gpuparity.errors import UserError
from gpuparity.results.store import Store


def spool_dir() -> str:
    from platformdirs import user_data_dir

    return os.environ.get("GPUPARITY_SPOOL") or os.path.join(user_data_dir("gpuparity"), "spool")


def _store_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean 'the store did not take the run' (psycopg only if it is installed)."""
    errors: list[type[BaseException]] = [UserError, sqlite3.Error]
    try:
        import psycopg

        errors.append(psycopg.Error)
    except ImportError:
        pass
    return tuple(errors)


def save_or_spool(doc: dict, db: str | None, out=None) -> str:
    """Returns 'stored', 'exists' or the spool file path."""
    try:
        with Store(db) as store:
            added = store.save_run(doc)
            shown = store.shown
    except _store_errors() as exc:
        reason = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        try:
            path = spool(doc)
        except UserError as lost:       # both said in the one line (a full disk under the store and the spool)
            raise UserError(f"store did not take the run: {reason}; {lost}") from None
        if out is not None:
            from rich.markup import escape

            out.print(f"[yellow]store did not take the run: {escape(reason)}[/]\n"
                      f"spooled run {doc['run_id']} to {escape(path)}; store it later with: "
                      f"gpuparity import {escape(path)}")
        return path
    if out is not None:
        out.print(f"{'saved' if added else 'already stored'}: run {doc['run_id']} in {shown}")
    return "stored" if added else "exists"


def redact(url: str) -> str:
    """A store URL (or any text) fit for a log: passwords replaced by ***."""
    from gpuparity.validate import mask_secrets

    return mask_secrets(url)


def private_folder(folder: str) -> str:
    """The folder, made if missing, readable only by its owner (0700): spooled runs and journals
    hold what a run measured. Refused (OSError) when it is not a folder of this user's."""
    import stat

    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
        raise OSError(f"{folder} is not a folder of this user's")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(folder, 0o700)
    return folder


PROBE_BYTES = 64 * 1024       # a journal's header and first trials; what check_spool writes once


def check_spool() -> str:
    """Before a run measures: its spool folder ($GPUPARITY_SPOOL, else the user data dir's) is a
    folder this user can write, or can be made where it is named (its journal goes there from the
    first case on); otherwise exit 2 now, never a traceback after the work. Nothing is made here
    (a probe file of PROBE_BYTES is written and removed: a full disk is refused too)."""
    from gpuparity.validate import terminal_safe

    folder = spool_dir()
    name = f"GPUPARITY_SPOOL={terminal_safe(folder)}" if os.environ.get("GPUPARITY_SPOOL") else \
        f"the spool folder {terminal_safe(folder)}"
    probe_in = os.path.abspath(folder)
    while not os.path.exists(probe_in) and os.path.dirname(probe_in) != probe_in:
        probe_in = os.path.dirname(probe_in)      # the folder it would be made in
    if not os.path.isdir(probe_in):
        raise UserError(f"{name}: {'not a folder' if probe_in == os.path.abspath(folder) else 'inside a file'} "
                        "(a run keeps its journal and spooled saves in a folder)")
    try:
        fd, probe = tempfile.mkstemp(dir=probe_in, prefix=".gpuparity-probe.")
        try:        # room for the journal's first records: a full disk is said now, not after measuring
            if os.write(fd, b"\0" * PROBE_BYTES) < PROBE_BYTES:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            os.fsync(fd)
        finally:
            os.close(fd)
            os.remove(probe)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise UserError(f"{name}: its disk is full ({exc.strerror}): the run's journal needs room there; free "
                            "some, give GPUPARITY_SPOOL a folder with room, or --no-store") from None
        raise UserError(f"{name}: not a writable folder ({exc.strerror or exc}): give GPUPARITY_SPOOL a folder "
                        "of yours, or --no-store") from None
    return folder


def spool(doc: dict) -> str:
    """Write the run document atomically into the spool folder (or the temp dir), 0600 in a 0700
    folder; returns the path."""
    from gpuparity.validate import write_file

    last: OSError | None = None
    uid = os.getuid() if hasattr(os, "getuid") else ""
    for folder in (spool_dir(), None):
        try:
            if folder is None:      # the temp dir, found only now (on a full disk there may be none)
                folder = os.path.join(tempfile.gettempdir(), f"gpuparity-spool-{uid}")
            path = os.path.join(folder, f"{doc['run_id']}.json")
            private_folder(folder)
            write_file(path, json.dumps(doc), mode=0o600)
            return path
        except OSError as exc:
            last = last or exc      # the spool folder's own reason is the one to tell
    raise UserError(f"cannot spool run {doc['run_id']}: {last}")
