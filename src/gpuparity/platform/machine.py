"""The machine's state at the start and end of a run, the load while each result was timed, and
how contended the run was.

Recorded per snapshot: load, what other processes used of the CPUs over a short window, the CPU
frequency governor, the CPU tick counters (/proc/stat, this process's and its reaped children's
ticks), the boot id (runs on one boot of one day are one occasion: comparison/history.py), and
through the telemetry layer the GPU's clocks, temperature, the processes on the device and its
utilisation. Per timed window (each trial of each result: measure/load.py through the telemetry
sampler): the other processes' share of the CPUs the workload may use, its threads' wait for a
CPU, its own CPU use, and the processes on the GPU as the window opens and closes.
`busy_warnings` describes one snapshot; `mark_contention` grades the run and its results.

Graded, per result (the largest share over its trial windows):
- below WIDEN_SHARE (5%) of the CPUs: quiet;
- WIDEN_SHARE up to BUSY_SHARE (15%): busy: its comparisons keep their verdicts, on an interval
  widened by the slowdown such a load could cause (comparison/load.py);
- above BUSY_SHARE: contended: flagged "contended", no faster/slower verdict.
The share is other_share (other processes on our CPUs) or wait_share (our threads waiting for a
CPU), whichever is larger. A serving run's server and torchrun's other ranks are other processes
by design: there only wait_share counts, and a serving run's client CPU use is recorded apart
(client_cpus). Runs without window readings (older documents, no sampler) are graded by the
share over the whole run (start and end snapshots), on the same thresholds.
A run is contended (doc.machine.contention, and every result gets the flag) when:
- CPU: the median window share (or, without windows, the whole-run share) is above BUSY_SHARE;
- GPU: another process on the measured device at the start or end, or as a timed window opened
  or closed (a pid that is not ours; when the management library's pids are not in our pid
  namespace, as in some containers, only pids visible here count), or the device more than
  GPU_BUSY_PCT% utilised just before the run started. Serving runs skip these (the server is on
  the device).
A result whose timed windows read thermal or hardware-slowdown throttling in more than
THROTTLE_SHARE of the telemetry readings is flagged "contended" on its own (power capping is how
GPUs run at full load: it is part of the platform measured, not contention).
doc.machine.contention keeps the grade, the thresholds, the window shares' median and maximum,
and `loaded`: {key: share} of the results at WIDEN_SHARE or above, which compare reads.

Linux files read: /proc/loadavg, /proc/stat, /proc/self/stat, /proc/self/task/*/schedstat,
/proc/sys/kernel/random/boot_id, /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor.
Elsewhere the fields are None.
"""

from __future__ import annotations

import os
import time

BUSY_SHARE = 0.15          # above this share of the CPUs taken by others: contended, no verdict
WIDEN_SHARE = 0.05         # from this share up to BUSY_SHARE: busy, the interval is widened
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


def boot_id() -> str | None:
    """This boot's id (Linux), None elsewhere."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


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
        "boot_id": boot_id(),
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


def _windows(result: dict) -> list[dict]:
    """A result's per-trial-window telemetry (each trial's; a result of one trial: its own)."""
    tele = result.get("telemetry") or {}
    per = [t for t in tele.get("per_trial") or [] if isinstance(t, dict)]
    return per or ([tele] if tele else [])


def window_share(cpu, external: bool) -> float | None:
    """One window's graded share: the larger of other_share and wait_share; only wait_share where
    other processes are expected (`external`: a serving run's server, torchrun's ranks)."""
    if not isinstance(cpu, dict):
        return None
    names = ("wait_share",) if external else ("other_share", "wait_share")
    got = [float(cpu[n]) for n in names if isinstance(cpu.get(n), (int, float)) and 0 <= cpu[n] <= 1]
    return max(got) if got else None


def result_load(result: dict, external: bool = False) -> float | None:
    """The largest graded share over a result's timed windows (None: no window was read)."""
    got = [s for t in _windows(result) if (s := window_share(t.get("cpu"), external)) is not None]
    return max(got) if got else None


def _window_gpu(result: dict, ours: set[int]) -> list[str]:
    """Other processes on the device as one of the result's timed windows opened or closed."""
    out = []
    for t in _windows(result):
        use = t.get("gpu_use") if isinstance(t.get("gpu_use"), dict) else {}
        for when in ("start", "end"):
            found = gpu_contention({"gpu_use": use.get(when)}, "a timed window", ours, False)
            out += [r for r in found if r not in out]
    return out


def _expects_others(result: dict, external: bool, distributed: bool) -> bool:
    """Whether other processes are part of what a result measures (a serving result's server,
    torchrun's other ranks): then only its threads' wait for a CPU grades it."""
    return distributed or (external and result.get("category") == "serving")


def grade(share: float | None) -> str:
    """quiet / busy / contended for a share of the CPUs (see the module notes)."""
    if share is None or share < WIDEN_SHARE:
        return "quiet"
    return "busy" if share <= BUSY_SHARE else "contended"


