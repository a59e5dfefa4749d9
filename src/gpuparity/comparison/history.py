"""The run-to-run spread of a product and stack, learned from a store's earlier runs made on other
occasions.

A side with one run of each key cannot see how much a second run would move it. The store often
can: earlier runs of the same product (spec id; for a CPU, whose spec id is the generic "cpu", the
product as well), stack, driver and torch. Only runs made on other occasions are evidence of
run-to-run spread: an occasion is a (host, boot, day); runs made back to back on one boot of one
day share it and count as one (the newest). Their run means are fitted with the same run-level
model as a side with several runs (comparison/estimate.run_level_fit, per category, limma's
moderation made robust: comparison/moderate.py): the shared run variance (occasions - 1 df),
each key's own key x run variance moderated toward its category (an outlying key keeps its own),
and the category's pooled trial-to-trial variance become the Prior of the one-run side
(empirical Bayes: the earlier runs are the prior; one run adds nothing to it).

History that spans less than the comparison is not used alone: when the run compared is on a
host the history never saw and the history has one host, or on a day it never saw and the
history has one day, its spread says nothing of what differs between hosts (or days), and it is
pooled with the category's default (priors.py, as one more estimate of DEFAULT_DF degrees of
freedom). The words say what the history spans: "run-to-run 2.1% from 6 runs on 3 hosts over 4
days of h200-sxm/cuda 13.0".

Bounded so that it stays cheap on a large store: the HISTORY_RUNS newest occasions of that product
and stack (the runs being compared left out), their ok results of the categories needed, the
`results` columns the fit uses (key, category, trial figures, flags), read by run id through the
(run_id, key) primary key. Results flagged unstable or contended are not the machine's usual
state and are left out (a contended run's results all carry the flag, so a busy run neither
inflates nor shrinks the prior).
"""

from __future__ import annotations

import math
import os

import numpy as np

from gpuparity.comparison.estimate import needs_prior, run_level_fit
from gpuparity.comparison.priors import Prior, default_prior, default_priors

HISTORY_RUNS = 30            # newest earlier occasions of one product and stack read for a prior
CANDIDATES = 4               # runs read per occasion wanted (others may be back to back, or of another driver)
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
    from gpuparity.results.store_url import default_db, is_postgres

    default = default_db()
    return default if is_postgres(default) or os.path.isfile(default) else None


def platform_of(side) -> dict | None:
    """Whose history applies to a side (its newest run): {"match": ((runs column, value), ...)
    selecting the earlier runs, "torch", "driver" (they must match too), "name" in words
    ("h200-sxm/cuda 13.0"), "occasion" of the run compared}; None when it cannot be told. A spec
    id names one product, except a generic one (every CPU's is "cpu": an EPYC and a Xeon do not
    share a run-to-run spread), which is keyed on the product as well."""
    if not side.runs:
        return None
    newest = side.runs[-1]
    spec, product, stack = newest.get("spec_id"), newest.get("product"), newest.get("stack")
    if not stack:
        return None
    if spec in GENERIC_SPECS:
        if not product:
            return None          # an unnamed CPU could be any CPU
        match, name = (("spec_id", spec), ("product", product), ("stack", stack)), f"{product}/{stack}"
    elif spec:
        match, name = (("spec_id", spec), ("stack", stack)), f"{spec}/{stack}"
    elif product:          # by product only for runs no spec row matched
        match, name = (("product", product), ("stack", stack)), f"{product}/{stack}"
    else:
        return None
    return {"match": match, "name": name, "torch": newest.get("torch"), "driver": newest.get("driver"),
            "occasion": occasion(newest.get("host"), newest.get("boot"), newest.get("started_at"))}


def occasion(host, boot, started_at) -> tuple:
    """(host, boot, day) of a run: runs sharing all three were made back to back."""
    return (host or "?", boot or None, str(started_at or "?")[:10])


