"""One platform across software versions (ROCm 6 -> 7, CUDA 12 -> 13, driver, torch), days or
labels (`gpuparity run --label TEXT`).

Stored runs are grouped by a version label (stack, torch, driver or all three), by the day they
started, or by their run label, and the groups are ordered by their first run. Consecutive groups
are compared by `compare` itself (comparison/compare.compare_sides: the run as the unit, the
symmetric parity band, held verdicts, contention), with the same run-to-run history: a group of
one run takes its spread from the store's other runs of its product and stack (the runs compared
left out), else the default; each step's "spread" says which.

Change-point test: a result changes between two consecutive groups when it survives
Benjamini-Hochberg over the step's results (multiplicity.fdr_verdicts, as the compare headline's
counts): its interval new/old lies wholly outside the parity band [1/(1+t), 1+t]; a category
changes when the CI of its mean ratio does. The counts are those adjusted verdicts. The first ->
last comparison answers claims such as "ROCm 7 is 3.5x ROCm 6" on one's own machine.
"""

from __future__ import annotations

# No module-level import of the comparison core (numpy): the CLI reads BY at start-up.
BY = ("all", "date", "label", "stack", "torch", "driver", "run")
NO_LABEL = "(no label)"


def version_label(run: dict, by: str = "all") -> str:
    if by == "run":                  # every run its own point in time
        return f"{str(run.get('started_at') or '?')[:16].replace('T', ' ')} {run.get('run_id')}"
    if by == "date":
        return str(run.get("started_at") or "?")[:10]
    if by == "label":
        return run.get("label") or NO_LABEL
    parts = {"stack": run.get("stack") or "?", "torch": f"torch {run.get('torch') or '?'}",
             "driver": f"driver {run.get('driver') or '?'}"}
    if by == "all":
        return " | ".join(parts.values())
    return parts[by]


def trend(store, run_ids: list[str], by: str = "all", tolerance: float = 0.05, prices=None) -> dict:
    """Versions, consecutive steps with change points, and the first -> last comparison.

    When every run falls into one group (one stack, one label ...) and there are several runs,
    each run becomes its own group (by "run"), oldest first, and the result's note says so: the
    one group's figures over time."""
    from gpuparity.comparison.frame import run_labels
    from gpuparity.comparison.sides import run_summary, side_from_store

    fps = store.run_fingerprints(run_ids)
    labels = run_labels(store, run_ids) if by == "label" else {}
    runs = []
    for run_id, started_at, host in store.query(
            "SELECT run_id, started_at, host FROM runs WHERE run_id IN (" + ",".join("?" * len(run_ids)) + ")",
            run_ids):
        runs.append({**run_summary(run_id, started_at, host, fps.get(run_id) or {}), "label": labels.get(run_id)})
    runs.sort(key=lambda r: (r["started_at"] or "", r["run_id"]))
    groups: dict[str, list[dict]] = {}
    for r in runs:
        groups.setdefault(version_label(r, by), []).append(r)
    regrouped = None
    if len(groups) == 1 and len(runs) > 1 and by != "run":
        regrouped = next(iter(groups))
        groups = {version_label(r, "run"): [r] for r in runs}
    versions = [{"label": label, "runs": [r["run_id"] for r in rs], "first": rs[0]["started_at"],
                 "last": rs[-1]["started_at"], "hosts": sorted({str(r["host"]) for r in rs})}
                for label, rs in groups.items()]
    sides = [side_from_store(store, v["runs"], v["label"]) for v in versions]
    pool = _Open(store)
    steps = [_step(sides[i - 1], sides[i], tolerance, prices, pool) for i in range(1, len(sides))]
    overall = _step(sides[0], sides[-1], tolerance, prices, pool) if len(sides) > 2 else None
    products = sorted({str(r.get("product")) for r in runs})
    notes = [f"runs span several products ({', '.join(products)}): a trend is meant for one platform"
             ] if len(products) > 1 else []
    if regrouped is not None:
        notes.append(f"every run is in one {by if by != 'all' else 'version'} group ({regrouped}): each run is "
                     "shown on its own, oldest first")
    return {"by": "run" if regrouped is not None else by, "grouped_by": by, "tolerance": tolerance, "versions": versions, "steps": steps, "overall": overall,
            "products": products, "note": "; ".join(notes) or None}


class _Open:
    """The trend's open store, lent as a StorePool to what compare reads through (its history)."""

    def __init__(self, store):
        self.store = store

    def get(self, url=None):
        return self.store


def _step(old, new, tolerance: float, prices, pool) -> dict:
    from gpuparity.comparison.compare import compare_sides

    result = compare_sides(old, new, tolerance, prices, history="auto", stores=pool)
    rows = result["rows"]
    # adjusted over the step's results, as result["counts"] counts them
    changes = [r for r in rows if r["fdr_verdict"] in ("faster", "slower")]
    changes.sort(key=lambda r: -abs(r["ratio"] - 1))
    counts = result["counts"]
    return {
        "from": old.label, "to": new.label, "matched": len(rows),
        "geomean": result["geomean"],
        "counts": {v: counts[v] for v in ("faster", "parity", "slower", "inconclusive")},
        "counts_method": counts["method"],
        "changes": [{k: r[k] for k in ("key", "workload", "params", "dtype", "unit", "a_value", "b_value",
                                       "ratio", "ci_low", "ci_high", "verdict")} for r in changes],
        "only_old": len(result["only_a"]), "only_new": len(result["only_b"]),
        # where a one-run group's run-to-run spread came from ("run-to-run 0.3% from 4 earlier runs of ...")
        "spread": sorted({v["text"] for side in result["run_spread"].values() for v in side.values()
                          if v.get("source") != "runs" and v.get("text")}),
        "contended": result["contended"],
        # the CPU load each group's results were timed beside, where there was any
        "load": {side: s["load"]["text"] for side, s in (("from", result["sides"]["a"]), ("to", result["sides"]["b"]))
                 if (s.get("load") or {}).get("text")},
    }
