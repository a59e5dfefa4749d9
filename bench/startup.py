"""Start-up time of the verbs that neither probe the device nor run workloads (target < 0.5 s each).

The peer measured in the same run is a bare `python -c pass`; prints the slowest verb last.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time


def timed(args: list[str], env: dict) -> float:
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run(args, env=env, capture_output=True)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GPUPARITY_DB=os.path.join(tmp, "s.db"))
        gp = [sys.executable, "-m", "gpuparity"]
        base = timed([sys.executable, "-c", "pass"], env)
        # every verb's --help (what starting it costs before it touches a device or a store), plus list
        verbs = [["--help"], ["list"]] + [[v, "--help"] for v in (
            "info", "specs", "plan", "run", "list", "show", "export", "import", "compare", "trend",
            "report", "port", "reference", "claims")]
        worst = ("", 0.0)
        print(f"python -c pass: {base:.3f} s")
        for v in verbs:
            t = timed(gp + v, env)
            print(f"gpuparity {' '.join(v):16s} {t:.3f} s")
            worst = max(worst, (" ".join(v), t), key=lambda x: x[1])
        print(f"slowest verb start-up: {worst[0]} {worst[1]:.3f} s (target < 0.5 s; python itself {base:.3f} s)")


if __name__ == "__main__":
    main()
