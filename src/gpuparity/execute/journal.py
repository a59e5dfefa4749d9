"""The run journal: every trial's result is appended (and flushed to disk) as it finishes, so a
process that dies mid-run (a GPU memory fault aborting the process, a segfault in a kernel
library, the OOM killer, SIGKILL) keeps everything measured before it.

A journal is a JSON-lines file in <spool>/journal/<run_id>.jsonl, readable only by its owner:
  {"type": "header", "doc": <run document without results>, "db": <store url>, "pid": ..}
  {"type": "start", "case": i, "trial": t, "what": "gemm m=.. bf16"}
  {"type": "trial", "case": i, "trial": t, "result": {..}}
  {"type": "end", "status": "complete" | "interrupted", "by": "SIGINT" | "SIGTERM" | null}
The file is created (with its header) only when the first case starts: a run stopped before that
leaves nothing to recover. The writer holds an exclusive lock on the file for its whole life. A
journal whose lock can be taken belongs to a process that is gone: `recover` folds its trials into
results (per case, as the run would have) and stores it (or spools it) with its real state: the
status its "end" record gives (the run ended but was not saved), else "crashed" with what was in
flight; a journal without a single case started is removed. A run that ends normally removes its
own journal after the save.
"""

from __future__ import annotations

import fcntl
import json
import os
from typing import Any

from gpuparity.errors import UserError
from gpuparity.results.spool import private_folder, save_or_spool, spool_dir
from gpuparity.results.store_connect import creating
from gpuparity.results.store_url import without_password


def journal_dir() -> str:
    return os.path.join(spool_dir(), "journal")


class JournalUnwritable(UserError):
    """The journal could not be written (a full disk, a quota, an I/O error): the run stops and
    saves what finished (execute/runner.py), its message one line."""


class Journal:
    """Append-only record of one run in progress (see the module notes)."""

    def __init__(self, doc: dict, db: str | None):
        self.doc, self.db = doc, db
        self.path = os.path.join(journal_dir(), f"{doc['run_id']}.jsonl")
        self._fh = None             # opened by the first start(): nothing measured, nothing to keep
        self.failed: str | None = None      # why a write failed: nothing more is written

    def _open(self) -> list[dict]:
        private_folder(spool_dir())
        private_folder(journal_dir())
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._fh = os.fdopen(fd, "ab", buffering=0)      # unbuffered: a failed write is known at once
        fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        header = {k: v for k, v in self.doc.items() if k != "results"}
        # the store without its password: recovery takes it from the command that recovers, or libpq
        db = without_password(self.db) if self.db else self.db
        return [{"type": "header", "doc": header, "db": db, "pid": os.getpid()}]

    def _write(self, record: dict) -> None:
        """Append records whole (one write, then fsync) or not at all: a write that fails part-way
        (a full disk) is cut off again, and JournalUnwritable says why in one line."""
        if self.failed:
            raise JournalUnwritable(self.failed)
        good = None
        try:
            records = self._open() if self._fh is None else []
            fd = self._fh.fileno()
            good = os.fstat(fd).st_size
            data = memoryview("".join(json.dumps(r, default=str) + "\n" for r in [*records, record]).encode())
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        except OSError as exc:
            if good is not None:
                try:
                    os.ftruncate(self._fh.fileno(), good)     # no torn record; frees what it took
                except OSError:
                    pass
            self.failed = (f"the run's journal {self.path} could not be written ({exc.strerror or exc}): the run "
                           "stopped; what finished before is kept")
            raise JournalUnwritable(self.failed) from None

    def start(self, case: int, trial: int, what: str) -> None:
        self._write({"type": "start", "case": case, "trial": trial, "what": what})

    def trial(self, case: int, trial: int, result: dict) -> None:
        self._write({"type": "trial", "case": case, "trial": trial, "result": result})

    def end(self, status: str, by: str | None = None) -> None:
        """The run has stopped measuring (complete or interrupted); what follows is its save. A
        journal that could not be written stays as it is (its trials recover as a crashed run)."""
        if self._fh is not None and not self.failed:
            try:
                self._write({"type": "end", "status": status, "by": by})
            except JournalUnwritable:
                pass                # the save that follows keeps the run; else the journal has its trials

    def close(self, remove: bool) -> None:
        """Release the journal; `remove` once the run is stored or spooled."""
        if self._fh is None or self._fh.closed:
            return
        if remove:
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass
        self._fh.close()


def read(path: str) -> tuple[dict | None, list[dict]]:
    """(header, records) of a journal; a torn last line (a death mid-write) is ignored."""
    header, records = None, []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(rec, dict):
                continue
            if rec.get("type") == "header" and header is None:
                header = rec
            elif rec.get("type") in ("start", "trial", "end"):
                records.append(rec)
    return header, records


