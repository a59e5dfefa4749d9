"""Calibration of the comparison statistics on simulated worlds with a known truth, through the
real estimator (comparison.ratios.compare_core on columnar sides, as the CLI's loaders build them;
the gate through compare_sides and regression_gate, as `compare --fail-if-slower` runs them).

A world: K keys measured on two platforms, R runs x T trials a side. The log figure of key k in
run r, trial t is truth + key level + run effect (shared by every key of the run) + key x run
interaction + trial noise + within-trial error (whose standard error the estimator is given, as
results/figure.py measures it). The run-to-run spread (shared and interaction together: 1%, 3%,
5%) differs from the trial spread (0.5% and 1%) and from the default prior (8%, 2 df). Worlds are
simulated together: each world is its own category, its own runs, so one call computes 500
independent comparisons.

`pytest -s tests/test_calibration.py` prints the figures the README's "Trials and statistics"
quotes; the tests hold the limits of issues 22 and 36 ("Done when"); the second half builds one-box worlds
through a real SQLite store (issue 36).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from test_compare import make_result, make_run

from gpuparity.comparison.compare import compare_runs, compare_sides
from gpuparity.comparison.gate import regression_gate
from gpuparity.comparison.history import fit_priors
from gpuparity.comparison.means import group_means
from gpuparity.comparison.ratios import compare_core
from gpuparity.comparison.sides import MAX_TRIALS, Side, run_summary
from gpuparity.comparison.verdict import VERDICTS
from gpuparity.platform.prices import PriceBook

WORLDS = 500
KEYS = 20
SHARED = 0.7            # share of the run-to-run variance that every key of the run shares
TRIALS = [0.005, 0.01]  # trial-to-trial spread inside a run (issue 22: 0.5-1%)
WITHIN = 0.003          # within-trial standard error of a trial's figure
DESIGNS = [(1, 1), (1, 5), (2, 3), (3, 1), (5, 1)]
SPREADS = [0.01, 0.03, 0.05]
EXACT = [d for d in DESIGNS if d[0] >= 2]   # they measure their own spread: a 97.5% bound is exact there
FASTER, PARITY, SLOWER = (VERDICTS.index(v) for v in ("faster", "parity", "slower"))
FP = {"product": "H200", "spec": {"id": "h200-sxm"}, "backend": "cuda", "cuda_version": "13.0"}


def side(label: str, truth: np.ndarray, runs: int, trials: int, spread: float, trial: float,
         rng: np.random.Generator, levels: np.ndarray, contended: bool = False) -> Side:
    """A side of WORLDS x K keys (truth[w, k]: the log ratio to A), each world its own category
    and its own `runs` runs of `trials` trials with a trial-to-trial spread `trial`."""
    w, k = truth.shape
    rho = spread * math.sqrt(SHARED) * rng.standard_normal((w, 1, runs, 1))
    inter = spread * math.sqrt(1 - SHARED) * rng.standard_normal((w, k, runs, 1))
    noise = trial * rng.standard_normal((w, k, runs, trials)) + WITHIN * rng.standard_normal((w, k, runs, trials))
    logs = (truth + levels)[:, :, None, None] + rho + inter + noise
    key = np.broadcast_to(np.arange(w * k).reshape(w, k, 1, 1), logs.shape)
    run = np.broadcast_to((np.arange(w)[:, None] * runs + np.arange(runs)).reshape(w, 1, runs, 1), logs.shape)
    trial_of = np.broadcast_to(np.arange(trials).reshape(1, 1, 1, trials), logs.shape)
    n_keys = w * k
    meta = [("gemm", f"w{i // k:04d}", "{}", "bf16", "TFLOP/s") for i in range(n_keys)]
    run_docs = [run_summary(f"{label}{r}", f"2026-01-01T00:{r // 60 % 60:02d}:{r % 60:02d}", f"box-{label}", FP)
                for r in range(w * runs)]
    s = Side(label, run_docs, [f"k{i}" for i in range(n_keys)], meta, np.zeros(n_keys, dtype=np.int64),
             np.full(n_keys, runs), np.exp(logs.ravel()), np.full(logs.size, WITHIN), key.ravel().astype(np.int64),
             (run.ravel() * MAX_TRIALS + trial_of.ravel()).astype(np.int64), np.full(n_keys, np.nan),
             [["contended"] if contended else [] for _ in range(n_keys)], [None] * n_keys, {}, {})
    if contended:
        s.contention = {r["run_id"]: {"contended": True, "reasons": ["other processes used 80% of the CPUs"]}
                        for r in run_docs}
    return s


def sides(ratio: float, runs: int, trials: int, spread: float, trial: float, seed: int, keys: int = KEYS,
          worlds: int = WORLDS, contended: bool = False) -> tuple[Side, Side]:
    rng = np.random.default_rng(seed)
    levels = rng.normal(4.0, 1.0, (worlds, keys))          # keys differ in level (TFLOP/s ~ e^4)
    truth = np.full((worlds, keys), math.log(ratio))
    return (side("a", np.zeros_like(truth), runs, trials, spread, trial, rng, levels),
            side("b", truth, runs, trials, spread, trial, rng, levels, contended))


def world(ratio: float, runs: int, trials: int, spread: float, trial: float, seed: int, priors=None, **kw):
    a, b = sides(ratio, runs, trials, spread, trial, seed, **kw)
    core = compare_core(a, b, 0.05, priors=priors(a, b) if priors else None)
    return a, b, core


def rates(ratio: float, runs: int, trials: int, spread: float, trial: float, seed: int, **kw) -> dict:
    """Shares of keys (and of world means) read faster / slower / parity, and how often the 95%
    intervals cover the truth; faster_se: the Monte Carlo standard error of the faster share, over
    worlds (keys of one world share its run effects)."""
    _, _, core = world(ratio, runs, trials, spread, trial, seed, **kw)
    keys, worlds = kw.get("keys", KEYS), kw.get("worlds", WORLDS)
    v = core.verdict
    cover = (core.ci_low <= ratio) & (ratio <= core.ci_high)
    g = group_means(core.est_a, core.est_b, core.ia, core.ib, core.ia // keys, worlds)
    mean_cover = (g["ci_low"] <= ratio) & (ratio <= g["ci_high"])
    lo, hi = 1 / 1.05, 1.05
    per_world = (v == FASTER).reshape(-1, keys).mean(axis=1)
    return {"faster": float((v == FASTER).mean()), "slower": float((v == SLOWER).mean()),
            "faster_se": float(per_world.std(ddof=1) / math.sqrt(len(per_world))),
            "parity": float((v == PARITY).mean()), "coverage": float(cover.mean()),
            "mean_coverage": float(mean_cover.mean()),
            "mean_faster": float((g["ci_low"] > hi).mean()), "mean_slower": float((g["ci_high"] < lo).mean())}


def show(name: str, got: dict) -> None:
    print(f"\n{name}: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in got.items()))


def label(runs: int, trials: int, spread: float, trial: float) -> str:
    return f"{runs}x{trials}, run spread {100 * spread:g}%, trial spread {100 * trial:g}%"


SCENARIOS = [(r, t, s, tr) for r, t in DESIGNS for s in SPREADS for tr in TRIALS]
IDS = [label(*x) for x in SCENARIOS]


def seed_of(runs: int, trials: int, spread: float, trial: float) -> int:
    return 100 * runs + 10 * trials + int(1000 * spread) + int(10000 * trial)


@pytest.mark.parametrize("runs, trials, spread, trial", SCENARIOS, ids=IDS)
def test_equal_platforms_are_rarely_faster_or_slower_and_intervals_cover(runs, trials, spread, trial):
    got = rates(1.0, runs, trials, spread, trial, seed=seed_of(runs, trials, spread, trial))
    show(f"A/A, {label(runs, trials, spread, trial)}", got)
    assert got["faster"] + got["slower"] <= 0.05, got
    assert got["coverage"] >= 0.92, got
    assert got["mean_faster"] + got["mean_slower"] <= 0.05 and got["mean_coverage"] >= 0.92, got


@pytest.mark.parametrize("runs, trials, spread, trial", SCENARIOS, ids=IDS)
def test_a_true_ratio_at_the_band_edge_is_rarely_faster(runs, trials, spread, trial):
    """At exactly 1 + tolerance a one-sided 97.5% bound says 'faster' 2.5% of the time where it is
    exact (designs with >= 2 runs a side measure their spread: there it is exact, not
    conservative; one run a side takes the 8% default (2 df), above every true spread here, so it is
    conservative), and a simulation measures that only up to its Monte Carlo error: keys of one
    world share its run effects, so the standard error is taken over worlds (0.3-0.4% with 500).
    The test allows 2.5% plus two of those standard errors and prints both: an exact bound reads
    2.5% on average, so about half of these 500-world figures print above it (up to ~3%, within
    two standard errors). Over 4,000 worlds (8 x 500, other seeds) every exact scenario read
    faster on 2.13-2.48% of keys (standard errors 0.04-0.21%) and on 1.5-2.7% of world means, at
    both trial spreads: no excess beyond Monte Carlo error (README "Trials and statistics")."""
    got = rates(1.05, runs, trials, spread, trial, seed=7 + seed_of(runs, trials, spread, trial))
    show(f"B = 1.05 A, {label(runs, trials, spread, trial)}", got)
    assert got["faster"] <= 0.025 + 2 * got["faster_se"], got
    assert got["mean_faster"] <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / WORLDS), got
    assert got["coverage"] >= 0.92, got


@pytest.mark.parametrize("trial", TRIALS)
def test_a_true_twenty_percent_gap_reads_faster_with_three_runs_a_side(trial):
    got = rates(1.2, 3, 1, 0.03, trial, seed=21)
    show(f"B = 1.2 A, {label(3, 1, 0.03, trial)}", got)
    assert got["faster"] >= 0.80 and got["slower"] == 0.0, got
    assert got["coverage"] >= 0.92, got
    got = rates(1.2, 3, 3, 0.03, trial, seed=22)
    show(f"B = 1.2 A, {label(3, 3, 0.03, trial)}", got)
    assert got["faster"] >= 0.80, got


PRICES = PriceBook(use_config=False)


@pytest.mark.parametrize("runs, trials", DESIGNS, ids=[f"{r}x{t}" for r, t in DESIGNS])
def test_the_gate_over_200_keys_truly_four_percent_slower_rarely_fails(runs, trials):
    """--fail-if-slower 5% over 200 keys that are all truly 4% slower, run spread 3%, trial spread
    0.5% (of the spreads simulated, the ones whose intervals come nearest the gate's bound: 1%
    fails less often): the comparison document as `compare` builds it (compare_sides), cut into
    its worlds (each world is one category: its 200 rows and its mean, what a one-world document
    holds), each judged by regression_gate: Holm over the 200 results and the category mean."""
    worlds, keys, spread, trial = 500, 200, 0.03, 0.005
    a, b = sides(0.96, runs, trials, spread, trial, seed=5 + 10 * runs + trials, keys=keys, worlds=worlds)
    doc = compare_sides(a, b, 0.05, PRICES)
    failed = 0
    for w in range(worlds):
        cat = f"w{w:04d}"
        one = {"rows": doc["rows"][w * keys:(w + 1) * keys], "geomean": {cat: doc["geomean"][cat]},
               "contended": doc["contended"]}
        assert {r["category"] for r in one["rows"]} == {cat}
        gate = regression_gate(one, 0.05)
        assert gate["judged"] and gate["method"].startswith("Holm over 200 result(s) and 1 category mean(s)")
        failed += not gate["passed"]
    print(f"\ngate 5% over {keys} keys truly 4% slower, {label(runs, trials, spread, trial)}: "
          f"fails in {100 * failed / worlds:.1f}% of {worlds} worlds")
    assert failed / worlds <= 0.05


def test_contended_sides_never_read_faster_or_slower():
    _, _, core = world(1.5, 3, 1, 0.01, 0.0075, seed=3, contended=True)
    assert not np.isin(core.verdict, [FASTER, SLOWER]).any() and core.contended
    print(f"\ncontended B at a true 1.5x: {100 * (core.verdict == FASTER).mean():.1f}% faster")


def history_rows(rng: np.random.Generator, worlds: int, keys: int, runs: int, spread: float, trial: float,
                 trials: int = 3) -> tuple[list, list, list]:
    """Result rows (run_id, key, category, trial figures, value, flags) of `runs` earlier runs per
    world at the true spread: what comparison.history reads from a store."""
    rows, run_ids = [], []
    for w in range(worlds):
        levels = rng.normal(4.0, 1.0, keys)
        rho = spread * math.sqrt(SHARED) * rng.standard_normal(runs)
        for r in range(runs):
            run_ids.append(f"h{w}-{r}")
            inter = spread * math.sqrt(1 - SHARED) * rng.standard_normal(keys)
            for k in range(keys):
                logs = levels[k] + rho[r] + inter[k] + trial * rng.standard_normal(trials)
                rows.append((f"h{w}-{r}", f"w{w}-k{k}", f"w{w:04d}", np.exp(logs).astype("<f8").tobytes(), None, None))
    return rows, run_ids, [f"w{w:04d}" for w in range(worlds)]


@pytest.mark.parametrize("trial", TRIALS)
def test_store_history_brings_the_assumed_spread_to_the_truth(trial):
    """1 run x 1 trial a side, true run spread 2% (the default assumes 8%, 2 df): with 6 earlier runs of
    3 trials per world (at the true spread) the prior follows the truth, so a true 15% gap reads
    faster in most worlds instead of almost none, and equal platforms stay calibrated. (The SQL
    around fit_priors is exercised through the CLI in test_compare.)"""
    spread, worlds = 0.02, 500
    rng = np.random.default_rng(44)
    rows, run_ids, cats = history_rows(rng, worlds, KEYS, 6, spread, trial)
    found = fit_priors(rows, run_ids, cats, "h200-sxm/cuda 13.0")
    assumed = np.array([found[c].spread for c in cats])
    print(f"\nhistory of 6 runs at a true run spread {100 * spread:g}% (+{100 * trial:g}% trials / 3): assumed "
          f"{100 * np.median(assumed):.2f}% (median over worlds; 10-90%: {100 * np.quantile(assumed, 0.1):.2f}"
          f"-{100 * np.quantile(assumed, 0.9):.2f}%); text: {found[cats[0]].text}")
    truth = math.sqrt(spread ** 2 + trial ** 2 / 3)
    assert abs(np.median(assumed) / truth - 1) < 0.15

    def from_history(a, b):
        return found, found

    for ratio in (1.0, 1.05, 1.15):
        with_history = rates(ratio, 1, 1, spread, trial, seed=50, worlds=worlds, priors=from_history)
        without = rates(ratio, 1, 1, spread, trial, seed=50, worlds=worlds)
        show(f"B = {ratio} A, 1x1, true run spread 2%, trial spread {100 * trial:g}%, with history", with_history)
        show(f"B = {ratio} A, 1x1, true run spread 2%, trial spread {100 * trial:g}%, default 8%, 2 df", without)
        assert with_history["coverage"] >= 0.92 and with_history["mean_coverage"] >= 0.92
        if ratio == 1.0:
            assert with_history["faster"] + with_history["slower"] <= 0.05
        if ratio == 1.05:
            assert with_history["faster"] <= 0.025 + 2 * with_history["faster_se"]
            assert with_history["mean_faster"] <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / worlds)
        if ratio == 1.15:
            assert with_history["faster"] >= 0.7 and without["faster"] <= 0.05


# -- the document path: trials folded as the runner folds them, drifting samples --------------------
def test_within_trial_intervals_account_for_drift():
    """No run-to-run spread, spread set to 0: one drifting trial a side. Pooling drifting samples
    as if independent understates the noise; the drift-inflated interval must still cover."""
    rng = np.random.default_rng(3)

    def drifting(level: float) -> list[float]:
        z = np.empty(20)
        z[0] = rng.standard_normal()
        for i in range(1, 20):
            z[i] = 0.7 * z[i - 1] + math.sqrt(1 - 0.49) * rng.standard_normal()
        return (level * np.exp(0.005 * z)).tolist()

    rows = []
    for w in range(30):
        docs = [make_run([make_result("gemm", {"k": k}, drifting(100.0 * (1 + k / 10))) for k in range(12)],
                         run_id=f"{s}{w}") for s in "ab"]
        rows += compare_runs(docs[:1], docs[1:], floor=0.0)["rows"]
    coverage = sum(r["ci_low"] <= 1.0 <= r["ci_high"] for r in rows) / len(rows)
    print(f"\ndrift only (AR(1) phi 0.7), within-trial intervals: coverage {coverage:.3f}")
    assert coverage >= 0.90


# -- serving: a point compares its aggregate throughput ------------------------------------------
def closed_loop_rows(durations: list[float], tokens: int, concurrency: int, trial: int) -> list[dict]:
    """Request rows (serving_summary's export shape) of a closed loop of `concurrency` clients."""
    free = [0] * concurrency
    rows = []
    for i, d in enumerate(durations):
        w = min(range(concurrency), key=free.__getitem__)
        start, end = free[w], free[w] + int(d * 1e6)
        free[w] = end
        gaps = [int(d * 1e6 * 0.9 / (tokens - 1))] * (tokens - 1)
        rows.append({"trial": trial, "i": i, "ok": True, "error": None, "timeout": False, "start_us": start,
                     "end_us": end, "ttft_us": int(d * 1e6 * 0.1), "itl_us": gaps, "max_tokens": tokens,
                     "input_tokens": 64, "output_tokens": tokens, "input_estimated": False,
                     "server_input_tokens": 64, "client_input_tokens": 64, "server_output_tokens": tokens,
                     "client_output_tokens": tokens})
    return rows


def serving_side(scale: float, skew: float, rng: np.random.Generator, run_id: str) -> dict:
    """One run, 3 trials, of a concurrency-4 point whose aggregate output rate is `scale` x 100 tok/s;
    `skew` spreads the request durations (uneven requests), which the aggregate must not care about."""
    from gpuparity.results.serving_summary import summarize_point
    from gpuparity.workloads.serving.workload import Serving, finish

    w, trials = Serving(), []
    params = {"dataset": "random", "input_len": 64, "output_len": 64, "concurrency": 4}
    for t in range(3):
        raw = np.exp(skew * rng.standard_normal(48))
        rows = closed_loop_rows(list(raw), 64, 4, t + 1)
        wall = (max(r["end_us"] for r in rows) - min(r["start_us"] for r in rows)) / 1e6
        factor = (48 * 64 / wall) / (100.0 * scale * math.exp(0.01 * rng.standard_normal()))
        rows = closed_loop_rows(list(raw * factor), 64, 4, t + 1)       # now at the wanted aggregate
        result = w.begin(params, type("Ctx", (), {"spec": None, "options": {}})())[0]
        result["info"].update(requests=rows, curve_key="random in=64 out=64", trial=t + 1)
        s = summarize_point(rows, 1)
        result["info"]["serving"] = s
        trials.append(finish(result, s, params))
    merged = w.merge_trials(trials, type("Ctx", (), {"spec": None})())
    return make_run([merged], run_id=run_id)


def test_a_serving_point_compares_at_its_true_aggregate_ratio():
    """Issue 12's example: B's aggregate throughput is 0.927 x A's, but B's requests are much more
    uneven. A comparison of per-request rates (medians of rescaled pseudo-samples) misread such a
    point; its figure is now its aggregate, so the comparison reads 0.927, inside its CI."""
    rng = np.random.default_rng(9)
    a, b = serving_side(1.0, 0.1, rng, "a"), serving_side(0.927, 0.9, rng, "b")
    (row,) = compare_runs([a], [b])["rows"]
    assert row["ratio"] == pytest.approx(0.927, rel=0.02)
    assert row["ci_low"] <= 0.927 <= row["ci_high"] and row["a_trials"] == row["b_trials"] == 3

    def median_rate(doc):
        rows = doc["results"][0]["info"]["requests"]
        return np.median([r["output_tokens"] / ((r["end_us"] - r["start_us"]) / 1e6) for r in rows])

    # a median of per-request rates is not the point's throughput: it would be off by more than 5% here
    assert abs(median_rate(b) / median_rate(a) / 0.927 - 1) > 0.05
    assert json.dumps(row)      # strict JSON


# -- one box of each vendor, through a real store (issue 36) --------------------------------------
# Each world is its own category (w0000, w0001, ...): its own run effects in every run document,
# one category's default or history per world, so one `compare_sides` over the documents a SQLite
# store holds computes hundreds of independent one-box comparisons, as `gpuparity compare` reads
# them (comparison.sides.load_side with a StorePool, history="auto"). The log figure of key k in
# run r (of occasion o: host, boot, day), trial t is
#   truth + level + occasion effect (shared, and key x occasion) + run effect within the occasion
#   (shared, and key x run) + trial noise + within-trial error,
# so runs back to back on one boot share their occasion's effect, as they do on a real box.
FP_A = {"vendor": "NVIDIA", "product": "H200", "spec": {"id": "h200-sxm"}, "backend": "cuda",
        "cuda_version": "13.0", "torch_version": "2.6.0", "driver_version": "575.51"}
FP_B = {"vendor": "AMD", "product": "MI300X", "spec": {"id": "mi300x"}, "backend": "rocm",
        "rocm_version": "6.4.1", "torch_version": "2.6.0", "driver_version": "6.12.12"}
TOL = 0.05


def occasions(kind: str, n: int, host: str, day0: int = 1, boot: str | None = None, same_boot: bool = False,
              same_day: bool = False) -> list[dict]:
    """n runs of one side: kind 'hist' or 'cmp', each on its own day and boot unless same_boot /
    same_day (back to back)."""
    out = []
    for i in range(n):
        day = day0 if same_day or same_boot else day0 + i
        out.append({"kind": kind, "host": host, "boot": boot or f"{host}-boot{day0 if same_boot else day0 + i}",
                    "day": day, "at": f"2026-02-{day:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00+00:00"})
    return out


def simulate(rng, truth: np.ndarray, runs: list[dict], trials: int, occ_shared: float, occ_inter,
             within: float = 0.0, trial: float = 0.005) -> np.ndarray:
    """Log trial figures (worlds, keys, runs, trials) of one side (see the section notes);
    occ_inter: the key x occasion spread, per key (worlds, keys) or one figure."""
    w, k = truth.shape
    occ = {}
    for r in runs:
        occ.setdefault((r["host"], r["boot"], r["day"]), len(occ))
    of = np.array([occ[(r["host"], r["boot"], r["day"])] for r in runs])
    inter = np.broadcast_to(np.asarray(occ_inter, dtype=float), (w, k))[:, :, None]
    rho = occ_shared * rng.standard_normal((w, 1, len(occ)))[:, :, of]
    e = (inter * rng.standard_normal((w, k, len(occ))))[:, :, of]
    own = within * (math.sqrt(SHARED) * rng.standard_normal((w, 1, len(runs)))
                    + math.sqrt(1 - SHARED) * rng.standard_normal((w, k, len(runs))))
    noise = trial * rng.standard_normal((w, k, len(runs), trials)) + WITHIN * rng.standard_normal((w, k, len(runs), trials))
    return (truth[:, :, None] + rho + e + own)[:, :, :, None] + noise


def run_docs(label: str, fp: dict, runs: list[dict], logs: np.ndarray, only: dict | None = None,
             load: dict | None = None) -> list[dict]:
    """Run documents of one side: a result per world and key (category w0000..., key w0000-k00),
    its trials' figures; only[r]: the keys run r holds (a re-run of one key); load[r]: the share
    of the CPUs other processes used in every timed window of run r (graded by the runner's own
    platform.machine.mark_contention)."""
    from gpuparity.platform.machine import mark_contention

    w, k, _, t = logs.shape
    values = np.exp(logs)
    names = [[(f"w{wi:04d}-k{ki:03d}", f"w{wi:04d}") for ki in range(k)] for wi in range(w)]
    docs = []
    for r, run in enumerate(runs):
        keys = list(only.get(r)) if only and r in only else list(range(k))
        share = (load or {}).get(r)
        cpu = {"other_share": share, "wait_share": 0.0, "own_cpus": 1.0, "cpus": 16, "window_s": 1.0}
        tele = {"per_trial": [{"cpu": cpu}] * t} if share is not None else None
        results = []
        trial_values = values[:, keys, r].tolist()
        means = np.exp(logs[:, keys, r].mean(axis=-1)).tolist()
        for wi in range(w):
            for j, ki in enumerate(keys):
                key, cat = names[wi][ki]
                res = {"key": key, "workload": "gemm", "category": cat, "params": {"k": ki}, "dtype": "bf16",
                       "status": "ok", "reason": None, "samples": [],
                       "metric": {"unit": "TFLOP/s", "value": means[wi][j]}, "work": {},
                       "trials": [{"trial": i + 1, "status": "ok", "value": x, "log_se": WITHIN}
                                  for i, x in enumerate(trial_values[wi][j])], "flags": [], "info": {}}
                if tele is not None:
                    res["telemetry"] = tele
                results.append(res)
        doc = {"schema_version": 2, "benchmark_version": 1, "run_id": f"{label}-{run['kind']}{r}",
               "started_at": run["at"], "finished_at": run["at"], "status": "complete", "host": run["host"],
               "label": run["kind"], "spec_id": fp["spec"]["id"], "fingerprint": {**fp, "host": run["host"]},
               "machine": {"start": {"boot_id": run["boot"]}, "end": {}}, "results": results}
        mark_contention(doc)
        docs.append(doc)
    return docs


def store_compare(tmp_path, docs_a: list[dict], docs_b: list[dict], history: bool = True) -> dict:
    """Save both sides' documents in one SQLite store and compare the runs labelled 'cmp', as
    `gpuparity compare 'gpu=h200-sxm,label=cmp' 'gpu=mi300x,label=cmp' --db S` does."""
    from gpuparity.comparison.sides import load_side
    from gpuparity.results.store import Store, StorePool

    tmp_path.mkdir(parents=True, exist_ok=True)
    db = str(tmp_path / "worlds.db")
    with Store(db) as s:
        with s.writer() as w:
            for d in docs_a + docs_b:
                w.save_run(d)
    with StorePool() as pool:
        a = load_side("gpu=h200-sxm,label=cmp", "A", db, pool)
        b = load_side("gpu=mi300x,label=cmp", "B", db, pool)
        return compare_sides(a, b, TOL, PRICES, history="auto" if history else None, stores=pool)


def judge(doc: dict, truth: np.ndarray, keys: slice | None = None) -> dict:
    """Per key: false faster/slower (a verdict whose direction the truth contradicts, or any
    faster/slower where the truth is within the band), coverage; per world: a false verdict that
    survives Benjamini-Hochberg within the world (one world, one comparison), and the category
    mean read "mixed". keys: only these key indices count."""
    from gpuparity.comparison.multiplicity import fdr_verdicts

    rows = doc["rows"]
    world = np.array([int(r["category"][1:]) for r in rows])
    key = np.array([int(r["key"].rsplit("k", 1)[1]) for r in rows])
    t = truth[world, key]
    v = np.array([VERDICTS.index(r["verdict"]) for r in rows])
    lo = np.array([r["ci_low"] if r["ci_low"] is not None else np.nan for r in rows])
    hi = np.array([r["ci_high"] if r["ci_high"] is not None else np.nan for r in rows])
    se = np.array([r["log_se"] if r["log_se"] is not None else np.nan for r in rows])
    df = np.array([r["df"] if r["df"] is not None else np.inf for r in rows])
    lr = np.log(np.array([r["ratio"] for r in rows]))
    usable = np.array([r["held"] is None for r in rows]) & np.isfinite(se)
    adj = fdr_verdicts(lr, se * se, df, TOL, usable, group=world)
    b = math.log1p(TOL)

    def wrong(codes):
        return ((codes == FASTER) & (t <= b)) | ((codes == SLOWER) & (t >= -b))

    sel = np.ones(len(rows), bool) if keys is None else np.isin(key, np.arange(truth.shape[1])[keys])
    n_worlds = truth.shape[0]
    bad_world = np.bincount(world[sel], weights=wrong(adj)[sel], minlength=n_worlds) > 0
    geo = doc["geomean"]
    mixed = np.array([geo[f"w{i:04d}"]["verdict"] == "mixed" for i in range(n_worlds)])
    parity = np.array([geo[f"w{i:04d}"]["verdict"] == "parity" for i in range(n_worlds)])
    mean_truth = truth.mean(axis=1)
    mean_false = np.array([(geo[f"w{i:04d}"]["verdict"] == "faster" and mean_truth[i] <= b)
                           or (geo[f"w{i:04d}"]["verdict"] == "slower" and mean_truth[i] >= -b) for i in range(n_worlds)])
    return {"false": float(wrong(v)[sel].mean()), "coverage": float(((lo <= np.exp(t)) & (np.exp(t) <= hi))[sel].mean()),
            "bh_worlds": float(bad_world.mean()), "mixed": float(mixed.mean()), "mean_parity": float(parity.mean()),
            "mean_false": float(mean_false.mean()),
            "faster": float((v == FASTER)[sel].mean()), "slower": float((v == SLOWER)[sel].mean())}


def world_pair(rng, worlds: int, keys: int, runs_a: list, runs_b: list, trials: int, truth: np.ndarray, **spread):
    """Both sides' documents, B's figures `truth` (log ratio) above A's."""
    levels = rng.normal(4.0, 1.0, (worlds, keys))
    la = simulate(rng, levels, runs_a, trials, **spread)
    lb = simulate(rng, levels + truth, runs_b, trials, **spread)
    return la, lb


def test_history_back_to_back_on_one_boot_is_not_the_spread_between_other_days(tmp_path):
    """The audit's world: 8 earlier runs of each product back to back on one boot (they differ by
    0.5%), the runs compared on other days (3% apart from day to day). Back-to-back runs count as
    one occasion, so the history is no evidence and the one-run sides take the default; and 8
    runs on 8 boots of one day on one host, with the run compared on another host, span less than
    the comparison: pooled with the default, never used alone."""
    worlds, keys = 400, 20
    for variant in ("one boot", "one day, one host"):
        rng = np.random.default_rng(361 if variant == "one boot" else 362)
        hist = (occasions("hist", 8, "box", same_boot=True) if variant == "one boot" else
                [{**o, "day": 1, "at": f"2026-02-01T{i:02d}:00:00+00:00"} for i, o in
                 enumerate(occasions("hist", 8, "box"))])
        cmp_a = occasions("cmp", 1, "box" if variant == "one boot" else "box2", day0=20)
        cmp_b = occasions("cmp", 1, "box" if variant == "one boot" else "box2", day0=21)
        truth = np.zeros((worlds, keys))
        runs_a, runs_b = hist + cmp_a, [{**h, "host": h["host"] + "b"} for h in hist] + [
            {**c, "host": c["host"] + "b"} for c in cmp_b]
        # back to back: the occasion effect is shared (0.5% between runs); other days differ by 3%
        la, lb = world_pair(rng, worlds, keys, runs_a, runs_b, 1, truth, occ_shared=0.03 * math.sqrt(SHARED),
                            occ_inter=0.03 * math.sqrt(1 - SHARED), within=0.005)
        doc = store_compare(tmp_path / variant.replace(" ", "_").replace(",", ""),
                            run_docs("a", FP_A, runs_a, la), run_docs("b", FP_B, runs_b, lb))
        got = judge(doc, truth)
        spread = doc["run_spread"]["A"]["w0000"]
        show(f"history {variant} (0.5% apart), runs compared on other days (3%), 1x1", got)
        print(f"  A's spread: {spread['text']}")
        assert got["false"] <= 0.05 and got["bh_worlds"] <= 0.05 and got["mean_false"] <= 0.05 and got["coverage"] >= 0.92, got
        if variant == "one boot":
            assert spread["source"] == "default" and "on another occasion" in spread["text"], spread
            assert "8 run(s), back to back on one boot" in spread["text"], spread
        else:
            assert spread["source"] == "history" and "pooled with the 8% default" in spread["text"], spread
            assert "8 runs on 1 host over 1 day" in spread["text"], spread


def test_four_noisy_keys_of_twenty_keep_their_own_spread(tmp_path):
    """The audit's world: 20 kernel keys with history (6 runs on 6 days), 4 of them at 5% key x run
    noise and 16 at 0.3%: each key takes its own history variance, moderated robustly toward the
    category (the noisy ones are outliers and keep theirs), so the noisy keys are calibrated too."""
    worlds, keys, noisy = 300, 20, 4
    rng = np.random.default_rng(364)
    inter = np.where(np.arange(keys) < noisy, 0.05, 0.003)[None, :].repeat(worlds, 0)
    runs_a = occasions("hist", 6, "box") + occasions("cmp", 1, "box", day0=20)
    runs_b = occasions("hist", 6, "boxb") + occasions("cmp", 1, "boxb", day0=21)
    truth = np.zeros((worlds, keys))
    la, lb = world_pair(rng, worlds, keys, runs_a, runs_b, 1, truth, occ_shared=0.01, occ_inter=inter)
    doc = store_compare(tmp_path, run_docs("a", FP_A, runs_a, la), run_docs("b", FP_B, runs_b, lb))
    got, loud = judge(doc, truth), judge(doc, truth, keys=slice(0, noisy))
    show("4 noisy keys (5%) of 20 (0.3%), history of 6 runs, 1x1: all keys", got)
    show("  the 4 noisy keys", loud)
    assert doc["run_spread"]["A"]["w0000"]["keys_own"] == keys
    assert got["false"] <= 0.05 and loud["false"] <= 0.05 and got["bh_worlds"] <= 0.05 and got["mean_false"] <= 0.05, (got, loud)
    assert loud["coverage"] >= 0.92 and got["coverage"] >= 0.92, (got, loud)


@pytest.mark.parametrize("spread", [0.08, 0.10, 0.15])
def test_one_run_a_side_without_history_holds_to_a_spread_past_the_default(tmp_path, spread):
    """1 run x 1 trial a side, no history: the 8% default with 2 degrees of freedom (a t, not a z)
    at true run-to-run spreads of 8%, 10% and 15% (the kernel default is 8%; before, a 6% z
    interval read 12.5% false at 10% and 30.8% at 15%)."""
    worlds, keys = 400, 20
    rng = np.random.default_rng(int(1000 * spread))
    runs_a, runs_b = occasions("cmp", 1, "box", day0=3), occasions("cmp", 1, "boxb", day0=4)
    truth = np.zeros((worlds, keys))
    la, lb = world_pair(rng, worlds, keys, runs_a, runs_b, 1, truth, occ_shared=spread * math.sqrt(SHARED),
                        occ_inter=spread * math.sqrt(1 - SHARED))
    doc = store_compare(tmp_path, run_docs("a", FP_A, runs_a, la), run_docs("b", FP_B, runs_b, lb))
    got = judge(doc, truth)
    show(f"A/A 1x1, no history, true spread {100 * spread:g}% (default 8%, 2 df)", got)
    assert doc["run_spread"]["A"]["w0000"]["source"] == "default"
    assert got["false"] <= 0.05 and got["bh_worlds"] <= 0.05 and got["mean_false"] <= 0.05, got
    # the spread assumed is printed beside every one-run verdict
    assert all(r["a_spread"] == pytest.approx(0.08) and r["b_spread"] == pytest.approx(0.08) for r in doc["rows"])


@pytest.mark.parametrize("design", ["5x3", "1x1 with history"])
def test_keys_half_faster_half_slower_read_mixed_never_parity(tmp_path, design):
    """The audit's world: keys half 1.3x and half 1/1.3x. The category mean is near 1, its interval
    narrow: before, "parity" in 91.5% of worlds. Keys that disagree beyond the band read "mixed:
    faster on X of N, slower on Y" with the extremes named, in at least 90% of worlds."""
    rng = np.random.default_rng(365 if design == "5x3" else 366)
    if design == "5x3":
        worlds, keys, trials = 40, 200, 3
        runs_a, runs_b = occasions("cmp", 5, "box"), occasions("cmp", 5, "boxb", day0=10)
    else:
        worlds, keys, trials = 100, 40, 1
        runs_a = occasions("hist", 6, "box") + occasions("cmp", 1, "box", day0=20)
        runs_b = occasions("hist", 6, "boxb") + occasions("cmp", 1, "boxb", day0=21)
    truth = np.where(np.arange(keys) % 2 == 0, math.log(1.3), -math.log(1.3))[None, :].repeat(worlds, 0)
    truth_b = np.where(np.array([r["kind"] == "hist" for r in runs_b]), 0, 1)      # history: B as it was
    la, lb = world_pair(rng, worlds, keys, runs_a, runs_b, trials, np.zeros((worlds, keys)),
                        occ_shared=0.02 * math.sqrt(SHARED), occ_inter=0.02 * math.sqrt(1 - SHARED))
    lb = lb + (truth[:, :, None] * truth_b[None, None, :])[:, :, :, None]
    doc = store_compare(tmp_path, run_docs("a", FP_A, runs_a, la), run_docs("b", FP_B, runs_b, lb))
    got = judge(doc, truth)
    show(f"half 1.3x, half 1/1.3x, {design}, {keys} keys", got)
    assert got["mixed"] >= 0.90 and got["mean_parity"] == 0.0, got
    assert got["false"] <= 0.05 and got["bh_worlds"] <= 0.05 and got["mean_false"] <= 0.05, got
    from gpuparity.comparison.headline import headline

    g = doc["geomean"]["w0000"]
    if g["verdict"] == "mixed":
        assert "on w0000 " in headline(doc)["text"] and ": mixed: faster on " in headline(doc)["text"]
        m = g["mixed"]
        assert m["faster"] > 0 and m["slower"] > 0 and m["n"] == keys
        assert m["lowest"]["ratio"] < 1 < m["highest"]["ratio"] and m["lowest"]["name"].startswith("gemm k=")


@pytest.mark.parametrize("load, slowdown", [(0.24, 0.30), (0.40, 0.30), (0.10, 0.10)])
def test_a_side_timed_beside_other_load_never_reads_faster_or_slower(tmp_path, load, slowdown):
    """A/A, 3 runs x 1 trial a side; every timed window of B's runs shared the CPUs with other
    processes (`load` of them, as measure/load.py reads it) and the load made B's figures
    `slowdown` slower. Above 15% the run is contended (no verdict; 24% was quiet before, 25% the
    line); at 10% its intervals widen by the slowdown such a load could cause. The load is named
    beside the figure (rows' b_load), in the side summary and the headline."""
    from gpuparity.comparison.headline import headline

    worlds, keys = 300, 20
    rng = np.random.default_rng(int(367 + 100 * load))
    runs_a, runs_b = occasions("cmp", 3, "box"), occasions("cmp", 3, "boxb", day0=10)
    truth = np.zeros((worlds, keys))
    la, lb = world_pair(rng, worlds, keys, runs_a, runs_b, 1, truth, occ_shared=0.02 * math.sqrt(SHARED),
                        occ_inter=0.02 * math.sqrt(1 - SHARED))
    lb = lb + math.log(1 - slowdown)
    docs_b = run_docs("b", FP_B, runs_b, lb, load={r: load for r in range(3)})
    doc = store_compare(tmp_path, run_docs("a", FP_A, runs_a, la), docs_b, history=False)
    got = judge(doc, truth)
    show(f"A/A, B at {100 * load:g}% CPU load and {100 * slowdown:g}% slower, 3x1", got)
    assert got["false"] <= 0.05 and got["bh_worlds"] <= 0.05 and got["mean_false"] <= 0.05, got
    assert all(r["b_load"] == pytest.approx(load) and r["a_load"] is None for r in doc["rows"])
    assert f"{100 * load:.0f}% of the CPUs" in doc["sides"]["b"]["load"]["text"]
    text = headline(doc)["text"]
    if load > 0.15:
        assert doc["contended"] and doc["contended"][0]["side"] == "B" and "busy machine" in text
    else:
        assert not doc["contended"] and f"{100 * load:.0f}%" in text and "widened" in text, text


def test_one_key_measured_again_changes_only_its_own_estimate(tmp_path):
    """One run a side with history (6 runs on 6 days, true spread 3%), and B's first key run once
    more on another day: the category stays on its Prior (the other 19 keys keep the history's
    spread: before, the prior was dropped and their run noise set to 0, coverage 89%); the key
    measured twice updates its own."""
    worlds, keys = 250, 20
    rng = np.random.default_rng(368)
    runs_a = occasions("hist", 6, "box") + occasions("cmp", 1, "box", day0=20)
    runs_b = occasions("hist", 6, "boxb") + occasions("cmp", 2, "boxb", day0=21)
    truth = np.zeros((worlds, keys))
    la, lb = world_pair(rng, worlds, keys, runs_a, runs_b, 1, truth, occ_shared=0.03 * math.sqrt(SHARED),
                        occ_inter=0.03 * math.sqrt(1 - SHARED))
    docs_b = run_docs("b", FP_B, runs_b, lb, only={len(runs_b) - 1: [0]})
    doc = store_compare(tmp_path, run_docs("a", FP_A, runs_a, la), docs_b)
    others, again = judge(doc, truth, keys=slice(1, keys)), judge(doc, truth, keys=slice(0, 1))
    show("one key re-measured, 1x1 with history of 6 runs at 3%: the other 19 keys", others)
    show("  the key measured twice", again)
    assert doc["run_spread"]["B"]["w0000"]["source"] == "history" and doc["run_spread"]["B"]["w0000"]["measured_again"] == 1
    assert others["coverage"] >= 0.92 and again["coverage"] >= 0.92, (others, again)
    assert others["false"] <= 0.05 and again["false"] <= 0.05 and others["bh_worlds"] <= 0.05, (others, again)


def test_a_few_noisy_keys_in_two_runs_are_not_shrunk_toward_the_quiet_ones():
    """2 runs x 1 trial a side, 2 of 20 keys at 6% key x run noise, the rest at 0.5%: limma's
    moderation without its robust option pulled the noisy keys toward the quiet ones (7.8% false,
    coverage 71%); robustly, the noisy keys are outliers and keep their own variance."""
    worlds, keys = 500, 20
    rng = np.random.default_rng(369)
    levels = rng.normal(4.0, 1.0, (worlds, keys))
    inter = np.where(np.arange(keys) < 2, 0.06, 0.005)
    sides_ = []
    for label in "ab":
        rho = 0.01 * rng.standard_normal((worlds, 1, 2, 1))
        e = inter[None, :, None, None] * rng.standard_normal((worlds, keys, 2, 1))
        logs = levels[:, :, None, None] + rho + e + 0.005 * rng.standard_normal((worlds, keys, 2, 1))
        s = side(label, np.zeros((worlds, keys)), 2, 1, 0.0, 0.0, rng, levels)
        s.u_value = np.exp(logs.ravel())
        sides_.append(s)
    core = compare_core(*sides_, 0.05)
    v = core.verdict.reshape(worlds, keys)
    cover = ((core.ci_low <= 1) & (1 <= core.ci_high)).reshape(worlds, keys)
    loud = {"false": float(np.isin(v[:, :2], [FASTER, SLOWER]).mean()), "coverage": float(cover[:, :2].mean())}
    quiet = {"false": float(np.isin(v[:, 2:], [FASTER, SLOWER]).mean()), "coverage": float(cover[:, 2:].mean()),
             "parity": float((v[:, 2:] == PARITY).mean())}
    show("2x1, 2 keys of 20 at 6%: the noisy keys", loud)
    show("  the 18 quiet keys", quiet)
    assert loud["false"] <= 0.05 and quiet["false"] <= 0.05 and quiet["coverage"] >= 0.92, (loud, quiet)
    # one residual df per key: a noisy key the outlier test misses is still shrunk (2% of keys here)
    assert loud["coverage"] >= 0.90, loud


@pytest.mark.parametrize("ratio, runs, trials, spread, floor", [
    (1.2, 2, 3, 0.01, 0.86), (1.2, 3, 1, 0.03, 0.92), (1.2, 5, 1, 0.05, 0.92), (1.1, 5, 1, 0.03, 0.54),
    (1.1, 3, 3, 0.01, 0.93)])
def test_two_or_more_runs_a_side_keep_their_power(ratio, runs, trials, spread, floor):
    """Issue 36 changed one-run sides (honest tails, robust moderation, per-key priors); sides that
    measure their own spread must not lose power for it: each floor is the share of keys read
    faster before those changes, on these seeds, less 5 points (before: 91.3%, 97.6%, 97.8%,
    59.6%, 98.6%; after: 91.0%, 97.5%, 97.8%, 59.5%, 98.5%)."""
    got = rates(ratio, runs, trials, spread, 0.005, seed=900 + runs * 10 + trials + int(spread * 1000))
    show(f"B = {ratio} A, {label(runs, trials, spread, 0.005)} (power)", got)
    assert got["faster"] >= floor and got["slower"] == 0.0, got
