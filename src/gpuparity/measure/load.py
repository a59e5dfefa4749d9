"""The CPU load around one timed window, read in the process that measures (the telemetry
sampler's start and stop, measure/telemetry.py): platform/machine.py grades it.

- other_share: what other processes kept busy of the CPUs this process may run on (its affinity
  set: a container's or taskset's CPUs, else all), as a share of those CPUs' time: /proc/stat's
  per-CPU busy ticks less this process's own (and its reaped children's). On a pinned box a
  neighbour on other cores does not count and one on ours does, however many cores the host has.
- wait_share: the share of this process's threads' runnable time spent waiting for a CPU
  (/proc/self/task/*/schedstat): a neighbour taking our CPUs shows here on any host, and it is
  the one measure that stays meaningful where other processes are expected (a serving run's
  server, torchrun's other ranks).
- own_cpus: how many CPUs' worth this process used (a serving run's client, measured apart).
Linux only; elsewhere (or unreadable) the fields are None. A window shorter than MIN_TICKS of CPU
time has no other_share (tick granularity would decide it).
"""

from __future__ import annotations

import os
import time

MIN_TICKS = 10.0


def _affinity() -> list[int] | None:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _cpu_ticks(cpus: list[int] | None) -> tuple[float, float] | None:
    """(busy, total) ticks summed over `cpus` (None: the all-CPU line) from /proc/stat."""
    try:
        with open("/proc/stat") as fh:
            lines = [line.split() for line in fh if line.startswith("cpu")]
    except OSError:
        return None
    want = {"cpu"} if cpus is None else {f"cpu{c}" for c in cpus}
    busy = total = 0.0
    for parts in lines:
        if parts[0] in want:
            try:
                fields = [float(x) for x in parts[1:]]
            except ValueError:
                return None
            idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)      # idle + iowait
            total += sum(fields[:8])         # guest time is already inside user time
            busy += sum(fields[:8]) - idle
    return (busy, total) if total > 0 else None


def _own_ticks() -> float | None:
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return sum(float(x) for x in fields[11:15])
    except (OSError, ValueError, IndexError):
        return None


def _sched() -> dict[str, tuple[float, float]]:
    """Per thread: (ns on a CPU, ns waiting for one)."""
    out = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as fh:
                run, wait = fh.read().split()[:2]
            out[tid] = (float(run), float(wait))
        except (OSError, ValueError):
            continue
    return out


class CpuWindow:
    """start() ... stop() -> {"other_share", "wait_share", "own_cpus", "cpus", "window_s"}."""

    def __init__(self):
        self.cpus = _affinity()
        self.t0 = time.monotonic()
        self.ticks, self.own, self.sched = _cpu_ticks(self.cpus), _own_ticks(), _sched()

    def stop(self) -> dict:
        ticks, own, sched = _cpu_ticks(self.cpus), _own_ticks(), _sched()
        out = {"other_share": None, "wait_share": None, "own_cpus": None,
               "cpus": len(self.cpus) if self.cpus else os.cpu_count(), "window_s": round(time.monotonic() - self.t0, 4)}
        if ticks and self.ticks and own is not None and self.own is not None:
            total, busy, mine = ticks[1] - self.ticks[1], ticks[0] - self.ticks[0], own - self.own
            if total >= MIN_TICKS:
                out["other_share"] = round(max(0.0, min(1.0, (busy - mine) / total)), 4)
                out["own_cpus"] = round(mine / total * out["cpus"], 3) if out["cpus"] else None
        run = wait = 0.0
        for tid, (r, w) in sched.items():
            if tid in self.sched:
                run, wait = run + r - self.sched[tid][0], wait + w - self.sched[tid][1]
        if run + wait > 0:
            out["wait_share"] = round(max(0.0, min(1.0, wait / (run + wait))), 4)
        return out
