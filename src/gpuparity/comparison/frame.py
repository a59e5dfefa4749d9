"""Stored results and comparisons as pandas DataFrames, for notebooks (`gpuparity.load`,
`gpuparity.compare`).

load(): one row per stored result, tidy: the run's platform columns, the result's identity
(workload, category, key, dtype and its parameters as one dict column with their JSON types),
and its figure: value (the one number every view shows: results/figure.py), its 95% CI, unit,
n (samples), trials, flags and % of the spec peak (results/figure.py's rule: NaN where unknown
or where the figure exceeds the peak, which then carries the peak_exceeded flag). wide=True
spreads the parameters into one typed column each (ints stay ints: pandas' nullable Int64 where
some rows lack the parameter).

compare(): the rows of `gpuparity compare` (comparison.compare.compare_sides) as a DataFrame, with
the category geometric means, the headline sentence and the sides in `df.attrs`.
"""

from __future__ import annotations

import json

RUN_COLUMNS = ["run_id", "started_at", "label", "host", "vendor", "product", "spec_id", "stack", "torch"]
RESULT_COLUMNS = ["workload", "category", "key", "dtype", "params", "status", "reason", "value", "ci_low",
                  "ci_high", "unit", "n", "trials", "flags", "pct_peak"]
RUN_FILTERS = ("gpu", "stack", "since", "host", "run_ids")
RESULT_FILTERS = ("workload", "category", "status")
EXTRA = ("ci_low", "ci_high", "trials", "flags", "peak_kind")     # results columns of newer stores
COMPARE_FIRST = ["workload", "category", "params", "dtype", "unit", "a_value", "b_value", "ratio", "ci_low",
                 "ci_high", "verdict", "a_trials", "b_trials", "a_runs", "b_runs", "a_n", "b_n", "flags"]


def run_labels(store, run_ids: list[str]) -> dict[str, str | None]:
    """{run_id: label}: the runs table's label column where the store has one, else the run
    document's "label" (read in SQL, so no document is parsed here)."""
    if "label" in store.columns("runs"):
        expr = "label"
    else:
        expr = "(doc::json ->> 'label')" if store.postgres else "json_extract(doc, '$.label')"
    out = {}
    for chunk in _chunks(list(run_ids), 500):
        marks = ",".join("?" * len(chunk))
        out.update(store.query(f"SELECT run_id, {expr} FROM runs WHERE run_id IN ({marks})", chunk))
    return out


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _check_filters(filters: dict, allowed: tuple) -> None:
    from gpuparity.errors import UserError

    unknown = set(filters) - set(allowed)
    if unknown:
        raise UserError(f"unknown filter(s) {', '.join(sorted(unknown))}; use {', '.join(allowed)}")


def _unit_peak(spec: dict | None, workload: str, params: str | None, peak_kind: str | None, unit: str | None,
               dtype: str | None) -> float | None:
    """The datasheet peak a result is measured against, in its figure's unit (results.figure's rule,
    with compare's peak kinds from comparison.normalise); None where unknown."""
    from gpuparity.comparison.normalise import peak_kind_of
    from gpuparity.results.figure import unit_peak

    return unit_peak(spec, peak_kind_of(workload, unit, dtype, peak_kind, params), unit) if spec else None


def _from_documents(store, run_ids: list[str]) -> dict[tuple[str, str], dict]:
    """{(run_id, key): {ci_low, ci_high, trials, flags, peak_kind}} read from run documents, for
    stores whose results table predates those columns."""
    out = {}
    for run_id in run_ids:
        for r in store.get_run(run_id).get("results") or []:
            metric = r.get("metric") or {}
            trials = metric.get("trials") or len(r.get("trials") or []) or (1 if r.get("status") == "ok" else None)
            out[(run_id, r["key"])] = {
                "ci_low": metric.get("ci_low"), "ci_high": metric.get("ci_high"), "trials": trials,
                "flags": ",".join(r.get("flags") or []), "peak_kind": (r.get("info") or {}).get("peak_kind")}
    return out


# Frame columns figured from other results columns: pct_peak and the peak_exceeded flag compare
# the value, in its unit, with the spec's peak of its kind; figures a store keeps only in the run
# documents are looked for where an ok row has no trials.
_NEEDS = {"pct_peak": ("value", "unit", "peak_kind"), "flags": ("value", "unit", "peak_kind", "flags"),
          "n": ("n",), "samples": ("n",)}