def _boots(store, run_ids: list[str]) -> dict[str, str | None]:
    """{run_id: boot id} from the run documents (platform/machine.py records it in machine.start)."""
    if not run_ids:
        return {}
    from gpuparity.comparison.sides import machine_fields
    from gpuparity.errors import UserError

    # PostgreSQL's json refuses NaN, which older writers stored: those documents are read here
    odd = "doc ~ '\\mNaN\\M|Infinity'"
    expr = (f"CASE WHEN {odd} THEN NULL ELSE (doc::json -> 'machine' -> 'start' ->> 'boot_id') END, {odd}"
            if store.postgres else "json_extract(doc, '$.machine.start.boot_id'), 0")
    marks = ",".join("?" * len(run_ids))
    try:
        got = store.query(f"SELECT run_id, {expr} FROM runs WHERE run_id IN ({marks})", run_ids)
    except UserError:       # a document SQLite's JSON reader refuses
        got = [(r, None, True) for r in run_ids]
    redo = [r[0] for r in got if r[2]]
    if redo:
        parsed = dict(store.query(f"SELECT run_id, doc FROM runs WHERE run_id IN ({','.join('?' * len(redo))})", redo))
        got = [(r[0], machine_fields(parsed.get(r[0]))[1], False) if r[2] else r for r in got]
    got = [(r[0], r[1]) for r in got]
    return {r: (b if isinstance(b, str) else None) for r, b in got}


def _occasions(store, platform: dict, exclude: set, limit: int) -> tuple[list[str], list[tuple], int]:
    """The newest run of each of the `limit` newest occasions of the platform (same torch and
    driver), their occasions, and how many runs were read (before back-to-back runs merged)."""
    match = " AND ".join(f"{column} = ?" for column, _ in platform["match"])    # columns from platform_of only
    # spec id and stack lead the runs_platform index (the same cost in any store)
    rows = store.query(f"SELECT run_id, host, started_at, torch FROM runs WHERE {match}"
                       " ORDER BY started_at DESC, run_id DESC LIMIT ?",
                       (*[value for _, value in platform["match"]], int(CANDIDATES * limit + len(exclude))))
    rows = [r for r in rows if r[0] not in exclude and (r[3] or None) == (platform["torch"] or None)]
    fps = store.run_fingerprints([r[0] for r in rows]) if rows else {}
    rows = [r for r in rows if ((fps.get(r[0]) or {}).get("driver_version") or None) == (platform["driver"] or None)]
    boots = _boots(store, [r[0] for r in rows])
    ids, seen = [], []
    for run_id, host, started_at, _ in rows:        # newest first: each occasion's newest run
        occ = occasion(host, boots.get(run_id), started_at)
        if occ not in seen:
            seen.append(occ)
            ids.append(run_id)
    return ids[:limit], seen[:limit], len(rows)


def span_words(occasions: list[tuple], runs_read: int) -> str:
    """'6 runs on 3 hosts over 4 days', or '3 occasions on 1 host over 2 days (9 runs: those back
    to back on one boot count as one)'."""
    hosts, days = len({o[0] for o in occasions}), len({o[2] for o in occasions})
    where = f"on {hosts} host{'s' if hosts != 1 else ''} over {days} day{'s' if days != 1 else ''}"
    n = len(occasions)
    if runs_read > n:
        return f"{n} occasion{'s' if n != 1 else ''} {where} ({runs_read} runs: those back to back on one boot count as one)"
    return f"{n} run{'s' if n != 1 else ''} {where}"


def spans_enough(occasions: list[tuple], compared: tuple | None) -> str | None:
    """None when the history spans what separates the run compared from it; else what it lacks
    ("another host", "another day")."""
    if compared is None:
        return None
    hosts, days = {o[0] for o in occasions}, {o[2] for o in occasions}
    if compared[0] not in hosts and len(hosts) < 2:
        return "another host"
    if compared[2] not in days and len(days) < 2:
        return "another day"
    return None


