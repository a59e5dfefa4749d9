"""The run-to-run spread of a product and stack, learned from a store's earlier runs.

A side with one run of each key cannot see how much a second run would move it. The store often
can: earlier runs of the same product (spec id; for a CPU, whose spec id is the generic "cpu", the
product as well) and stack in which some keys were measured in two or more runs. Their run means are fitted with the same run-level model as a side with several runs
(comparison/estimate.run_level_fit, per category): the shared run variance (runs - 1 df) and the
moderated key x run variance (prior df) become the Prior of the one-run side (empirical Bayes:
the earlier runs are the prior; one run adds nothing to it), with the pooled trial-to-trial
variance inside those runs for a side measured in one trial.

Bounded so that it stays cheap on a large store: the HISTORY_RUNS newest runs of that product and
stack (the runs being compared left out), their ok results of the categories needed, the
`results` columns the fit uses (key, category, trial figures, flags), read by run id through the
(run_id, key) primary key. Results flagged unstable or contended are not the machine's usual
state and are left out (a contended run's results all carry the flag, so a busy run neither
inflates nor shrinks the prior), and so are the runs being compared.
"""

from __future__ import annotations

import math
import os

import numpy as np

from gpuparity.comparison.estimate import Prior, run_level_fit

HISTORY_RUNS = 30            # newest earlier runs of one product and stack read for a prior
NOT_USUAL = ("unstable", "contended")
GENERIC_SPECS = ("cpu",)     # spec ids shared by many products (platform/specs.cpu_spec)


def store_for(side, history) -> str | None:
    """The store whose history a side's spread comes from: history None/False: none; a dict:
    {label: url}; "auto": the store the side was read from, else the default store if it exists
    (a file side: the store is never created for this)."""
    if not history:
        return None
    if isinstance(history, dict):
        return history.get(side.label)
    if side.origin:
        return side.origin
    from gpuparity.results.store import default_db, is_postgres

    default = default_db()
    return default if is_postgres(default) or os.path.isfile(default) else None


def platform_of(side) -> tuple[tuple, str] | None:
    """Whose history applies to a side (its newest run): ((runs column, value), ...) that select
    the earlier runs, and their name in words ("h200-sxm/cuda 13.0"); None when it cannot be told.
    A spec id names one product, except a generic one (every CPU's is "cpu": an EPYC and a Xeon
    do not share a run-to-run spread), which is keyed on the product as well."""
    if not side.runs:
        return None
    newest = side.runs[-1]
    spec, product, stack = newest.get("spec_id"), newest.get("product"), newest.get("stack")
    if not stack:
        return None
    if spec in GENERIC_SPECS:
        if not product:
            return None          # an unnamed CPU could be any CPU
        return (("spec_id", spec), ("product", product), ("stack", stack)), f"{product}/{stack}"
    if spec:
        return (("spec_id", spec), ("stack", stack)), f"{spec}/{stack}"
    if product:          # by product only for runs no spec row matched
        return (("product", product), ("stack", stack)), f"{product}/{stack}"
    return None


def history_priors(url: str, platform: tuple, name: str, exclude: set, categories: list[str],
                   limit: int = HISTORY_RUNS, stores=None) -> tuple[dict[str, Prior], str]:
    """Priors per category from the store at `url` (see the module notes) for the runs that
    `platform` selects (platform_of), and what was found in words ("no earlier runs of
    h200-sxm/cuda 13.0 in runs.db" when none applies). stores: a StorePool to read through (its
    connection stays open), else the store is opened here."""
    from contextlib import nullcontext

    from gpuparity.errors import UserError
    from gpuparity.results.store import Store

    where = os.path.basename(url) if not url.startswith(("postgres", "postgresql")) else "the store"
    match = " AND ".join(f"{column} = ?" for column, _ in platform)     # columns from platform_of only
    try:
        with nullcontext(stores.get(url)) if stores is not None else Store(url, connect_timeout=2.0) as store:
            # spec id and stack lead the runs_platform index (the same cost in any store)
            runs = store.query(f"SELECT run_id FROM runs WHERE {match} ORDER BY started_at DESC, run_id DESC LIMIT ?",
                               (*[value for _, value in platform], int(limit + len(exclude))))
            ids = [r[0] for r in runs if r[0] not in exclude][:limit]
            if len(ids) < 2:
                return {}, f"no earlier runs of {name} in {where}"
            marks = ",".join("?" * len(ids))
            cats = ",".join("?" * len(categories))
            rows = store.query(f"SELECT run_id, key, category, trial_values, value, flags FROM results"
                               f" WHERE run_id IN ({marks}) AND status = 'ok' AND category IN ({cats})",
                               [*ids, *categories])
    except UserError as exc:
        return {}, f"history unavailable ({str(exc)[:120]})"
    priors = fit_priors(rows, ids, categories, name)
    if not priors:
        return {}, f"no key measured in two earlier runs of {name} in {where}"
    return priors, f"{len(ids)} earlier runs of {name}"


def fit_priors(rows: list[tuple], run_ids: list[str], categories: list[str], name: str) -> dict[str, Prior]:
    """Priors per category from result rows (run_id, key, category, trial_values, value, flags)."""
    run_index = {r: i for i, r in enumerate(run_ids)}
    cat_index = {c: i for i, c in enumerate(categories)}
    key_index: dict[str, int] = {}
    pk, pr, m, key_cat = [], [], [], []
    ss = np.zeros(len(categories))      # within-run sum of squares of the log trial figures, and its df
    ss_df = np.zeros(len(categories))
    for run_id, key, category, blob, value, flags in rows:
        if flags and any(f in flags for f in NOT_USUAL):
            continue
        values = np.frombuffer(bytes(blob), dtype="<f8") if blob else np.array([value or np.nan], dtype=float)
        values = values[np.isfinite(values) & (values > 0)]
        if not len(values):
            continue
        k = key_index.setdefault(key, len(key_index))
        if k == len(key_cat):
            key_cat.append(cat_index[category])
        logs = np.log(values)
        pk.append(k)
        pr.append(run_index[run_id])
        m.append(float(logs.mean()))
        ss[cat_index[category]] += float(((logs - logs.mean()) ** 2).sum())
        ss_df[cat_index[category]] += len(logs) - 1
    if not pk:
        return {}
    fit = run_level_fit(np.array(pk), np.array(pr), np.array(m), np.array(key_cat, dtype=np.int64),
                        len(categories), len(key_cat), len(run_ids))
    out = {}
    for j, cat in enumerate(categories):
        if fit.runs[j] < 2 or not math.isfinite(fit.v_run[j]):
            continue
        shared, key = float(fit.v_run[j]), float(fit.s0[j])
        d0 = float(fit.d0[j]) if fit.keys[j] >= 2 else math.inf
        spread = math.sqrt(shared + key)
        trial = float(ss[j] / ss_df[j]) if ss_df[j] > 0 else 0.0
        out[cat] = Prior(shared=shared, shared_df=float(fit.df_run[j]), key=key, key_df=d0, source="history",
                         runs=int(fit.runs[j]), trial=trial, trial_df=float(ss_df[j]) if ss_df[j] > 0 else math.inf,
                         text=f"run-to-run {100 * spread:.1f}% from {int(fit.runs[j])} earlier runs of {name}")
    return out