_FROM_DOCS = {"ci_low", "ci_high", "trials", "flags", "pct_peak"}


def result_fields(want: set[str], stored: set[str]) -> list[str]:
    """The results columns to SELECT for the frame columns in want: the identity the rows are
    sorted by (run_id, workload, category, dtype, key, params) first, then what the asked-for
    columns show or are figured from, the newer-store columns (EXTRA) last and only where the
    store has them. 'n' is read as the samples blob's length / 8 (the blob itself for samples)."""
    need = set(want)
    for c in want:
        need.update(_NEEDS.get(c, ()))
    if want & _FROM_DOCS:
        need.update(("status", "trials"))
    fields = ["run_id", "workload", "category", "dtype", "key", "params"]
    fields += [c for c in ("status", "reason", "value", "unit", "n") if c in need]
    return fields + [c for c in EXTRA if c in need and c in stored]


def load(db: str | None = None, *, wide: bool = False, samples: bool = False, columns: list[str] | None = None,
         **filters):
    """DataFrame of stored results, one row per result (see the module notes).

    Filters: gpu, stack, since, host, run_ids (as `gpuparity list`), label, workload, category,
    status: all applied in SQL. columns: only these of the frame's columns (the rest are neither
    read nor built). wide: one column per parameter instead of the `params` dict. samples: add
    each result's raw throughput samples as a list column."""
    import pandas as pd

    from gpuparity.comparison.sides import _check_since
    from gpuparity.results.figure import PEAK_EXCEEDED, pct_of_peak
    from gpuparity.results.store import Store
    from gpuparity.results.store_filters import run_filter_sql
    from gpuparity.results.store_rows import decode_samples

    _check_filters(filters, RUN_FILTERS + RESULT_FILTERS + ("label",))
    _check_since(filters.get("since"))
    names = RUN_COLUMNS + RESULT_COLUMNS + (["samples"] if samples else [])
    if columns is not None:
        unknown = [c for c in columns if c not in names]
        if unknown or isinstance(columns, str):
            from gpuparity.errors import UserError

            raise UserError(f"unknown column(s) {', '.join(map(str, unknown or [columns]))}; use {', '.join(names)}")
        names = [c for c in names if c in columns]
    want = set(names) | ({"params"} if wide else set())
    where, args = run_filter_sql(**{k: v for k, v in filters.items() if k in RUN_FILTERS and v})
    with Store(db) as store:
        if "label" in store.columns("runs"):
            label = "label"
        else:
            label = "(doc::json ->> 'label')" if store.postgres else "json_extract(doc, '$.label')"
        if filters.get("label") is not None:
            where, args = (where + " AND " if where else "WHERE ") + f"{label} = ?", [*args, filters["label"]]
        run_cols = ["run_id"] + [c for c in RUN_COLUMNS[1:] if c in want]
        runs = store.query(f"SELECT {', '.join(label if c == 'label' else c for c in run_cols)} FROM runs {where} "
                           "ORDER BY started_at, run_id", args)
        ids = [r[0] for r in runs]
        # fingerprints (the spec) for % of peak and the peak_exceeded flag
        fps = store.run_fingerprints(ids) if want & {"pct_peak", "flags"} else {}
        fields = result_fields(want, store.columns("results"))
        blobs = "samples" in want          # else n is the blob's length, read without the blob
        n_expr = "samples" if blobs else "LENGTH(samples) / 8"
        select = "SELECT " + ", ".join(n_expr if f == "n" else f for f in fields) + " FROM results WHERE "
        rows = []
        for chunk in _chunks(ids, 500):
            clauses = ["run_id IN (" + ",".join("?" * len(chunk)) + ")"]
            values = list(chunk)
            for col in RESULT_FILTERS:
                if filters.get(col):
                    clauses.append(f"{col} = ?")
                    values.append(filters[col])
            rows += store.query(select + " AND ".join(clauses), values)
        at = {f: i for i, f in enumerate(fields)}
        # A store written before the trial columns existed (or upgraded since: NULL there) keeps
        # those figures only in the run documents: read the documents of such runs.
        tcol = at.get("trials")
        old = sorted({r[0] for r in rows if r[at["status"]] == "ok" and (tcol is None or r[tcol] is None)}) \
            if want & _FROM_DOCS else []
        docs = _from_documents(store, old)
    order = {r[0]: i for i, r in enumerate(runs)}
    meta = {r[0]: r for r in runs}
    # Results of one key repeat in every run: parse each parameter text once, not once a row.
    parsed: dict[str, tuple[dict, tuple]] = {}

    def params_of(text):
        if text not in parsed:
            p = {k: v for k, v in json.loads(text or "{}").items() if k != "dtype"}
            parsed[text] = (p, _param_order(p))
        return parsed[text]

    rows.sort(key=lambda r: (order[r[0]], r[2] or "", r[1], r[3] or "", params_of(r[5])[1], r[4]))
    spec_tokens = {i: json.dumps((fp or {}).get("spec"), sort_keys=True) for i, fp in fps.items()}
    peaks: dict[tuple, float | None] = {}
    cols: dict[str, list] = {c: [] for c in names}
    run_fields = [(c, i) for i, c in enumerate(run_cols) if c in cols]
    plain = [(c, at[c]) for c in ("workload", "category", "key", "dtype", "status", "reason", "value", "unit")
             if c in cols]
    extra = [c for c in EXTRA if c in at]
    first_extra = at[extra[0]] if extra else len(fields)
    i_value, i_unit, i_n = at.get("value"), at.get("unit"), at.get("n")
    for row in rows:
        run_id, workload, category, dtype, key, params = row[:6]
        value = row[i_value] if i_value is not None else None
        unit = row[i_unit] if i_unit is not None else None
        blob = row[i_n] if i_n is not None else None
        run = meta[run_id]
        more = dict(zip(extra, row[first_extra:], strict=True))
        if docs:
            more = {**docs.get((run_id, key), {}), **{k: v for k, v in more.items() if v is not None}}
        for c, i in run_fields:
            cols[c].append(run[i])
        for c, i in plain:
            cols[c].append(row[i])
        if "params" in cols:
            cols["params"].append(dict(params_of(params)[0]))
        if "ci_low" in cols:
            cols["ci_low"].append(more.get("ci_low"))
        if "ci_high" in cols:
            cols["ci_high"].append(more.get("ci_high"))
        if "n" in cols:
            cols["n"].append(len(blob or b"") // 8 if blobs else blob or 0)
        if "trials" in cols:
            cols["trials"].append(more.get("trials"))
        pct, exceeded = None, False
        if fps:
            pk = (spec_tokens.get(run_id), workload, params, more.get("peak_kind"), unit, dtype)
            if pk not in peaks:      # the peak that result is measured against, once per kind of result
                peaks[pk] = _unit_peak((fps.get(run_id) or {}).get("spec"), workload, params, pk[3], unit, dtype)
            if peaks[pk] and isinstance(value, (int, float)):
                pct, exceeded = pct_of_peak(value, peaks[pk])
        if "flags" in cols:
            flags = tuple(f for f in (more.get("flags") or "").split(",") if f)
            cols["flags"].append(flags + (PEAK_EXCEEDED,) if exceeded and PEAK_EXCEEDED not in flags else flags)
        if "pct_peak" in cols:
            cols["pct_peak"].append(pct)
        if "samples" in cols:
            cols["samples"].append(decode_samples(blob))
    df = pd.DataFrame(cols, columns=names)
    if "started_at" in df:
        df["started_at"] = pd.to_datetime(df["started_at"], utc=True, format="ISO8601")
    for col in ("n", "trials"):
        if col in df:
            df[col] = df[col].astype("Int64")
    for col in ("value", "ci_low", "ci_high", "pct_peak"):
        if col in df:
            df[col] = df[col].astype("float64")
    return widen(df) if wide and "params" in df else df


def _param_order(params: dict) -> tuple:
    """Parameters as a sort key whatever their types: numbers by value (m=256 before m=1024)."""
    return tuple((k, (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))) for k, v in sorted(params.items()))