def history_priors(url: str, platform: dict, exclude: set, categories: list[str],
                   limit: int = HISTORY_RUNS, stores=None) -> tuple[dict[str, Prior], str]:
    """Priors per category from the store at `url` (see the module notes) for the runs that
    `platform` selects (platform_of), and what was found in words ("no earlier runs of
    h200-sxm/cuda 13.0 in runs.db" when none applies). stores: a StorePool to read through (its
    connection stays open), else the store is opened here."""
    from contextlib import nullcontext

    from gpuparity.errors import UserError
    from gpuparity.results.store import Store

    name = platform["name"]
    where = os.path.basename(url) if not url.startswith(("postgres", "postgresql")) else "the store"
    try:
        with nullcontext(stores.get(url)) if stores is not None else Store(url, connect_timeout=2.0) as store:
            ids, occasions, read = _occasions(store, platform, exclude, limit)
            if len(ids) < 2:
                return {}, (f"no earlier runs of {name} in {where}" if not read else
                            f"no earlier runs of {name} on another occasion in {where}: {read} run(s), back to back "
                            "on one boot")
            marks = ",".join("?" * len(ids))
            cats = ",".join("?" * len(categories))
            rows = store.query(f"SELECT run_id, key, category, trial_values, value, flags FROM results"
                               f" WHERE run_id IN ({marks}) AND status = 'ok' AND category IN ({cats})",
                               [*ids, *categories])
    except UserError as exc:
        return {}, f"history unavailable ({str(exc)[:120]})"
    # a run whose every result is flagged (contended, unstable) is not the machine's usual state
    usual = {r[0] for r in rows if not (r[5] and any(f in r[5] for f in NOT_USUAL))}
    keep = [i for i, run_id in enumerate(ids) if run_id in usual]
    read -= len(ids) - len(keep)
    ids, occasions = [ids[i] for i in keep], [occasions[i] for i in keep]
    if len(ids) < 2:
        return {}, f"no key measured on two occasions of {name} in {where}"
    span = span_words(occasions, read)
    priors = fit_priors(rows, ids, categories, f"{span} of {name}")
    if not priors:
        return {}, f"no key measured on two occasions of {name} in {where}"
    lacks = spans_enough(occasions, platform.get("occasion"))
    if lacks:
        priors = {cat: pooled_with_default(p, cat, lacks) for cat, p in priors.items()}
    return priors, f"{span} of {name}"


def pooled_with_default(found: Prior, category: str, lacks: str) -> Prior:
    """History that spans less than the comparison, pooled with the category's default: the
    variance-weighted mean of the two estimates (df: history's + the default's)."""
    d = default_prior(category, "")
    dh = found.df if math.isfinite(found.df) else 1e6
    total_h = found.shared + found.key
    pooled = (dh * total_h + d.shared_df * d.shared) / (dh + d.shared_df)
    scale = pooled / total_h if total_h > 0 else 1.0
    df = dh + d.shared_df
    keys = {k: (v * max(scale, 1.0), kd) for k, (v, kd) in found.keys.items()}
    return Prior(found.shared * scale, df, found.key * scale, df, source="history", runs=found.runs,
                 trial=found.trial, trial_df=found.trial_df, keys=keys, ident=found.ident + ":pooled",
                 text=f"run-to-run {100 * math.sqrt(pooled):.1f}%: {found.text.split(' from ', 1)[-1]} spans one "
                      f"{lacks.split(' ', 1)[1]}, the run compared is on {lacks}: pooled with the "
                      f"{100 * math.sqrt(d.shared):g}% default ({d.shared_df:g} df)")


