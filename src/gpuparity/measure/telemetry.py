"""Power / clock / temperature telemetry around each measured window.

    sampler = open_sampler(fingerprint)      # NVML, amdsmi, CPU RAPL, or a NullSampler saying why not
    sampler.describe() -> dict                # recorded in the fingerprint
    sampler.start()                           # background thread, default 20 Hz, monotonic times
    sampler.snapshot() -> list[dict] | None   # clocks, temperature, power and throttle right now
    sampler.device_use() -> list[dict] | None # per device: pids on it, utilisation % (platform/machine.py)
    sampler.stop(result, marks, windows) -> dict   # result["telemetry"]

`windows` are the busy intervals of the timed samples on the monotonic clock (measure.loop maps
each sample's device interval there): energy is integrated over exactly those intervals (no
synchronisation or host gaps between batches) and divided by their invocations (samples x reps).
`marks` (older callers: the monotonic ns at which each timed block ended) give one window from
the start of the first block to the last mark. With neither, the window is start()..stop() and
the invocation count comes from result["info"]["invocations"] when the workload gives one.

Keys of the telemetry dict (read by compare and report): method, valid, reasons, mean_power_w,
energy_j, energy_counter_j, counter_agreement ((integrated - counter) / counter), energy_per_invocation_j,
j_per_tflop / j_per_token / j_per_gb, tflops_per_w, sample_hz, n_samples (fewest over devices),
throttled_share (the driver's clock-limiting reasons, see measure.samplers) and throttle_reasons
(share of readings per reason), max_clock_mhz and mean_clock_mhz (SM clock observed in the window),
busy_s (the integrated busy time), and "energy": "unavailable: <reason>" when nothing is measured.
Around the same window, for platform/machine.py's contention grading: "cpu" (measure/load.py: the
other processes' share of this process's CPUs, its threads' wait for a CPU, its own CPU use) and
"gpu_use" ({"start", "end"}: device_use at the window's two ends, the processes on the device
and its utilisation, where the source reads them).
"""

from __future__ import annotations

import os
import threading
import time

from gpuparity.measure.energy import DeviceTrace, Rules, Sample, analyze
from gpuparity.measure.samplers import AmdsmiSource, NvmlSource, RaplSource, Unavailable
from gpuparity.measure.throttle import DIP_REASONS, throttle_dip  # noqa: F401 - the loop's and compare's names

DEFAULT_HZ = 20.0
TELEMETRY_KEYS = ("mean_power_w", "energy_j", "energy_counter_j", "counter_agreement", "energy_per_invocation_j",
                  "tflops_per_w", "sample_hz", "n_samples", "throttled_share", "throttle_reasons", "max_clock_mhz",
                  "mean_clock_mhz")
STATE_KEYS = ("sm_mhz", "mem_mhz", "temp_c", "power_w", "throttle", "throttle_reasons")


class NullSampler:
    """Measures nothing and says why."""

    method = "none"

    def __init__(self, reason: str):
        self.reason = reason

    def describe(self) -> dict:
        return {"method": "none", "reason": self.reason}

    def start(self) -> None:
        from gpuparity.measure.load import CpuWindow

        self._cpu = CpuWindow()

    def snapshot(self) -> list[dict] | None:
        return None

    def device_use(self) -> list[dict] | None:
        return None

    def stop(self, result: dict | None = None, marks: list[int] | None = None,
             windows: list[tuple[float, float]] | None = None) -> dict:
        out = {"method": "none", "valid": False, "reasons": [self.reason], **dict.fromkeys(TELEMETRY_KEYS)}
        out["energy"] = f"unavailable: {self.reason}"
        cpu = getattr(self, "_cpu", None)
        if cpu is not None:
            out["cpu"] = cpu.stop()
            self._cpu = None
        return out


