"""Which rounds the store holds whole, so that a missing row can answer "no".

A round is held whole when the store holds every result MLCommons published for it: for MLPerf
Inference, every result ID of the round's summary (5.1-0001 .. 5.1-0390) and as many result rows as
the summary has; for MLPerf Training, a row for every submitter's results folder of a benchmark. The
published counts ship as data (data/published_rounds.json); a round with no published count here is
never called whole (a sample, an excerpt or an unknown round cannot say "no").

Each import records what the store then holds of every round it touched (gpuparity_meta, name
'reference-import:SOURCE:ROUND'): whole or not, why, and the file it came from; claims read that
record, and the import hints they print are computed from it.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources

PREFIX = "reference-import:"
_ID = re.compile(r"^v?(\d{1,2}\.\d{1,2})-(\d{1,6})$")
_FOLDER = re.compile(r"([^/]+)/(?:results|systems)/([^/]+?)(?:\.json)?(?:/|$)")


@lru_cache(maxsize=1)
def published() -> dict:
    return json.loads(resources.files("gpuparity.evidence").joinpath("data/published_rounds.json").read_text())


def folder_of(row: dict) -> str | None:
    """'Submitter/system' of a training row, from its location in the results tree (or details URL)."""
    m = _FOLDER.search(str(row.get("folder") or row.get("location") or ""))
    return f"{m.group(1)}/{m.group(2)}" if m else None


def assess(rows: list[dict], source: str, rnd: str) -> dict:
    """What the rows (the store's, of one source) hold of a round: {whole, basis, held, benchmarks}."""
    from gpuparity.evidence.mlperf_training import SOURCE as TRAINING

    mine = [r for r in rows if r.get("round") == rnd]
    facts = published().get(source, {}).get(rnd)
    if not facts:
        return {"whole": False, "held": len(mine),
                "basis": f"{len(mine):,} rows; no published count of round {rnd} is known to this version, so the "
                         "store cannot show it holds the round whole"}
    if source == TRAINING:
        benches = {}
        for bench, folders in facts["benchmarks"].items():
            have = {folder_of(r) for r in mine if r.get("model") == bench}
            missing = [f for f in folders if f not in have]
            benches[bench] = {"whole": not missing, "held": len(folders) - len(missing), "published": len(folders)}
        whole = all(b["whole"] for b in benches.values())
        basis = "; ".join(f"{b}: {v['held']} of {v['published']} published results" for b, v in benches.items())
        return {"whole": whole, "held": len(mine), "basis": basis, "benchmarks": benches, "url": facts.get("url")}
    ids = {m.group(2).zfill(4) for r in mine if (m := _ID.match(str(r.get("result_id") or "")))}
    wanted = {f"{i:04d}" for i in range(1, facts["ids"] + 1)}
    whole = wanted <= ids and len(mine) >= facts["results"]
    basis = (f"{len(mine):,} of {facts['results']:,} published results, {len(ids & wanted)} of {facts['ids']} "
             "result IDs")
    return {"whole": whole, "held": len(mine), "basis": basis, "url": facts.get("url")}


def record(store, source: str, rounds: list[str], path: str, rows: list[dict]) -> dict:
    """After an import: what the store now holds (rows: its rows of the source) of each round the import
    touched, written to gpuparity_meta."""
    out = {}
    with store.transaction() as cur:
        for rnd in sorted(set(rounds)):
            rec = {**assess(rows, source, rnd), "source": source, "round": rnd, "file": str(path)[:500],
                   "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            cur.execute("INSERT INTO gpuparity_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE "
                        "SET value = excluded.value", (f"{PREFIX}{source}:{rnd}", json.dumps(rec)))
            out[rnd] = rec
    return out


def records(store) -> dict[tuple[str, str], dict]:
    """{(source, round): record} of every import the store recorded (rows imported by a version before
    these records are there too, without one: not known to be whole)."""
    out = {}
    try:
        found = store.query("SELECT name, value FROM gpuparity_meta WHERE name LIKE ?", (PREFIX + "%",))
    except Exception:                   # a store of an earlier layout has no gpuparity_meta to read
        return out
    for name, value in found:
        try:
            rec = json.loads(value)
        except (TypeError, ValueError, RecursionError):
            continue
        if isinstance(rec, dict) and isinstance(rec.get("whole"), bool):
            _, source, rnd = name.split(":", 2)
            out[(source, rnd)] = rec
    return out


def whole(recs: dict, source: str, rnd: str | None, benchmark: str | None = None) -> dict | None:
    """The record of a round held whole (for training: that benchmark of it), else None."""
    rec = recs.get((source, rnd)) if rnd else None
    if not rec:
        return None
    if benchmark and "benchmarks" in rec:
        bench = rec["benchmarks"].get(benchmark)
        return rec if bench and bench["whole"] else None
    return rec if rec["whole"] else None


HINT_SOURCES = {
    "mlperf-inference": ("gpuparity reference import mlperf summary_results.json",
                         "github.com/mlcommons/inference_results_v{r}"),
    "mlperf-training": ("gpuparity reference import mlperf-training training_results_v{r}/",
                        "a clone of github.com/mlcommons/training_results_v{r}"),
    "inferencex": ("gpuparity reference import inferencex benchmarks.json",
                   "the InferenceX API's /api/v1/benchmarks response"),
}


def import_hint(recs: dict, held_rounds: set, source: str, rnd: str | None) -> str | None:
    """What to import to decide a claim, from what the store holds: nothing when the round is held
    whole; the whole round when only part of it is held; the round when it is absent."""
    command, where = HINT_SOURCES[source]
    if rnd is None:
        if held_rounds:
            return None
        rnd = {"mlperf-inference": "5.1", "mlperf-training": "5.1"}.get(source, "")
    rec = recs.get((source, rnd))
    if rec and rec["whole"]:
        return None
    if rnd in held_rounds:
        return (f"{command.format(r=rnd)}  # the whole round {rnd}, from {where.format(r=rnd)}; the store holds "
                f"part of it ({(rec or {}).get('basis') or 'not recorded as whole'})")
    return f"{command.format(r=rnd)}  # from {where.format(r=rnd)}"