def typed_column(values: list):
    """A column keeping the parameters' JSON types: ints as (nullable) ints, floats, bools, text."""
    import pandas as pd

    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pd.array(values, dtype="boolean")
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pd.array(values, dtype="Int64")
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pd.array([float(v) if v is not None else None for v in values], dtype="Float64")
    return pd.array([None if v is None else v if isinstance(v, str) else json.dumps(v) for v in values],
                    dtype="object")


def widen(df):
    """The `params` dict column spread into one typed column per parameter, placed where `params`
    was; a parameter named like an existing column becomes param_NAME."""
    import pandas as pd

    dicts = df["params"].tolist()
    names = list(dict.fromkeys(k for d in dicts for k in (d or {})))
    taken = set(df.columns)
    cols = {}
    for name in names:
        cols[name if name not in taken else f"param_{name}"] = typed_column([(d or {}).get(name) for d in dicts])
    at = df.columns.get_loc("params")
    left, right = df.iloc[:, :at], df.iloc[:, at + 1:]
    return pd.concat([left, pd.DataFrame(cols, index=df.index), right], axis=1)


def _side(spec, label: str, db: str | None, filters: dict):
    """A side from what a notebook holds: a CLI-style token (run id, file, store, 'gpu=..'),
    run documents (one or a list), or a dict of filters (gpu=, stack=, host=, since=)."""
    from gpuparity.comparison.sides import load_side, side_from_runs
    from gpuparity.errors import UserError

    if isinstance(spec, str) or spec is None:
        return load_side(spec, label, db, **filters)
    if isinstance(spec, dict) and "results" in spec and "run_id" in spec:
        return side_from_runs([spec], label)
    if isinstance(spec, dict):
        _check_filters(spec, ("gpu", "stack", "host", "since"))
        return load_side(None, label, db, **{**filters, **spec})
    if isinstance(spec, (list, tuple)) and all(isinstance(d, dict) for d in spec):
        return side_from_runs(list(spec), label)
    raise UserError(f"side {label}: give a run id, a file, a filter such as 'gpu=mi300x', a dict of filters"
                    f" or run documents, not {type(spec).__name__}")


