"""Live A/A beside other load (issue 36): one box compared with itself, quiet, then beside two
CPU-bound processes, then beside ~20% load from one process at lower priority (nice 19). Every
comparison must show no faster/slower verdict (rows and means) and name the load in every view
(compare's table, markdown and JSON, `show`, the HTML report).

Usage: python bench/aa_load.py [--db DIR/aa.db] [--runs 2] [--run-args "gemm --dtype fp64 --trials 3"]
Run it on a machine nobody else is loading: the quiet baseline must be quiet. Exit status 0 when
every check holds, 1 otherwise; each line printed says what was checked and what was seen.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

SPIN = "import time\nwhile True: pass\n"
# one process at nice 19 that keeps `share` of this machine's CPUs busy: as many children as it
# needs, each spinning that share of every 100 ms
DUTY = """import math, os, sys, time
share = float(sys.argv[1])
os.nice(19)
cpus = len(os.sched_getaffinity(0))
n = max(1, math.ceil(share * cpus))
duty = share * cpus / n
for _ in range(n - 1):
    if os.fork() == 0:
        break
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.1 * duty:
        pass
    time.sleep(0.1 * (1 - duty))
"""


def gp(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "gpuparity", *args], capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "250"})
    if check and r.returncode != 0:
        sys.exit(f"gpuparity {' '.join(args)} failed ({r.returncode}): {r.stderr[-2000:]}")
    return r


def start_load(kind: str) -> list[subprocess.Popen]:
    if kind == "two busy":
        return [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(2)]
    if kind == "20% nice":
        return [subprocess.Popen([sys.executable, "-c", DUTY, "0.2"], start_new_session=True)]
    return []


def stop_load(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        try:
            os.killpg(p.pid, 9) if p.args[-1] == "0.2" else p.kill()
        except ProcessLookupError:
            pass
        p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db")
    ap.add_argument("--runs", type=int, default=2, help="runs per condition (and of the quiet baseline A)")
    ap.add_argument("--run-args", default="gemm --dtype fp64 --trials 3")
    args = ap.parse_args()
    db = args.db or os.path.join(tempfile.mkdtemp(prefix="gpuparity-aa-"), "aa.db")
    run = shlex.split(args.run_args)
    ok = True

    def check(what: str, cond: bool, seen: str = "") -> None:
        nonlocal ok
        ok &= bool(cond)
        print(f"{'ok  ' if cond else 'FAIL'} {what}" + (f": {seen}" if seen else ""))

    for _ in range(args.runs):
        gp("run", *run, "--db", db, "--label", "A")
    for kind in ("quiet", "two busy", "20% nice"):
        label = "B-" + kind.replace(" ", "-").replace("%", "pct")
        procs = start_load(kind)
        try:
            time.sleep(1.0 if procs else 0.0)
            for _ in range(args.runs):
                gp("run", *run, "--db", db, "--label", label)
        finally:
            stop_load(procs)
        a, b = "label=A", f"label={label}"
        doc = json.loads(gp("compare", a, b, "--db", db, "-f", "json").stdout)
        verdicts = [r["verdict"] for r in doc["rows"]] + [g["verdict"] for g in doc["geomean"].values()]
        check(f"{kind}: no faster/slower verdict", not {"faster", "slower"} & set(verdicts),
              ", ".join(f"{v} {verdicts.count(v)}" for v in sorted(set(verdicts))))
        loads = [r["b_load"] for r in doc["rows"] if isinstance(r.get("b_load"), (int, float))]
        top = max(loads, default=0.0)
        print(f"     B's load: up to {100 * top:.0f}% of its CPUs (rows with a load recorded: {len(loads)}); "
              f"contended: {[c['side'] for c in doc['contended']]}; side B: {doc['sides']['b']['load']['text']}")
        busy = bool(doc["contended"]) or top >= 0.05
        if kind != "quiet":
            check(f"{kind}: the load is seen (contended, or 5% and more)", busy)
        shown = gp("show", doc["sides"]["b"]["run_ids"][-1], "--db", db).stdout
        check(f"{kind}: show names the load", "while timed" in shown or "over the run" in shown)
        if busy:
            for fmt in ("table", "markdown"):
                text = " ".join(gp("compare", a, b, "--db", db, "-f", fmt).stdout.split())
                check(f"{kind}: compare -f {fmt} names the load",
                      "busy machine" in text or "beside other load" in text or "contended" in text)
            html = os.path.join(os.path.dirname(db), f"{label}.html")
            gp("report", a, b, "--db", db, "-o", html, "--no-claims")
            page = open(html, encoding="utf-8").read()
            check(f"{kind}: the HTML report names the load", "CPU load" in page or "busy machine" in page)
    print(f"store: {db}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
