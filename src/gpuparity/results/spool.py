"""Save a run, or spool it to a JSON file when the store cannot take it (import it later).

A measured run is never lost to the store: a PostgreSQL server that is down or dies before the
save, a refused write (read-only, permissions), a locked or unusable SQLite file, or psycopg
missing all leave the run document in the spool folder ($GPUPARITY_SPOOL, else
<user data dir>/spool; the temp dir if that is not writable), and the user is told the file and
the `gpuparity import` line that stores it. The spooled file is the run document itself, so the
import stores exactly what an uninterrupted save would have stored.
"""

from __future__ import annotations

import json
import os
import re
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
            url = store.url
    except _store_errors() as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        path = spool(doc)
        if out is not None:
            from rich.markup import escape

            out.print(f"[yellow]store did not take the run: {escape(reason)}[/]\n"
                      f"spooled run {doc['run_id']} to {escape(path)}; store it later with: "
                      f"gpuparity import {escape(path)}")
        return path
    if out is not None:
        out.print(f"{'saved' if added else 'already stored'}: run {doc['run_id']} in {redact(url)}")
    return "stored" if added else "exists"


def redact(url: str) -> str:
    """A store URL fit for a log: the password replaced by ***."""
    return re.sub(r"(://[^:/@]+:)[^@/]*@", r"\1***@", url)


def spool(doc: dict) -> str:
    """Write the run document atomically into the spool folder (or the temp dir); returns the path."""
    last: OSError | None = None
    for folder in (spool_dir(), os.path.join(tempfile.gettempdir(), "gpuparity-spool")):
        path = os.path.join(folder, f"{doc['run_id']}.json")
        try:
            os.makedirs(folder, exist_ok=True)
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(doc, fh)
            os.replace(tmp, path)
            return path
        except OSError as exc:
            last = exc
    raise UserError(f"cannot spool run {doc['run_id']}: {last}")
