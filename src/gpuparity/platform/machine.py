"""The machine's state at the start and end of a run: load, what other processes use of the CPUs,
the CPU frequency governor, and (through the telemetry sampler) GPU clocks and temperature.
A benchmark on a busy machine measures the neighbours too: `busy_warnings` says so.

Linux files read: /proc/loadavg, /proc/stat (all CPUs' busy time), /proc/self/stat (ours),
/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor. Elsewhere the fields are None.
"""

from __future__ import annotations

import os
import time

BUSY_SHARE = 0.25          # other processes using more than this share of the CPUs: "busy"


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


def snapshot(sampler=None, window_s: float = 0.3) -> dict:
    """The state now; `sampler` (measure.telemetry) adds GPU clocks and temperature if it can."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    state = {
        "time": time.time(), "loadavg": load, "cpus": os.cpu_count(),
        "other_cpu_share": other_cpu_share(window_s), "governors": governors(),
    }
    read = getattr(sampler, "snapshot", None)
    if callable(read):
        try:
            state["gpu"] = read()
        except Exception as exc:  # noqa: BLE001 - telemetry must never stop a run
            state["gpu"] = {"error": str(exc)[:200]}
    return state


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