def fit_priors(rows: list[tuple], run_ids: list[str], categories: list[str], name: str) -> dict[str, Prior]:
    """Priors per category from result rows (run_id, key, category, trial_values, value, flags)
    of runs on distinct occasions; each key measured on two or more of them gets its own."""
    run_index = {r: i for i, r in enumerate(run_ids)}
    cat_index = {c: i for i, c in enumerate(categories)}
    rows = [r for r in rows if not (r[5] and any(f in r[5] for f in NOT_USUAL)) and r[2] in cat_index]
    blobs = [bytes(r[3]) if r[3] else np.array([r[4] if r[4] else np.nan], dtype="<f8").tobytes() for r in rows]
    counts = np.fromiter((len(b) // 8 for b in blobs), dtype=np.int64, count=len(blobs))
    flat = np.frombuffer(b"".join(blobs), dtype="<f8") if counts.sum() else np.empty(0)
    row_of = np.repeat(np.arange(len(rows)), counts)
    good = np.isfinite(flat) & (flat > 0)
    flat, row_of = flat[good], row_of[good]
    n = np.bincount(row_of, minlength=len(rows)).astype(float)
    logs = np.log(flat)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(row_of, weights=logs, minlength=len(rows)) / n
    dev2 = np.bincount(row_of, weights=(logs - mean[row_of]) ** 2, minlength=len(rows))
    used = np.nonzero(n > 0)[0]
    if not len(used):
        return {}
    key_index: dict[str, int] = {}
    pk = np.array([key_index.setdefault(rows[i][1], len(key_index)) for i in used.tolist()], dtype=np.int64)
    cat_of_row = np.array([cat_index[rows[i][2]] for i in used.tolist()], dtype=np.int64)
    key_cat = np.zeros(len(key_index), dtype=np.int64)
    key_cat[pk] = cat_of_row
    pr = np.array([run_index[rows[i][0]] for i in used.tolist()], dtype=np.int64)
    m = mean[used]
    ss = np.bincount(cat_of_row, weights=dev2[used], minlength=len(categories))   # within-run, per category
    ss_df = np.bincount(cat_of_row, weights=n[used] - 1, minlength=len(categories))
    fit = run_level_fit(pk, pr, m, key_cat, len(categories), len(key_cat), len(run_ids))
    names = list(key_index)
    cat_of = key_cat
    own = np.isfinite(fit.post) & np.isfinite(fit.post_df) & (fit.post_df > 0)
    out = {}
    for j, cat in enumerate(categories):
        if fit.runs[j] < 2 or not math.isfinite(fit.v_run[j]):
            continue
        shared, key = float(fit.v_run[j]), float(fit.s0[j])
        d0 = float(fit.d0[j]) if fit.keys[j] >= 2 else math.inf
        spread = math.sqrt(shared + key)
        trial = float(ss[j] / ss_df[j]) if ss_df[j] > 0 else 0.0
        mine = np.nonzero(own & (cat_of == j))[0].tolist()
        out[cat] = Prior(shared=shared, shared_df=float(fit.df_run[j]), key=key, key_df=d0, source="history",
                         runs=int(fit.runs[j]), trial=trial, trial_df=float(ss_df[j]) if ss_df[j] > 0 else math.inf,
                         keys={names[i]: (float(fit.post[i]), float(fit.post_df[i])) for i in mine},
                         ident=f"history:{name}:{cat}",
                         text=f"run-to-run {100 * spread:.1f}% from {name}")
    return out


def resolve_priors(a, b, floor: float | None, history, stores=None) -> tuple[dict, dict]:
    """Priors of both sides, with the stores' history where `history` allows; stores: the
    command's StorePool, so a store already open is not opened again."""
    from gpuparity.results.figure import run_spread_env

    exclude = {r["run_id"] for s in (a, b) for r in s.runs}
    cache: dict = {}
    out = []
    for side in (a, b):
        cats = needs_prior(side)
        found, why = {}, "history off" if not history else "no store with earlier runs"
        url = store_for(side, history) if cats and floor is None and run_spread_env() is None else None
        platform = platform_of(side)
        if url and platform:
            ck = (url, repr(sorted(platform.items())), tuple(cats))
            if ck not in cache:
                cache[ck] = history_priors(url, platform, exclude, cats, stores=stores)
            found, why = cache[ck]
        out.append(default_priors(side, floor, found, why))
    return out[0], out[1]
