"""Third-party reference results (MLPerf Inference and Training) in the store: import, read back,
filter, and compare per accelerator.

Which rows compare with which is decided in one place, evidence/rules (division,
availability, precision class, scale, product variants, distinct runs, one round at a time);
per-accelerator inference figures are derived, come only from single-node rows with one
accelerator type, and are quoted with their result IDs. MLPerf's two accuracy targets (-99,
-99.9) are separate benchmarks, so twins never meet in one comparison.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from gpuparity.errors import UserError
from gpuparity.evidence import inferencex, mlperf, mlperf_training
from gpuparity.evidence import rules as evidence_rules

FORMATS = {"mlperf": mlperf.SOURCE, "mlperf-inference": mlperf.SOURCE, "mlperf-training": mlperf_training.SOURCE,
           "inferencex": inferencex.SOURCE}
SOURCES = (mlperf.SOURCE, mlperf_training.SOURCE, inferencex.SOURCE)


# -- import -----------------------------------------------------------------------------------------
def read_input(fmt: str, path: str | Path, *, strict: bool = False, round: str | None = None
               ) -> tuple[str, list[dict], list[dict]]:
    """(source, readable rows, unreadable rows) of an input, before any store is opened: a bad
    format name or input leaves nothing behind."""
    source = FORMATS.get(fmt)
    if source is None:
        raise UserError(f"unknown reference format {mlperf._show(fmt)}; choose one of {', '.join(FORMATS)}")
    if source == mlperf.SOURCE:
        rows, bad = mlperf.parse_rows(mlperf.load_file(path), round=round, strict=strict)
        unreadable = [{**b, "where": mlperf._where(b)} for b in bad]
    elif source == inferencex.SOURCE:
        rows, unreadable = inferencex.read(str(path))
        if strict and unreadable:
            raise UserError(f"{path}: {unreadable[0]['where']}: {unreadable[0]['reason']} (--strict: nothing stored)")
    else:
        rows, unreadable = mlperf_training.read(str(path), round)
        if strict and unreadable:
            raise UserError(f"{path}: {unreadable[0]['where']}: {unreadable[0]['reason']} (--strict: nothing stored)")
    if not rows:
        first = f" (first: {unreadable[0]['where']}: {unreadable[0]['reason']})" if unreadable else ""
        raise UserError(f"{path}: no readable reference rows{first}")
    return source, rows, unreadable


def import_file(store, fmt: str, path: str | Path, *, strict: bool = False, round: str | None = None,
                parsed: tuple | None = None) -> dict:
    """Parse the whole input (or take read_input's `parsed`), then store every readable row in one
    transaction (a failure stores nothing; rows already stored are kept). Unreadable rows are
    listed; strict refuses them all."""
    from gpuparity.evidence import completeness

    source, rows, unreadable = parsed or read_input(fmt, path, strict=strict, round=round)
    added = store.save_references(rows)
    rounds = [r["round"] for r in rows if r.get("round")]
    held = completeness.record(store, source, rounds, str(path), stored_rows(store, source)[0] if rounds else [])
    for r in rows:
        evidence_rules.annotate(r)
    evidence_rules.mark_latency_units(rows)
    if added < len(rows):
        differ = stored_differently(store, rows)
    summary = {
        "file": str(path), "source": source, "rows": len(rows), "added": added,
        "already_stored": len(rows) - added, "unreadable": unreadable,
        "rounds": dict(Counter(r["round"] for r in rows if r.get("round"))),
        # what the store now holds of each round: whole (every published result) or not, and why
        "held": {rnd: {k: rec[k] for k in ("whole", "basis")} for rnd, rec in held.items()},
        "categories": dict(Counter(r["category"] for r in rows)),
        "mapped": sum(1 for r in rows if r["spec_id"]),
        "no_accelerator": sum(1 for r in rows if not r["accelerator"]),
        "mixed": sum(1 for r in rows if r["mixed_accelerators"]),
        "unmapped": dict(Counter(r["accelerator"] for r in rows if is_unmapped(r)).most_common()),
        "availability": dict(Counter(r["status_class"] for r in rows)),
        "variants": dict(Counter(r["variant"] for r in rows if r.get("variant"))),
        "inferred": sum(1 for r in rows if r.get("inferred")),
        "units_flags": dict(Counter(r["units_flag"] for r in rows if r.get("units_flag")).most_common()),
        "version_notes": dict(Counter(n for r in rows for n in r.get("version_notes") or []).most_common()),
        "count_notes": sum(1 for r in rows if r.get("count_note")),
        # The checker's benchmark names the rows are stored under, beside the file's display labels.
        "benchmark_labels": dict(Counter(f"{r['benchmark_label']} -> {r['model']}" for r in rows
                                         if r.get("benchmark_label")).most_common()),
        "named_by_location": sum(1 for r in rows if r.get("named_by") == "Location"),
        # Rows kept as an earlier import stored them, whose figure this import computes otherwise.
        "stored_differently": differ if added < len(rows) else [],
    }
    if source == inferencex.SOURCE:
        summary["dates"] = [min(r["date"] for r in rows), max(r["date"] for r in rows)]
        summary["figure_checks"] = sum(1 for r in rows if r.get("figure_checks"))
    elif source == mlperf.SOURCE:
        summary["twins"] = sum(1 for r in rows if r["twin"]) // 2
        summary["twins_same_result"] = sum(1 for r in rows if r["twin_same_result"]) // 2
        summary["distinct_results"] = len(mlperf.distinct(rows))
    else:
        summary["scores"] = [{k: r[k] for k in ("ref_id", "submitter", "system", "model", "accelerators", "spec_id",
                                                 "time_to_train_min", "runs_valid", "runs_counted",
                                                 "complete")} for r in rows]
    return summary


def stored_differently(store, rows: list[dict]) -> list[str]:
    """ref_ids already stored with another result than this import reads (an older version's score)."""
    by_id, out = {r["ref_id"]: r for r in rows}, []
    ids = list(by_id)
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        sql = f"SELECT ref_id, doc FROM reference_results WHERE ref_id IN ({','.join('?' * len(chunk))})"
        for ref_id, doc in store.query(sql, tuple(chunk)):
            try:
                old = json.loads(doc).get("result")
            except (ValueError, AttributeError, RecursionError):
                old = None
            if old != by_id[ref_id]["result"]:
                out.append(ref_id)
    return sorted(out)


def is_unmapped(row: dict) -> bool:
    """An accelerator name with no spec row (mixed systems and CPU-only rows are not 'unknown')."""
    return bool(row.get("accelerator")) and not row.get("spec_id") and not row.get("mixed_accelerators")


# -- reading back ------------------------------------------------------------------------------------
def stored_rows(store, source: str | None = None) -> tuple[list[dict], int]:
    """(rows, skipped): every stored reference row that reads as one; a row some other version or
    tool wrote in another shape is skipped and counted, so listing never breaks on it."""
    sql = "SELECT doc FROM reference_results" + (" WHERE source = ?" if source else "") + " ORDER BY ref_id"
    rows, skipped = [], 0
    for (doc,) in store.query(sql, (source,) if source else ()):
        try:
            row = json.loads(doc)
            StoredRow.model_validate(row)
        except (ValueError, TypeError, RecursionError, ValidationError):
            skipped += 1
            continue
        row.setdefault("model_family", row["model"])
        row.setdefault("twin", None)
        rows.append(evidence_rules.annotate(row))
    return evidence_rules.mark_latency_units(rows), skipped


IMPORT_HINT = ("import with `gpuparity reference import mlperf summary_results.json` (MLPerf Inference, any round), "
               "`gpuparity reference import mlperf-training training_results_vX.Y/` or "
               "`gpuparity reference import inferencex FILE` (InferenceX API rows)")


def require_rows(store, source: str | None = None) -> tuple[list[dict], int]:
    """stored_rows, or a one-line error when the store holds no reference results at all."""
    rows, skipped = stored_rows(store, source)
    if not rows and not skipped:
        what = f"no {source} results" if source else "no reference results"
        raise UserError(f"{what} in this store: nothing is imported yet; {IMPORT_HINT}")
    return rows, skipped


class StoredRow(BaseModel):
    """What listing, comparing and citing read from a stored row (the rest may vary)."""

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)

    ref_id: str
    source: str
    result_id: str
    round: str | None = None
    submitter: str
    model: str
    scenario: str
    category: str
    units: str
    result: float | int | None
    per_accelerator: float | int | None = None
    nodes: int
    accelerators_per_node: int
    accelerators: int
    spec_id: str | None = None
    accelerator: str | None = None
    accelerator_name: str | None = None
    stack: str | None = None
    precision: str | None = None
    versions: dict = {}
    availability: str | None = None
    inferred: bool = False


def resolve_spec(ref: str) -> str:
    from gpuparity.platform.specs import lookup

    spec = lookup(ref)
    if not spec:
        raise UserError(f"no GPU spec matches {mlperf._show(ref)} (see `gpuparity specs`)")
    return spec["id"]


def accelerator_matcher(ref: str | None, pool_variants: bool = False):
    """A row filter: the spec id when the name maps to a spec as an MLPerf accelerator name would
    ('H200-NVL' does not map to the SXM part; its variants only when pooled), else the text as written."""
    if not ref:
        return lambda row: True
    from gpuparity.platform.specs import all_specs

    spec_id = ref.lower() if ref.lower() in all_specs() else mlperf.map_accelerator(ref)["spec_id"]
    if spec_id:
        rules = evidence_rules.Rules(pool_variants=pool_variants)
        return lambda row: evidence_rules.on_side(row, spec_id, rules)
    low = ref.lower()
    return lambda row: low in str(row.get("accelerator") or "").lower()


def select(rows: list[dict], *, benchmark: str | None = None, accelerator: str | None = None,
           scenario: str | None = None, unmapped: bool = False, round: str | None = None,
           pool_variants: bool = False) -> list[dict]:
    """Rows matching the filters; 'llama2-70b' also matches its accuracy variants (-99, -99.9), and a
    benchmark's display label ('text_to_video') its rows. Division and availability are the
    comparison rules' (evidence_rules.admit)."""
    accel_ok = accelerator_matcher(accelerator, pool_variants)
    want_round = round.lstrip("v") if round else None
    out = []
    for r in rows:
        name, wanted = r["model"].lower(), (benchmark or "").lower()
        if benchmark and name != wanted and not name.startswith(wanted + "-") \
                and str(r.get("benchmark_label") or "").lower() != wanted:
            continue
        if not accel_ok(r):
            continue
        if scenario and r["scenario"].lower() != scenario.lower():
            continue
        if want_round and r.get("round") != want_round:
            continue
        if unmapped and not is_unmapped(r):
            continue
        out.append(r)
    return sorted(out, key=lambda r: (r["source"], r.get("round") or "", r["result_id"], r["model"], r["scenario"]))


# -- comparing two accelerators ------------------------------------------------------------------------
def compare(rows: list[dict], acc_a: str, acc_b: str, statistic: str = "best",
            rules: evidence_rules.Rules | None = None) -> dict:
    """Per round, division, benchmark, scenario, precision class and scale: B / A (the second part
    over the first, as `gpuparity compare` reads it; training: A's time to train over B's), under
    the comparison rules (evidence/rules)."""
    rules = rules or evidence_rules.Rules()
    result = evidence_rules.compare_groups(rows, resolve_spec(acc_a), resolve_spec(acc_b), rules, statistic)
    return evidence_rules.public(result)


# -- citing -----------------------------------------------------------------------------------------
def describe(row: dict) -> str:
    """One line citing a row: round, result ID, submitter, accelerators, software, the figure, its URL."""
    from gpuparity.evidence.citations import run_spread, stack_of, url_of

    sw = stack_of(row)
    parts = f"{row['nodes']}x{row['accelerators_per_node']} {row.get('accelerator_name') or 'CPU'}"
    url = url_of(row)
    link = f" <{url}>" if url else ""
    if row["source"] == inferencex.SOURCE:
        return (f"InferenceX {row.get('date')} {row.get('accelerator_name')} {row.get('system')} ({row['accelerators']} "
                f"GPUs), {row['model']} {row.get('precision')}, isl/osl {row['scenario']}, conc {row.get('conc')}, "
                f"{sw}: {row['result']:,.1f} tok/s per GPU at {row.get('interactivity') or 0:.1f} tok/s/user{link}")
    if row["source"] == mlperf_training.SOURCE:
        runs = (f"olympic mean of {row['runs_counted']} of {row['runs_valid'] + row['runs_dropped']} runs"
                if row.get("runs_counted") is not None else "from the submitter's summary")
        spread = run_spread(row)
        runs += f"; runs {spread[0]:.2f}-{spread[1]:.2f} min" if spread else ""
        scale = f" x scaling {row['scaling_factor']:.4g}" if (row.get("scaling_factor") or 1) != 1 else ""
        done = mlperf_training.completeness(row)
        marks = "".join(f" [{m}]" for m in ([] if done == "complete" else [f"runs: {done}"]) + marks_of(row))
        return (f"MLPerf Training {row.get('round')} {row['result_id']} ({row['category']}) {row['submitter']}: "
                f"{row['model']} on {parts}, {sw}: {row['result']:,.2f} min to train ({runs}{scale}){marks}{link}")
    figure = (f"{row['per_accelerator']:,.1f} {row['units']} per accelerator (derived)"
              if row.get("per_accelerator") is not None else
              f"{row['result']:,.4g} {row['units']} (whole system, lower is better)"
              if evidence_rules.is_latency_row(row) else f"{row['result']:,.1f} {row['units']}")
    marks = "".join(f" [{m}]" for m in marks_of(row))
    return (f"MLPerf Inference {row.get('round')} {row['result_id']} ({row['category']}) {row['submitter']}: "
            f"{row['model']} {row['scenario']}, {parts}, {row.get('precision') or '-'}, {sw}: {figure}{marks}{link}")


def marks_of(row: dict) -> list[str]:
    """What a reader must know about a row beside its figure."""
    marks = []
    if row.get("twin_same_result"):
        marks.append("same result as its accuracy twin")
    if row.get("inferred"):
        marks.append("inferred by MLPerf from another scenario")
    if row.get("status_class") not in (None, "available"):
        marks.append(f"availability: {row.get('availability') or 'not published'}")
    if row.get("variant"):
        marks.append(f"variant {row['variant']}")
    if row.get("also_ids"):
        marks.append("same run as " + ", ".join(row["also_ids"]))
    if row.get("units_flag"):
        marks.append(f"units {row['units_flag']}")
    if row.get("count_note"):
        marks.append(row["count_note"])
    if str(row.get("rocm_line") or "").startswith("preview"):
        marks.append("ROCm preview line (TheRock)")
    marks += row.get("version_notes") or []
    return marks


def citation(row: dict, side: str | None = None) -> dict:
    """The fields a verdict names a row by (evidence/citations: URL, stack, accelerator count first)."""
    from gpuparity.evidence.citations import cite

    return cite(row, side)
