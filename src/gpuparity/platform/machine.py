"""The machine's state at the start and end of a run, and whether the run was contended.

Recorded per snapshot: load, what other processes used of the CPUs over a short window, the CPU
frequency governor, the CPU tick counters (/proc/stat, this process's and its reaped children's
ticks), and through the telemetry layer the GPU's clocks, temperature, the processes on the device
and its utilisation. `busy_warnings` describes one snapshot; `mark_contention` judges the run.

A run is contended (doc.machine.contention, and every result gets the flag "contended") when:
- CPU: other processes kept more than BUSY_SHARE of all CPUs busy over the run: /proc/stat busy
  ticks between the start and end snapshots, less this process's and its reaped children's
  (worker processes are waited for before the end snapshot); a benchmark on a busy machine
  measures the neighbours too. An average over the run: a burst much shorter than the run is
  diluted. Skipped for torchrun jobs (the other ranks are ours) and serving runs (the server is
  another process by design; its CPU use is part of what is measured).
- GPU: another process on the measured device at the start or end (a pid that is not ours; when
  the management library's pids are not in our pid namespace, as in some containers, only pids
  visible here count), or the device more than GPU_BUSY_PCT% utilised just before the run started.
  Serving runs skip these (the server is on the device).
A result whose timed windows read thermal or hardware-slowdown throttling in more than
THROTTLE_SHARE of the telemetry readings is flagged "contended" on its own (power capping is how
GPUs run at full load: it is part of the platform measured, not contention).
Comparisons give no faster/slower verdict with a contended side (comparison/compare.py).

Linux files read: /proc/loadavg, /proc/stat (all CPUs' busy time), /proc/self/stat (ours),
/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor. Elsewhere the fields are None.
"""

from __future__ import annotations

import os
import time

BUSY_SHARE = 0.25          # other processes using more than this share of the CPUs: "busy"
GPU_BUSY_PCT = 20.0        # device utilisation (%) just before the run above this: someone else uses it
THROTTLE_SHARE = 0.10      # share of a result's timed telemetry readings with a contending throttle reason
CONTENDING_THROTTLE = ("thermal", "hw_slowdown")


