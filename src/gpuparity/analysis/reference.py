"""Third-party reference results (MLPerf Inference) in the store: import, filter, compare per accelerator.

Comparison rules (MLPerf usage notes): closed and open results never compare with each other;
per-accelerator figures are derived, come only from single-node rows with one accelerator type,
and are quoted with their result IDs.
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path

from gpuparity.analysis import mlperf
from gpuparity.errors import UserError

FORMATS = ("mlperf",)


def import_file(store, fmt: str, path: str | Path) -> dict:
    """Parse the whole file, then store every row in one transaction (existing ref_ids are kept)."""
    if fmt not in FORMATS:
        raise UserError(f"unknown reference format '{fmt}'; choose one of {', '.join(FORMATS)}")
    records = mlperf.load_file(path)
    rows = mlperf.parse_rows(records)
    added = store.save_references(rows)
    unmapped = Counter(r["accelerator"] for r in rows if is_unmapped(r))
    return {
        "file": str(path),
        "source": mlperf.SOURCE,
        "rows": len(rows),
        "added": added,
        "already_stored": len(rows) - added,
        "categories": dict(Counter(r["category"] for r in rows)),
        "mapped": sum(1 for r in rows if r["spec_id"]),
        "no_accelerator": sum(1 for r in rows if not r["accelerator"]),
        "mixed": sum(1 for r in rows if r["mixed_accelerators"]),
        "unmapped": dict(unmapped.most_common()),
    }


def is_unmapped(row: dict) -> bool:
    """An accelerator name with no spec row (mixed systems and CPU-only rows are not 'unknown')."""
    return bool(row.get("accelerator")) and not row.get("spec_id") and not row.get("mixed_accelerators")


def resolve_spec(ref: str) -> str:
    from gpuparity.platform.specs import lookup

    spec = lookup(ref)
    if not spec:
        raise UserError(f"no GPU spec matches '{ref}' (see `gpuparity specs`)")
    return spec["id"]


def select(rows: list[dict], *, model: str | None = None, spec: str | None = None,
           scenario: str | None = None, category: str | None = None, unmapped: bool = False,
           round: str | None = None) -> list[dict]:
    """Rows matching the filters; 'llama2-70b' also matches its accuracy variants (-99, -99.9)."""
    spec_id = resolve_spec(spec) if spec else None
    out = []
    for r in rows:
        name = r["model"].lower()
        if model and name != model.lower() and not name.startswith(model.lower() + "-"):
            continue
        if spec_id and r.get("spec_id") != spec_id:
            continue
        if scenario and r["scenario"].lower() != scenario.lower():
            continue
        if category and r["category"] != category.lower():
            continue
        if round and r.get("round") != round.lstrip("v"):
            continue
        if unmapped and not is_unmapped(r):
            continue
        out.append(r)
    return sorted(out, key=lambda r: (r["result_id"], r["model"], r["scenario"]))


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


def aggregate(rows: list[dict], statistic: str = "best") -> float | None:
    """Best (highest) or median per-accelerator throughput of a set of eligible rows."""
    values = [r["per_accelerator"] for r in rows]
    if not values:
        return None
    if statistic == "median":
        return statistics.median(values)
    if statistic == "best":
        return max(values)
    raise UserError(f"unknown statistic '{statistic}' (best | median)")


def describe(row: dict) -> str:
    """One line citing a row: ID, submitter, accelerators, software, per-accelerator figure."""
    sw = ", ".join(f"{k} {v}" for k, v in row.get("versions", {}).items()) or row.get("software") or "-"
    figure = (f"{row['per_accelerator']:,.1f} {row['units']} per accelerator (derived)"
              if row.get("per_accelerator") is not None else f"{row['result']:,.1f} {row['units']}")
    return (f"MLPerf Inference {row.get('round')} {row['result_id']} ({row['category']}) {row['submitter']}: "
            f"{row['model']} {row['scenario']}, {row['nodes']}x{row['accelerators_per_node']} "
            f"{row.get('accelerator_name') or 'CPU'}, {row.get('precision') or '-'}, {sw}: {figure}")
