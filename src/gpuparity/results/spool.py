"""Save a run, or spool it to a JSON file when the store is unreachable (import it later)."""

from __future__ import annotations

import json
import os

from gpuparity.results.store import Store, StoreUnavailable


def spool_dir() -> str:
    from platformdirs import user_data_dir

    return os.environ.get("GPUPARITY_SPOOL") or os.path.join(user_data_dir("gpuparity"), "spool")


def save_or_spool(doc: dict, db: str | None, out=None) -> str:
    """Returns 'stored', 'exists' or the spool file path."""
    try:
        with Store(db) as store:
            added = store.save_run(doc)
        if out is not None:
            out.print(f"{'saved' if added else 'already stored'}: run {doc['run_id']} in {store.url}")
        return "stored" if added else "exists"
    except StoreUnavailable as exc:
        folder = spool_dir()
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{doc['run_id']}.json")
        tmp = path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(doc, fh)
        os.replace(tmp, path)
        if out is not None:
            out.print(f"[yellow]{exc}[/]\nspooled run {doc['run_id']} to {path}; "
                      f"store it later with: gpuparity import {path}")
        return path