class ThreadedSampler:
    """Samples every device of a source on a background thread between start() and stop()."""

    def __init__(self, source, rate_hz: float = DEFAULT_HZ, rules: Rules | None = None):
        self.source = source
        self.method = source.method
        self.rate_hz = rate_hz
        self.rules = rules or Rules(rate_hz=rate_hz)
        self._traces: list[DeviceTrace] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._t_start = self._t_stop = 0.0

    def describe(self) -> dict:
        return {"method": self.method, "rate_hz": self.rate_hz, "devices": self.source.devices,
                **self.source.describe()}

    def _sample_all(self) -> None:
        for k, trace in enumerate(self._traces):
            t0 = time.monotonic_ns()
            s = self.source.read(k)
            s.t = (t0 + time.monotonic_ns()) / 2e9  # the reading's time: the middle of the call
            trace.samples.append(s)

    def _run(self) -> None:
        period = 1.0 / self.rate_hz
        due = time.monotonic() + period
        while not self._stop.wait(max(0.0, due - time.monotonic())):
            self._sample_all()
            due += period
            if due < time.monotonic():  # fell behind (a busy CPU): skip, don't burst
                due = time.monotonic() + period

    def start(self) -> None:
        if self._thread is not None:
            self.stop()
        self._traces = [DeviceTrace(index=d["index"], name=d.get("name", ""), wrap_j=d.get("wrap_j"),
                                    max_sm_mhz=d.get("max_sm_mhz")) for d in self.source.devices]
        self._stop.clear()
        from gpuparity.measure.load import CpuWindow

        self._use_start = self.device_use()     # co-tenants on the device as the window opens
        self._cpu = CpuWindow()
        self._t_start = time.monotonic()
        self._sample_all()  # a reading at the window's very start
        self._thread = threading.Thread(target=self._run, name="gpuparity-telemetry", daemon=True)
        self._thread.start()

    def snapshot(self) -> list[dict] | None:
        """Each device's clocks, temperature, power and throttle reasons now (None if it reads none)."""
        out = []
        sources = getattr(self.source, "throttle_sources", None) or []
        for k in range(len(self.source.devices)):
            s = self.source.read(k)
            state = {key: getattr(s, key) for key in STATE_KEYS if getattr(s, key) not in (None, ())}
            if state and k < len(sources) and sources[k]:
                state["throttle_source"] = sources[k]     # which rule reads this device (measure.throttle)
            out.append({k: list(v) if isinstance(v, tuple) else v for k, v in state.items()})   # JSON-shaped
        return out if any(out) else None

    def device_use(self) -> list[dict] | None:
        """Each device's processes (pids) and utilisation (%) now, where the source reads them
        (NVML, amdsmi; None elsewhere): platform/machine.py judges contention from them."""
        read = getattr(self.source, "use", None)
        if not callable(read):
            return None
        out = []
        for k in range(len(self.source.devices)):
            try:
                out.append(read(k))
            except Exception as exc:  # noqa: BLE001 - telemetry must never stop a run
                out.append({"error": f"{type(exc).__name__}: {str(exc)[:200]}"})
        return out

    def stop(self, result: dict | None = None, marks: list[int] | None = None,
             windows: list[tuple[float, float]] | None = None) -> dict:
        if self._thread is None:
            return NullSampler("sampler was not started").stop()
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._sample_all()  # and one at its very end
        self._t_stop = time.monotonic()
        load = {"cpu": self._cpu.stop(), "gpu_use": {"start": self._use_start, "end": self.device_use()}}
        try:
            return {**summarize(self.method, self._traces, self.rules, result, marks, self._t_start, self._t_stop,
                                windows), **load}
        except Exception as exc:  # a summary bug must not cost the measurement
            out = NullSampler(f"telemetry summary failed: {type(exc).__name__}: {exc}").stop()
            return dict(out, method=self.method, **load)


