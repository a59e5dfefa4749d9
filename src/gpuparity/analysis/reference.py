"""Third-party reference results (MLPerf Inference and Training) in the store: import, read back,
filter, and compare per accelerator.

Comparison rules (MLPerf usage notes): closed and open results never compare with each other,
nor results of different rounds; per-accelerator inference figures are derived, come only from
single-node rows with one accelerator type, and are quoted with their result IDs; training
times compare at equal accelerator counts. MLPerf's two accuracy targets (-99, -99.9) are
separate benchmarks, so twins never meet in one comparison.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from gpuparity.analysis import mlperf, mlperf_training
from gpuparity.errors import UserError

FORMATS = {"mlperf": mlperf.SOURCE, "mlperf-inference": mlperf.SOURCE, "mlperf-training": mlperf_training.SOURCE}
SOURCES = (mlperf.SOURCE, mlperf_training.SOURCE)


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
    source, rows, unreadable = parsed or read_input(fmt, path, strict=strict, round=round)
    added = store.save_references(rows)
    summary = {
        "file": str(path), "source": source, "rows": len(rows), "added": added,
        "already_stored": len(rows) - added, "unreadable": unreadable,
        "rounds": dict(Counter(r["round"] for r in rows)),
        "categories": dict(Counter(r["category"] for r in rows)),
        "mapped": sum(1 for r in rows if r["spec_id"]),
        "no_accelerator": sum(1 for r in rows if not r["accelerator"]),
        "mixed": sum(1 for r in rows if r["mixed_accelerators"]),
        "unmapped": dict(Counter(r["accelerator"] for r in rows if is_unmapped(r)).most_common()),
    }
    if source == mlperf.SOURCE:
        summary["twins"] = sum(1 for r in rows if r["twin"]) // 2
        summary["twins_same_result"] = sum(1 for r in rows if r["twin_same_result"]) // 2
        summary["distinct_results"] = len(mlperf.distinct(rows))
    else:
        summary["scores"] = [{k: r[k] for k in ("ref_id", "submitter", "system", "model", "accelerators", "spec_id",
                                                 "time_to_train_min", "runs_valid", "runs_counted")} for r in rows]
    return summary


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
        rows.append(row)
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


def resolve_spec(ref: str) -> str:
    from gpuparity.platform.specs import lookup

    spec = lookup(ref)
    if not spec:
        raise UserError(f"no GPU spec matches {mlperf._show(ref)} (see `gpuparity specs`)")
    return spec["id"]


def accelerator_matcher(ref: str | None):
    """A row filter: the spec id when the name maps to a spec as an MLPerf accelerator name would
    ('H200-NVL' does not map to the SXM part), else the text as written."""
    if not ref:
        return lambda row: True
    from gpuparity.platform.specs import all_specs

    spec_id = ref.lower() if ref.lower() in all_specs() else mlperf.map_accelerator(ref)["spec_id"]
    if spec_id:
        return lambda row: row.get("spec_id") == spec_id
    low = ref.lower()
    return lambda row: low in str(row.get("accelerator") or "").lower()


def select(rows: list[dict], *, benchmark: str | None = None, accelerator: str | None = None,
           scenario: str | None = None, division: str | None = None, unmapped: bool = False,
           round: str | None = None) -> list[dict]:
    """Rows matching the filters; 'llama2-70b' also matches its accuracy variants (-99, -99.9)."""
    accel_ok = accelerator_matcher(accelerator)
    want_round = round.lstrip("v") if round else None
    out = []
    for r in rows:
        name = r["model"].lower()
        if benchmark and name != benchmark.lower() and not name.startswith(benchmark.lower() + "-"):
            continue
        if not accel_ok(r):
            continue
        if scenario and r["scenario"].lower() != scenario.lower():
            continue
        if division and r["category"] != division.lower():
            continue
        if want_round and r.get("round") != want_round:
            continue
        if unmapped and not is_unmapped(r):
            continue
        out.append(r)
    return sorted(out, key=lambda r: (r["source"], r.get("round") or "", r["result_id"], r["model"], r["scenario"]))


def per_gpu_rows(rows: list[dict], spec_id: str, model: str, scenario: str, category: str,
                 precision: str | None = None, round: str | None = None) -> list[dict]:
    """Rows fit for a per-accelerator aggregate: one spec, exact model and scenario, one division."""
    return [
        r for r in rows
        if r.get("per_gpu_eligible") and r.get("spec_id") == spec_id and r["model"] == model
        and r["scenario"].lower() == scenario.lower() and r["category"] == category
        and (precision is None or (r.get("precision") or "") == precision)
        and (round is None or r.get("round") == round.lstrip("v"))
    ]


def aggregate(rows: list[dict], statistic: str = "best", field: str = "per_accelerator",
              lower_is_better: bool = False) -> float | None:
    """Best or median of a field over rows: best is the highest, or the lowest for times."""
    values = [r[field] for r in rows]
    if not values:
        return None
    if statistic == "median":
        return statistics.median(values)
    if statistic == "best":
        return min(values) if lower_is_better else max(values)
    raise UserError(f"unknown statistic {mlperf._show(statistic)} (best | median)")


def best_row(rows: list[dict], field: str = "per_accelerator", lower_is_better: bool = False) -> dict:
    return (min if lower_is_better else max)(rows, key=lambda r: r[field])


# -- comparing two accelerators ------------------------------------------------------------------------
def compare(rows: list[dict], acc_a: str, acc_b: str, statistic: str = "best") -> dict:
    """Per round, division, benchmark and scenario: A / B per-accelerator throughput (inference) or
    B / A time to train at equal accelerator counts (training); both read as 'A is x times B'."""
    ids = {"a": resolve_spec(acc_a), "b": resolve_spec(acc_b)}
    groups: dict[tuple, dict[str, list]] = {}
    for r in rows:
        side = next((s for s, i in ids.items() if r.get("spec_id") == i), None)
        training = r["source"] == mlperf_training.SOURCE
        if side is None or (not training and not r.get("per_gpu_eligible")) or r.get("result") is None:
            continue
        key = (r["source"], r.get("round") or "", r["category"], r["model"], r["scenario"],
               r["accelerators"] if training else None)
        groups.setdefault(key, {"a": [], "b": []})[side].append(r)
    out, only = [], Counter()
    for key in sorted(groups, key=lambda k: tuple("" if x is None else str(x) for x in k)):
        sides = groups[key]
        if not (sides["a"] and sides["b"]):
            only["a" if sides["a"] else "b"] += 1
            continue
        source, rnd, division, model, scenario, accels = key
        training = source == mlperf_training.SOURCE
        field = "time_to_train_min" if training else "per_accelerator"
        values = {s: aggregate(sides[s], statistic, field, training) for s in "ab"}
        ratio = values["b"] / values["a"] if training else values["a"] / values["b"]
        best = {s: best_row(sides[s], field, training) for s in "ab"}
        out.append({
            "source": source, "round": rnd, "division": division, "benchmark": model, "scenario": scenario,
            "accelerators": accels, "statistic": statistic, "ratio": ratio,
            "metric": "time to train, B / A (minutes)" if training else "per-accelerator throughput, A / B (derived)",
            "units": "minutes" if training else sides["a"][0]["units"],
            **{s: {"spec_id": ids[s], "value": values[s], "rows": len(sides[s]),
                   "best": best[s]["result_id"], "submitter": best[s]["submitter"]} for s in "ab"},
        })
    return {"a": ids["a"], "b": ids["b"], "statistic": statistic, "groups": out,
            "only_a": only["a"], "only_b": only["b"]}


# -- citing -----------------------------------------------------------------------------------------
def describe(row: dict) -> str:
    """One line citing a row: round, result ID, submitter, accelerators, software, the figure."""
    sw = ", ".join(f"{k} {v}" for k, v in (row.get("versions") or {}).items()) or row.get("software") or "-"
    parts = f"{row['nodes']}x{row['accelerators_per_node']} {row.get('accelerator_name') or 'CPU'}"
    if row["source"] == mlperf_training.SOURCE:
        runs = (f"olympic mean of {row['runs_counted']} of {row['runs_valid'] + row['runs_dropped']} runs"
                if row.get("runs_counted") is not None else "from the submitter's summary")
        scale = f" x scaling {row['scaling_factor']:.4g}" if (row.get("scaling_factor") or 1) != 1 else ""
        return (f"MLPerf Training {row.get('round')} {row['result_id']} ({row['category']}) {row['submitter']}: "
                f"{row['model']} on {parts}, {sw}: {row['result']:,.2f} min to train ({runs}{scale})")
    figure = (f"{row['per_accelerator']:,.1f} {row['units']} per accelerator (derived)"
              if row.get("per_accelerator") is not None else f"{row['result']:,.1f} {row['units']}")
    twin = " [same result as its accuracy twin]" if row.get("twin_same_result") else ""
    return (f"MLPerf Inference {row.get('round')} {row['result_id']} ({row['category']}) {row['submitter']}: "
            f"{row['model']} {row['scenario']}, {parts}, {row.get('precision') or '-'}, {sw}: {figure}{twin}")


def citation(row: dict, side: str | None = None) -> dict:
    """The fields a verdict names a row by, the most telling first (a report shows the first few)."""
    training = row["source"] == mlperf_training.SOURCE
    out = {"side": side} if side else {}
    out.update({k: row.get(k) for k in ("source", "round", "result_id", "submitter", "model", "scenario")})
    out["value"] = row.get("time_to_train_min") if training else row.get("per_accelerator")
    out["units"] = "minutes to train" if training else f"{row.get('units')} per accelerator (derived)"
    out.update({k: row.get(k) for k in ("system", "accelerators", "spec_id", "ref_id")})
    return out