def _cpu_times() -> tuple[float, float] | None:
    """(busy, total) clock ticks of all CPUs from /proc/stat."""
    try:
        with open("/proc/stat") as fh:
            fields = [float(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)     # idle + iowait
    return sum(fields) - idle, sum(fields)


def _own_ticks() -> float | None:
    """This process's and its waited-for children's CPU ticks (utime stime cutime cstime)."""
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return sum(float(x) for x in fields[11:15])
    except (OSError, ValueError, IndexError):
        return None


def other_cpu_share(window_s: float = 0.3) -> float | None:
    """Share of all CPUs that other processes kept busy over a short window (0..1)."""
    a, own_a = _cpu_times(), _own_ticks()
    if a is None or own_a is None:
        return None
    time.sleep(window_s)
    b, own_b = _cpu_times(), _own_ticks()
    if b is None or own_b is None or b[1] <= a[1]:
        return None
    busy = (b[0] - a[0]) - (own_b - own_a)
    return max(0.0, min(1.0, busy / (b[1] - a[1])))


def governors() -> list[str]:
    out = set()
    base = "/sys/devices/system/cpu"
    try:
        cpus = [d for d in os.listdir(base) if d.startswith("cpu") and d[3:].isdigit()]
    except OSError:
        return []
    for cpu in cpus:
        try:
            with open(os.path.join(base, cpu, "cpufreq", "scaling_governor")) as fh:
                out.add(fh.read().strip())
        except OSError:
            continue
    return sorted(out)


def cpu_ticks() -> dict | None:
    """All CPUs' busy and total ticks, and this process's (with its reaped children's), now."""
    times, own = _cpu_times(), _own_ticks()
    if times is None or own is None:
        return None
    return {"busy": times[0], "total": times[1], "own": own}


def snapshot(sampler=None, window_s: float = 0.3) -> dict:
    """The state now; `sampler` (measure.telemetry) adds GPU clocks and temperature, and the
    processes on the device and its utilisation, where it can read them."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    state = {
        "time": time.time(), "loadavg": load, "cpus": os.cpu_count(),
        "other_cpu_share": other_cpu_share(window_s), "governors": governors(), "cpu_ticks": cpu_ticks(),
    }
    for name, method in (("gpu", "snapshot"), ("gpu_use", "device_use")):
        read = getattr(sampler, method, None)
        if callable(read):
            try:
                state[name] = read()
            except Exception as exc:  # noqa: BLE001 - telemetry must never stop a run
                state[name] = {"error": str(exc)[:200]}
    return state


def run_cpu_share(start: dict | None, end: dict | None) -> float | None:
    """Share of all CPUs that other processes kept busy between two snapshots (0..1)."""
    a, b = (start or {}).get("cpu_ticks"), (end or {}).get("cpu_ticks")
    if not isinstance(a, dict) or not isinstance(b, dict):
        return None
    try:
        total = float(b["total"]) - float(a["total"])
        other = (float(b["busy"]) - float(a["busy"])) - (float(b["own"]) - float(a["own"]))
    except (KeyError, TypeError, ValueError):
        return None
    return max(0.0, min(1.0, other / total)) if total > 0 else None


def own_pids(distributed: bool = False) -> set[int]:
    """Processes that are this run: this one, and under torchrun its sibling ranks."""
    pids = {os.getpid()}
    if distributed:
        parent = os.getppid()
        try:
            entries = [e for e in os.listdir("/proc") if e.isdigit()]
        except OSError:
            entries = []
        for e in entries:
            try:
                with open(f"/proc/{e}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == parent:
                        pids.add(int(e))
            except (OSError, ValueError, IndexError):
                continue
    return pids


def gpu_contention(state: dict | None, when: str, ours: set[int], before_start: bool) -> list[str]:
    """Reasons a snapshot shows the measured GPU in use by someone else."""
    out = []
    use = (state or {}).get("gpu_use")
    for k, dev in enumerate(use if isinstance(use, list) else []):
        if not isinstance(dev, dict):
            continue
        pids = [p for p in dev.get("pids") or [] if isinstance(p, int)]
        same_namespace = any(p in ours for p in pids)
        others = [p for p in pids if p not in ours and (same_namespace or os.path.exists(f"/proc/{p}"))]
        if others:
            shown = ", ".join(str(p) for p in others[:5]) + (" ..." if len(others) > 5 else "")
            out.append(f"{len(others)} other process(es) on GPU {k} at {when} (pid {shown})")
        util = dev.get("util_pct")
        if before_start and isinstance(util, (int, float)) and util > GPU_BUSY_PCT:
            out.append(f"GPU {k} {util:.0f}% busy just before the run started")
    return out


def result_throttle(result: dict) -> list[str]:
    """Contending throttle reasons (thermal, hw slowdown) active in more than THROTTLE_SHARE of a
    result's timed telemetry readings (any of its trials)."""
    tele = result.get("telemetry") or {}
    found = set()
    for t in [tele, *(tele.get("per_trial") or [])]:
        shares = (t or {}).get("throttle_reasons") if isinstance(t, dict) else None
        if isinstance(shares, dict):
            found.update(r for r in CONTENDING_THROTTLE
                         if isinstance(shares.get(r), (int, float)) and shares[r] > THROTTLE_SHARE)
    return sorted(found)


def assess(doc: dict, external: bool = False, distributed: bool = False) -> dict:
    """Whether the run was contended, and why (see the module notes)."""
    machine = doc.get("machine") or {}
    start, end = machine.get("start"), machine.get("end")
    share = run_cpu_share(start, end)
    reasons = []
    if share is not None and share > BUSY_SHARE and not (external or distributed):
        reasons.append(f"other processes used {100 * share:.0f}% of the CPUs during the run "
                       f"(threshold {100 * BUSY_SHARE:.0f}%)")
    if not external:
        ours = own_pids(distributed)
        reasons += gpu_contention(start, "start", ours, True) + gpu_contention(end, "end", ours, False)
    throttled = {r.get("key"): why for r in doc.get("results") or [] if (why := result_throttle(r))}
    return {"contended": bool(reasons), "reasons": reasons,
            "other_cpu_share": round(share, 4) if share is not None else None, "threshold": BUSY_SHARE,
            "checked": [c for c, skip in (("cpu", external or distributed), ("gpu", external)) if not skip],
            "throttled_results": len(throttled)}


def mark_contention(doc: dict, external: bool = False, distributed: bool = False) -> dict:
    """Judge the run (assess), record it in doc.machine.contention and flag its results: all of
    them when the run was contended, else those throttled (see the module notes)."""
    found = assess(doc, external, distributed)
    doc.setdefault("machine", {})["contention"] = found
    for r in doc.get("results") or []:
        if r.get("status") == "ok" and (found["contended"] or result_throttle(r)):
            r["flags"] = sorted(set(r.get("flags") or []) | {"contended"})
    return found


def contention_lines(doc: dict) -> list[str]:
    """What `run` prints about contention."""
    found = (doc.get("machine") or {}).get("contention") or {}
    out = []
    if found.get("contended"):
        out.append("contended: " + "; ".join(found.get("reasons") or []) + ". Comparisons with this run give no "
                   "faster/slower verdict: rerun it on a quiet machine")
    if found.get("throttled_results"):
        out.append(f"{found['throttled_results']} result(s) thermally throttled or slowed down by the hardware "
                   "while timed: flagged contended, their comparisons are at most inconclusive")
    return out


def busy_warnings(state: dict | None, when: str) -> list[str]:
    """Human-readable warnings for a snapshot (empty when the machine looked quiet)."""
    if not state:
        return []
    out = []
    share = state.get("other_cpu_share")
    if isinstance(share, (int, float)) and share > BUSY_SHARE:
        out.append(f"machine busy at {when}: other processes used {100 * share:.0f}% of the CPUs")
    govs = state.get("governors") or []
    if any(g in ("powersave", "conservative") for g in govs):
        out.append(f"CPU frequency governor at {when}: {', '.join(govs)} (clocks vary; 'performance' is steadier)")
    return out
