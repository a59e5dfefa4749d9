"""Stored results as a pandas DataFrame for notebooks: `gpuparity.load(db=..., gpu="mi300x")`.

One row per result with its run's platform columns. Read from the results table (no run
document is parsed); % of peak is recomputed from the value and the run's spec.
"""

from __future__ import annotations

import json

BASE_COLUMNS = [
    "run_id", "started_at", "host", "vendor", "product", "spec_id", "stack", "torch", "workload", "category",
    "dtype", "key", "status", "reason", "value", "unit", "pct_peak", "n_samples",
]
RUN_FILTERS = ("gpu", "stack", "since", "host", "run_ids")


def load(db: str | None = None, **filters):
    """DataFrame of stored results. Filters: gpu, stack, since, host, run_ids (as `gpuparity list`),
    workload, category, status. Params become columns (prefixed 'param_' where a name is taken)."""
    import pandas as pd

    from gpuparity.analysis.normalise import _peak
    from gpuparity.analysis.sides import _check_since
    from gpuparity.errors import UserError
    from gpuparity.results.store import Store, run_filter_sql

    unknown = set(filters) - set(RUN_FILTERS) - {"workload", "category", "status"}
    if unknown:
        raise UserError(f"unknown filter(s) {', '.join(sorted(unknown))}")
    _check_since(filters.get("since"))
    where, args = run_filter_sql(**{k: v for k, v in filters.items() if k in RUN_FILTERS and v})
    with Store(db) as store:
        runs = store.query("SELECT run_id, started_at, host, vendor, product, spec_id, stack, torch FROM runs "
                           + where, args)
        ids = [r[0] for r in runs]
        fps = store.run_fingerprints(ids)
        rows = []
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            clauses = ["run_id IN (" + ",".join("?" * len(chunk)) + ")"]
            extra = list(chunk)
            for col in ("workload", "category", "status"):
                if filters.get(col):
                    clauses.append(f"{col} = ?")
                    extra.append(filters[col])
            rows += store.query("SELECT run_id, workload, category, dtype, key, status, reason, value, unit, params,"
                                " samples FROM results WHERE " + " AND ".join(clauses), extra)
    meta = {r[0]: dict(zip(("run_id", "started_at", "host", "vendor", "product", "spec_id", "stack", "torch"), r,
                           strict=True)) for r in runs}
    records = []
    for run_id, workload, category, dtype, key, status, reason, value, unit, params, samples in rows:
        spec = (fps.get(run_id) or {}).get("spec")
        peak = _peak(spec, unit, dtype)
        rec = {**meta[run_id], "workload": workload, "category": category, "dtype": dtype, "key": key,
               "status": status, "reason": reason, "value": value, "unit": unit,
               "pct_peak": 100.0 * value / peak if value is not None and peak else None,
               "n_samples": len(samples or b"") // 8}
        for name, v in (json.loads(params or "{}")).items():
            if name == "dtype":
                continue
            rec[name if name not in BASE_COLUMNS else f"param_{name}"] = v
        records.append(rec)
    df = pd.DataFrame.from_records(records, columns=None if records else BASE_COLUMNS)
    if records:
        df["started_at"] = pd.to_datetime(df["started_at"], utc=True, format="ISO8601")
        df = df.sort_values(["started_at", "run_id", "workload"], kind="stable").reset_index(drop=True)
    return df