def assess(doc: dict, external: bool = False, distributed: bool = False) -> dict:
    """Whether the run was contended, how busy each result's windows were, and why (see the
    module notes)."""
    import statistics

    machine = doc.get("machine") or {}
    start, end = machine.get("start"), machine.get("end")
    share = run_cpu_share(start, end)
    only_wait = external or distributed
    ok = [r for r in doc.get("results") or [] if r.get("status") == "ok"]
    loads = {r.get("key"): x for r in ok if (x := result_load(r, _expects_others(r, external, distributed))) is not None}
    shares = [s for r in ok for t in _windows(r)
              if (s := window_share(t.get("cpu"), _expects_others(r, external, distributed))) is not None]
    reasons = []
    what = "its threads waited for a CPU" if only_wait and all(
        _expects_others(r, external, distributed) for r in ok) else "other processes used"
    if shares and statistics.median(shares) > BUSY_SHARE:
        reasons.append(f"{what} {100 * statistics.median(shares):.0f}% of the CPUs it could use in the median timed "
                       f"window (no verdict above {100 * BUSY_SHARE:.0f}%)")
    elif not shares and share is not None and share > BUSY_SHARE and not only_wait:
        reasons.append(f"other processes used {100 * share:.0f}% of the CPUs during the run "
                       f"(no verdict above {100 * BUSY_SHARE:.0f}%)")
    windows_gpu = {}
    if not external:
        ours = own_pids(distributed)
        reasons += gpu_contention(start, "start", ours, True) + gpu_contention(end, "end", ours, False)
        windows_gpu = {r.get("key"): why for r in ok if (why := _window_gpu(r, ours))}
        for why in dict.fromkeys(w for ws in windows_gpu.values() for w in ws):
            reasons.append(why)
    throttled = {r.get("key"): why for r in doc.get("results") or [] if (why := result_throttle(r))}
    if not shares and share is not None and not only_wait and not loads:
        loads = {r.get("key"): share for r in ok}          # no windows: the whole run's share for each
    contended = bool(reasons)
    top = max(loads.values(), default=None)
    return {"contended": contended, "reasons": reasons,
            "grade": "contended" if contended else grade(top),
            "other_cpu_share": round(share, 4) if share is not None else None, "threshold": BUSY_SHARE,
            "bands": {"widen": WIDEN_SHARE, "hold": BUSY_SHARE},
            "windows": {"n": len(shares), "median": round(statistics.median(shares), 4) if shares else None,
                        "max": round(max(shares), 4) if shares else None,
                        "measure": "wait_share" if only_wait else "max(other_share, wait_share)"},
            "client_cpus": _client_cpus([r for r in ok if r.get("category") == "serving"]) if external else None,
            "loaded": {k: round(v, 4) for k, v in loads.items() if v >= WIDEN_SHARE},
            "checked": [c for c, skip in (("cpu", False), ("gpu", external)) if not skip],
            "throttled_results": len(throttled)}


def _client_cpus(results: list[dict]) -> float | None:
    """The most CPUs' worth a serving run's client used in a timed window (measured apart)."""
    got = [float(t["cpu"]["own_cpus"]) for r in results for t in _windows(r)
           if isinstance(t.get("cpu"), dict) and isinstance(t["cpu"].get("own_cpus"), (int, float))]
    return round(max(got), 3) if got else None


def mark_contention(doc: dict, external: bool = False, distributed: bool = False) -> dict:
    """Judge the run (assess), record it in doc.machine.contention and flag its results: all of
    them when the run was contended, else those whose windows were contended (load above
    BUSY_SHARE, another process on the GPU) or that were throttled (see the module notes)."""
    found = assess(doc, external, distributed)
    doc.setdefault("machine", {})["contention"] = found
    ours = own_pids(distributed) if not external else set()
    for r in doc.get("results") or []:
        if r.get("status") != "ok":
            continue
        hot = grade(result_load(r, _expects_others(r, external, distributed))) == "contended" or (
            not external and _window_gpu(r, ours))
        if found["contended"] or hot or result_throttle(r):
            r["flags"] = sorted(set(r.get("flags") or []) | {"contended"})
    return found


def load_text(found: dict) -> str | None:
    """'CPU load while timed: median 2%, max 7% of the CPUs it could use (widened from 5%, no
    verdict above 15%)' from doc.machine.contention; None where nothing was read."""
    w = found.get("windows") if isinstance(found.get("windows"), dict) else {}
    bands = found.get("bands") if isinstance(found.get("bands"), dict) else {}
    widen, hold = bands.get("widen", WIDEN_SHARE), bands.get("hold", found.get("threshold", BUSY_SHARE))
    rule = f"intervals widened from {100 * widen:.0f}%, no verdict above {100 * hold:.0f}%"
    if isinstance(w.get("max"), (int, float)):
        who = "its threads' wait for a CPU" if w.get("measure") == "wait_share" else "CPU load by others"
        text = (f"{who} while timed: median {100 * w['median']:.0f}%, max {100 * w['max']:.0f}% of the CPUs it "
                f"could use over {w.get('n')} window(s) ({rule})")
    elif isinstance(found.get("other_cpu_share"), (int, float)):
        text = f"CPU load by others over the run: {100 * found['other_cpu_share']:.0f}% of the CPUs ({rule})"
    else:
        return None
    if isinstance(found.get("client_cpus"), (int, float)):
        text += f"; the serving client used up to {found['client_cpus']:g} CPUs"
    return text


def contention_lines(doc: dict) -> list[str]:
    """What `run` prints about contention: the load while timed, always; then what it means."""
    found = (doc.get("machine") or {}).get("contention") or {}
    out = [text] if (text := load_text(found)) else []
    if found.get("contended"):
        out.append("contended: " + "; ".join(found.get("reasons") or []) + ". Comparisons with this run give no "
                   "faster/slower verdict: rerun it on a quiet machine")
    elif found.get("loaded"):
        out.append(f"{len(found['loaded'])} result(s) timed beside other load ({100 * WIDEN_SHARE:.0f}-"
                   f"{100 * BUSY_SHARE:.0f}% of the CPUs, or more: flagged contended): their comparisons' intervals "
                   "are widened for it")
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