def window(result: dict | None, marks: list[int] | None, t_start: float, t_stop: float,
           windows: list[tuple[float, float]] | None = None
           ) -> tuple[float, float, int | None, list[tuple[float, float]] | None]:
    """(t0, t1, invocations, busy intervals or None): the timed samples where windows or marks
    allow it, else the whole sampled window."""
    samples = (result or {}).get("samples") or []
    info = (result or {}).get("info") or {}
    reps = info.get("reps_per_sample")
    if windows and reps and samples:
        busy = [(max(a, t_start), min(b, t_stop)) for a, b in windows if min(b, t_stop) > max(a, t_start)]
        if busy:
            return busy[0][0], busy[-1][1], len(samples) * reps, busy
    if marks and reps and len(marks) == len(samples):
        t1 = marks[-1] / 1e9
        t0 = marks[0] / 1e9 - samples[0] * reps
        return max(t0, t_start), t1, len(samples) * reps, None
    return t_start, t_stop, info.get("invocations"), None


def summarize(method: str, traces: list[DeviceTrace], rules: Rules, result: dict | None,
              marks: list[int] | None, t_start: float, t_stop: float,
              windows: list[tuple[float, float]] | None = None) -> dict:
    t0, t1, invocations, busy = window(result, marks, t_start, t_stop, windows)
    a = analyze(traces, t0, t1, rules, expected_devices=len(traces), intervals=busy)
    out = {"method": method, "valid": a["valid"], "reasons": a["reasons"],
           **{k: a.get(k) for k in TELEMETRY_KEYS}, "window_s": a["window_s"], "busy_s": a["busy_s"],
           "intervals": len(busy) if busy else 1, "invocations": invocations, "max_temp_c": a.get("max_temp_c")}
    if method == "rapl":
        out["counter_agreement"] = None  # energy *is* the counter: nothing to cross-check
    work = (result or {}).get("work") or {}
    if out["energy_j"] is not None and invocations:
        e = out["energy_per_invocation_j"] = out["energy_j"] / invocations
        if work.get("flop") and e > 0:
            out["j_per_tflop"] = e / (work["flop"] / 1e12)
            out["tflops_per_w"] = (work["flop"] / 1e12) / e  # TFLOP/s per W = TFLOP per J
        if work.get("tokens"):
            out["j_per_token"] = e / work["tokens"]
        if work.get("bytes"):
            out["j_per_gb"] = e / (work["bytes"] / 1e9)
    if out["energy_j"] is None:
        out["energy"] = "unavailable: " + ("; ".join(a["reasons"]) or "no readings")
    out["devices"] = [{k: v for k, v in d.items() if k != "reasons"} for d in a["devices"]]
    out["trace"] = _compact(traces, t0, t1)
    return out


def _compact(traces: list[DeviceTrace], t0: float, t1: float) -> dict:
    """The raw samples, times relative to the window start, for later inspection."""
    cols = ("t_s", "power_w", "energy_j", "sm_mhz", "mem_mhz", "temp_c", "throttle")

    def row(s: Sample) -> list:
        vals = [round(s.t - t0, 4), *(getattr(s, c) for c in cols[1:])]
        return [round(v, 4) if isinstance(v, float) else v for v in vals]

    return {"columns": list(cols), "window": [0.0, round(t1 - t0, 4)],
            "devices": [{"index": tr.index, "rows": [row(s) for s in tr.samples]} for tr in traces]}


# -- choosing a sampler --------------------------------------------------------------------
def _local_index() -> int:
    """The torch device this process measures: LOCAL_RANK under torchrun, else 0."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def open_sampler(fingerprint: dict, rate_hz: float | None = None):
    """The sampler for this machine's measured device, or a NullSampler with the reason."""
    rate = rate_hz or float(os.environ.get("GPUPARITY_POWER_HZ", DEFAULT_HZ))
    backend = fingerprint.get("backend", "cpu")
    try:
        if backend in ("cuda", "rocm"):
            from gpuparity.measure.device_map import refs

            cls = NvmlSource if backend == "cuda" else AmdsmiSource
            source = cls(devices=[refs(_local_index(), backend)])
        else:
            source = RaplSource(os.environ.get("GPUPARITY_POWERCAP_ROOT", "/sys/class/powercap"))
    except Unavailable as exc:
        return NullSampler(str(exc))
    except Exception as exc:  # noqa: BLE001 - a library answering out of shape must not stop the run
        return NullSampler(f"telemetry could not start: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
    return ThreadedSampler(source, rate_hz=rate)
