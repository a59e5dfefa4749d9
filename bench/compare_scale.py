"""Scale check for `gpuparity compare`: two SQLite stores of 100,000 results each.

Each store holds RUNS runs x RESULTS results (distinct keys per run: a GEMM shape sweep, so
every one of the 100k keys is matched; each key has one run of 3 trials, so every side takes the
run-to-run prior and moderates its trial variances). The timed part is what
`gpuparity compare a.db b.db` does: read both stores through the fast path and compute ratios,
CIs (comparison/estimate.py's model) and verdicts. Also printed: the full comparison document (100k rows of
per-peak/$/W figures) and the whole CLI end to end, as JSON and as a table. The peer, measured in the same run, is the naive
per-key bootstrap (a resample matrix and np.median per key) on a subset, extrapolated.

Usage: python bench/compare_scale.py [--runs 100] [--results 1000] [--trials 3] [--dir DIR] [--same-keys]
Target: compare <= 2 s on the 2-core dev box. The last line printed is the compare time. Module
imports (numpy, scipy.special: about 0.3 s once per process) are outside it; the end-to-end lines
include everything.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.special  # noqa: F401 - the statistics' import, once per process: outside the timed part, as numpy's

from gpuparity.comparison.compare import compare_sides
from gpuparity.comparison.ratios import compare_core
from gpuparity.comparison.sides import side_from_store
from gpuparity.comparison.verdict import VERDICTS
from gpuparity.platform.specs import all_specs
from gpuparity.results.figure import combine
from gpuparity.results.schema import new_result, new_run
from gpuparity.results.store import Store


def make_store(path: str, spec_id: str, speed: float, runs: int, results: int, seed: int,
               same_keys: bool = False, trials: int = 3) -> None:
    rng = np.random.default_rng(seed)
    spec = dict(all_specs()[spec_id])
    fp = {"host": f"bench-{spec_id}", "product": spec["product"], "vendor": spec["vendor"], "backend": "cuda",
          "spec": spec, "telemetry": {"method": "none"}, "torch_version": "2.6.0"}
    with Store(path) as store:
        for r in range(runs):
            doc = new_run(fp)
            doc["run_id"] = f"{spec_id}-{r:04d}"
            doc["started_at"] = f"2026-01-01T00:{r // 60:02d}:{r % 60:02d}+00:00"
            doc["status"] = "complete"
            for i in range(results):
                m = 256 + 8 * (i if same_keys else r * results + i)
                res = new_result("gemm", "kernel", {"m": m, "n": 4096, "k": 4096, "dtype": "bf16"}, "bf16")
                flop = 2.0 * m * 4096 * 4096
                tflops = speed * (1 + 0.1 * rng.standard_normal()) * 400
                records, samples = [], []
                for t in range(trials):      # each trial: its own level, samples and figure
                    level = tflops * math.exp(0.02 * rng.standard_normal())
                    n = int(rng.integers(5, 16))
                    samples += (flop / (level * 1e12) * (1 + 0.02 * rng.standard_normal(n))).tolist()
                    records.append({"trial": t + 1, "status": "ok", "n": n, "value": level, "log_se": 0.01,
                                    "flags": []})
                c = combine([t["value"] for t in records], [t["log_se"] for t in records])
                res["samples"], res["trials"], res["work"] = samples, records, {"flop": flop}
                res["metric"] = {"name": "flop", "unit": "TFLOP/s", "value": c["value"], "ci_low": c["ci_low"],
                                 "ci_high": c["ci_high"], "trials": c["trials"], "higher_is_better": True}
                doc["results"].append(res)
            store.save_run(doc)


def naive_seconds_per_key(side_a, side_b, keys: list[str], resamples: int = 1000) -> float:
    """The peer: a textbook per-key two-level bootstrap (resample trials, then take each trial's
    figure; resample matrix, np.quantile)."""
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    for k in keys:
        xa, xb = side_a.units(side_a.index[k]), side_b.units(side_b.index[k])
        ma = np.exp(np.log(xa[rng.integers(0, xa.size, (resamples, xa.size))]).mean(axis=1))
        mb = np.exp(np.log(xb[rng.integers(0, xb.size, (resamples, xb.size))]).mean(axis=1))
        np.quantile(mb / ma, [0.025, 0.975])
    return (time.perf_counter() - t) / len(keys)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--results", type=int, default=1000)
    ap.add_argument("--dir", default=None, help="keep the stores here (default: a temp dir)")
    ap.add_argument("--trials", type=int, default=3, help="trials per result (each a unit of the statistics)")
    ap.add_argument("--same-keys", action="store_true",
                    help="every run repeats the same RESULTS keys (pooled: RUNS x samples per key)")
    args = ap.parse_args()
    folder = args.dir or tempfile.mkdtemp(prefix="gpuparity-bench-")
    os.makedirs(folder, exist_ok=True)
    tag = ("-pooled" if args.same_keys else "") + f"-t{args.trials}"
    pa, pb = os.path.join(folder, f"a{tag}.db"), os.path.join(folder, f"b{tag}.db")
    t = time.perf_counter()
    for path, spec_id, speed, seed in ((pa, "mi300x", 1.0, 1), (pb, "h100-sxm", 1.05, 2)):
        if not os.path.exists(path):
            make_store(path, spec_id, speed, args.runs, args.results, seed, args.same_keys, args.trials)
    print(f"stores ready in {time.perf_counter() - t:.1f} s: {pa}, {pb}")

    t0, c0 = time.perf_counter(), time.process_time()
    with Store(pa) as sa, Store(pb) as sb:
        side_a = side_from_store(sa, sa.run_ids(), "A")
        side_b = side_from_store(sb, sb.run_ids(), "B")
    t_load = time.perf_counter() - t0
    core = compare_core(side_a, side_b)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    counts = {v: int((core.verdict == i).sum()) for i, v in enumerate(VERDICTS)}
    print(f"keys: A {len(side_a.keys)}, B {len(side_b.keys)}; matched {len(core.ia)}; verdicts {counts}")
    print(f"load (both stores) {t_load:.2f} s; ratios + CIs + verdicts {elapsed - t_load:.2f} s")
    t = time.perf_counter()
    doc = compare_sides(side_a, side_b)
    print(f"full comparison document ({len(doc['rows'])} rows with per-peak/$/W fields, geomeans):"
          f" {time.perf_counter() - t:.2f} s more (what the CLI formats)")
    for fmt in ("json", "table"):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gpuparity", "compare", pa, pb, "-f", fmt], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"end to end: gpuparity compare a.db b.db -f {fmt} > /dev/null: {time.perf_counter() - t:.2f} s"
              " (start-up, load, document, output)")
    subset = side_a.keys[:200]
    naive = naive_seconds_per_key(side_a, side_b, subset) * len(core.ia)
    print(f"peer: textbook per-key bootstrap (1000 resamples), extrapolated to {len(core.ia)} keys: {naive:.1f} s"
          f" = {naive / max(elapsed - t_load, 1e-9):.0f}x the vectorised core")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; compare CPU time {cpu:.2f} s")
    print(f"compare of two stores of {args.runs * args.results} results: {elapsed:.2f} s (target <= 2 s)")


if __name__ == "__main__":
    main()