def rebuild(header: dict, records: list[dict]) -> dict:
    """The run document a dead run would have stored: its finished cases, merged per case."""
    from gpuparity.results.schema import now_iso
    from gpuparity.workloads import base

    doc: dict[str, Any] = dict(header["doc"])
    trials: dict[int, list[tuple[int, dict]]] = {}
    started, finished, end = {}, set(), None
    for rec in records:
        key = (rec.get("case"), rec.get("trial"))
        if rec["type"] == "end":
            end = rec
        elif rec["type"] == "start":
            started[key] = rec.get("what")
        elif isinstance(rec.get("result"), dict):
            finished.add(key)
            trials.setdefault(rec["case"], []).append((rec["trial"], rec["result"]))
    spec = (doc.get("fingerprint") or {}).get("spec")
    results = []
    for case in sorted(trials, key=lambda c: (not isinstance(c, int), c)):
        ordered = [r for _, r in sorted(trials[case], key=lambda x: x[0])]
        workload = base.registry().get(ordered[0].get("workload"))
        merged = workload.merge_trials(ordered, _Spec(spec)) if workload else base.merge_trials(ordered, spec)
        results.append(merged)
    in_flight = [what for key, what in started.items() if key not in finished]
    from gpuparity.results.schema import finite_json

    doc["results"] = finite_json(results)
    if end is not None and end.get("status") in ("complete", "interrupted"):
        doc["status"] = end["status"]         # it stopped measuring as it should; only the save was lost
        if end.get("by") in ("SIGINT", "SIGTERM"):
            doc["interrupted_by"] = end["by"]
        doc["recovered"] = "the run ended but was not saved; stored from its journal"
    else:
        doc["status"] = "crashed"
        doc["crash"] = {
            "cause": "the run's process died before it finished (killed, out of memory, or a crash in native "
                     "code); recovered from its journal",
            "in_flight": in_flight,
        }
    doc["finished_at"] = doc.get("finished_at") or now_iso()
    return doc


class _Spec:
    """The part of a workload Context that merge_trials reads, for recovery without a device."""

    def __init__(self, spec):
        self.spec = spec


def recover(out=None, only_dead: bool = True, db: str | None = None) -> list[str]:
    """Store (or spool) every journal left by a dead run; returns what became of each. db: the
    store of the command recovering, whose password (if it has one) serves a journal of that
    store (a journal keeps its store without the password). A journal that cannot be read back
    is moved aside (NAME.jsonl.unrecoverable) with a one-line warning: it never stops a command."""
    folder = journal_dir()
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".jsonl"))
    except OSError:
        return []
    outcomes = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            fh = open(path, "a+", encoding="utf-8")
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                if only_dead:
                    continue        # its writer is alive
            try:
                outcome = _recover_one(path, out, db)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # noqa: BLE001 - a damaged journal must not block every later command
                _set_aside(path, exc, out)
                continue
            if outcome is not None:
                outcomes.append(outcome)
        finally:
            fh.close()
    return outcomes


def _recover_one(path: str, out, db: str | None) -> str | None:
    header, records = read(path)
    if header is None or not records:      # no case had started: nothing was measured
        os.remove(path)
        return None
    doc = rebuild(header, records)
    json.dumps(doc, ensure_ascii=False).encode("utf-8")     # text no store takes (a lone surrogate): set aside
    if out is not None:
        out.print(f"[yellow]recovered run {doc['run_id']} from its journal "
                  f"({len(doc['results'])} results; the run's process had died)[/]")
    target = header.get("db")
    if db and target and without_password(db) == target:
        target = db
    try:
        with creating():        # the run's own store: the run was asked to create it
            outcome = save_or_spool(doc, target, out)
    except UserError as exc:    # neither the store nor the spool took it: the journal stays for next time
        if out is not None:
            from rich.markup import escape

            out.print(f"[yellow]warning: run {doc['run_id']} stays in its journal ({escape(str(exc))})[/]")
        return None
    os.remove(path)
    return outcome


def _set_aside(path: str, exc: Exception, out) -> None:
    aside = path + ".unrecoverable"
    try:
        os.replace(path, aside)
    except OSError:
        aside = path
    if out is not None:
        from rich.markup import escape

        from gpuparity.validate import mask_secrets

        reason = mask_secrets(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        out.print(f"[yellow]warning: journal {escape(os.path.basename(path))} could not be recovered "
                  f"({type(exc).__name__}: {escape(reason[:200])}); moved aside to {escape(aside)}[/]",
                  soft_wrap=True)