def compare(a, b, db: str | None = None, *, tolerance: float = 0.05, wide: bool = False, prices=None,
            history: bool = True, run_spread: float | None = None, cross_config: bool = False, **filters):
    """DataFrame of the comparison rows B / A (one per result key present on both sides).

    a, b: as `gpuparity compare` takes them (run id, exported file, store file, 'gpu=..,stack=..'),
    a dict of such filters, or run documents. filters (gpu, stack, host, since) apply to both
    sides. history: learn a one-run side's run-to-run spread from its store's earlier runs (as
    `compare` does); run_spread: a one-run side's run-to-run spread as a fraction, taken as known
    (`compare --run-spread`). df.attrs holds "headline", "geomean" (per category), "serving", "sides",
    "only_a", "only_b" (counts), "notes", "counts" (Benjamini-Hochberg), "contended" (sides whose
    machine was busy), "scope" and "run_spread"; each side's "load" (the CPU load its results were
    timed beside; per row a_load / b_load) and the spread a one-run side assumed (a_spread / b_spread).
    cross_config: serving verdicts between servers configured differently (`compare --cross-config`);
    df.attrs["servers"] holds the servers' identities, accuracy and what held their verdicts."""
    import pandas as pd

    from gpuparity.comparison.compare import compare_sides
    from gpuparity.comparison.headline import headline

    _check_filters(filters, ("gpu", "stack", "host", "since"))
    result = compare_sides(_side(a, "A", db, filters), _side(b, "B", db, filters), tolerance, prices,
                           floor=run_spread, history="auto" if history else None, cross_config=cross_config)
    rows = result["rows"]
    df = pd.DataFrame.from_records(rows) if rows else pd.DataFrame(columns=COMPARE_FIRST)
    if rows:        # dtype has its own column, as in load()
        df["params"] = [{k: v for k, v in (p or {}).items() if k != "dtype"} for p in df["params"]]
    first = [c for c in COMPARE_FIRST if c in df.columns]
    rest = [c for c in df.columns if c not in first and c != "tolerance" and df[c].notna().any()]
    df = df[first + rest]
    for col in ("a_trials", "b_trials", "a_runs", "b_runs", "a_n", "b_n"):
        if col in df.columns:
            df[col] = df[col].astype("Int64")
    for col in ("a_value", "b_value", "ratio", "ci_low", "ci_high"):
        if col in df.columns:
            df[col] = df[col].astype("float64")
    if wide and len(df):
        df = widen(df)
    df.attrs = {
        "headline": headline(result)["text"], "geomean": result["geomean"], "serving": result["serving"],
        "sides": {k: {f: s.get(f) for f in ("label", "products", "spec_ids", "stacks", "run_ids", "trials",
                                            "contended", "load", "run_spread")}
                  for k, s in result["sides"].items()},
        "counts": result["counts"], "contended": result["contended"], "scope": result["scope"],
        "run_spread": result["run_spread"],
        "only_a": len(result["only_a"]), "only_b": len(result["only_b"]),
        "not_compared": len(result["not_compared"]), "notes": list(result.get("notes") or []),
        "tolerance": tolerance, "servers": result.get("servers"),
    }
    return df
