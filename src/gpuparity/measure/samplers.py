"""Readers of power, energy counters, clocks, temperature and throttle reasons, one per vendor.

Each source opens its library once, probes which readings the device supports, and then
`read(k)` returns one `Sample` (without its time) for its k-th device; a reading that fails
is None for that sample. Opening raises `Unavailable` with the reason when nothing can be read.

- NVML (nvidia-ml-py, `import pynvml`): instant power field where the driver has it (the plain
  power reading is a 1 s average on Ampere and newer), else nvmlDeviceGetPowerUsage (mW);
  total energy counter (mJ, Volta+); SM / memory clocks; temperature; clock event reasons.
- amdsmi: socket power (W), energy accumulator * counter_resolution (uJ), GFX / memory clocks,
  hotspot temperature, gpu_metrics throttle_status. rocm-smi is never used for power: it has
  reported 0-2 W on MI325X where amdsmi reads 450-670 W.
- RAPL (powercap sysfs): CPU package energy_uj, wrapping at max_energy_range_uj.

Every reading passes `plausible()`: the all-ones fill values libraries use for "not supported"
(amdsmi's UINT16/32/64_MAX), and values outside a physical range, become None, never a number.
Throttling is the driver's own reasons, decoded into power / current / thermal / hw-slowdown.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable

from gpuparity.measure.energy import Sample


class Unavailable(Exception):
    """No usable reading on this machine; the message says why."""


def _probe(fn: Callable[[], Any]) -> bool:
    """Whether a reading works on this device (once, at open)."""
    try:
        return fn() is not None
    except Exception:
        return False


SENTINELS = (0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)   # "not supported" fill values
RANGES = {   # what a reading can physically be; anything else is a fill value or a glitch
    "power_w": (0.0, 5000.0), "energy_j": (0.0, 1e15), "sm_mhz": (1.0, 10000.0), "mem_mhz": (1.0, 20000.0),
    "temp_c": (-40.0, 150.0),
}


def _num(v) -> float | None:
    """amdsmi reports unsupported values as 'N/A' strings (or dicts with a 'value') or as all-ones
    fill values."""
    if isinstance(v, dict):
        v = v.get("value")
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    if isinstance(v, int) and v in SENTINELS:
        return None
    return float(v) if not isinstance(v, int) or abs(v) < 2**63 else None


def plausible(name: str, value):
    """The reading, or None when it is a fill value or outside the physical range for `name`."""
    if value is None or name not in RANGES:
        return value
    v = _num(value)
    lo, hi = RANGES[name]
    return v if v is not None and lo <= v <= hi else None


# -- NVIDIA --------------------------------------------------------------------------------
def field_value(fv) -> float | None:
    """The number in an nvmlFieldValue_t, None when the driver returned an error for it."""
    if fv.nvmlReturn != 0:  # NVML_SUCCESS
        return None
    member = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")[fv.valueType]
    return float(getattr(fv.value, member))


# nvmlClocksEventReasons bits that limit clocks; idle (0x1), application clock settings (0x2),
# sync boost (0x10) and display clock settings (0x100) are not throttling.
NVML_REASONS = {0x4: "power", 0x80: "power", 0x8: "hw_slowdown", 0x20: "thermal", 0x40: "thermal"}


def nvml_reasons(bits: int) -> tuple[str, ...]:
    """Names of the clock-limiting reasons in an NVML clock event reason mask."""
    if not isinstance(bits, int) or bits in SENTINELS:
        return ()
    return tuple(sorted({name for bit, name in NVML_REASONS.items() if bits & bit}))


def nvml_throttled(bits: int) -> bool:
    """Whether a clock-limiting reason (power cap, thermal or hardware slowdown) is active."""
    return bool(nvml_reasons(bits))


class NvmlSource:
    method = "nvml"

    def __init__(self, indices: list[int] | None = None, bus_ids: list[str] | None = None):
        try:
            import pynvml
        except ImportError as exc:
            raise Unavailable("nvidia-ml-py not installed (pip install 'gpuparity[nvidia]')") from exc
        try:
            pynvml.nvmlInit()
        except Exception as exc:
            raise Unavailable(f"NVML init failed: {exc}") from exc
        self.nv = nv = pynvml
        try:
            if bus_ids:
                self.handles = [nv.nvmlDeviceGetHandleByPciBusId(b) for b in bus_ids]
            else:
                self.handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in (indices or [0])]
        except Exception as exc:
            raise Unavailable(f"NVML device lookup failed: {exc}") from exc
        self.devices = []
        self._readers: list[dict[str, Callable[[], Any]]] = []
        self.power_source = "field NVML_FI_DEV_POWER_INSTANT"
        reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nv.nvmlDeviceGetCurrentClocksThrottleReasons
        for h in self.handles:
            readers = {
                "power_w": lambda h=h: self._instant_power(h),
                "energy_j": lambda h=h: nv.nvmlDeviceGetTotalEnergyConsumption(h) / 1e3,
                "sm_mhz": lambda h=h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                "mem_mhz": lambda h=h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
                "temp_c": lambda h=h: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
                "throttle_reasons": lambda h=h: nvml_reasons(reasons_fn(h)),
            }
            if not _probe(readers["power_w"]):
                readers["power_w"] = lambda h=h: nv.nvmlDeviceGetPowerUsage(h) / 1e3
                self.power_source = "nvmlDeviceGetPowerUsage (averaged on Ampere and newer)"
            self._readers.append({k: fn for k, fn in readers.items() if _probe(fn)})
            dev = {"index": nv.nvmlDeviceGetIndex(h), "name": _s(nv.nvmlDeviceGetName(h)), "wrap_j": None}
            try:
                dev["max_sm_mhz"] = nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)
            except Exception:
                dev["max_sm_mhz"] = None
            self.devices.append(dev)
        if not any("power_w" in r or "energy_j" in r for r in self._readers):
            raise Unavailable("NVML reports neither power nor energy for this device")

    def _instant_power(self, h) -> float:
        nv = self.nv
        mw = field_value(nv.nvmlDeviceGetFieldValues(h, [nv.NVML_FI_DEV_POWER_INSTANT])[0])
        if not mw:
            raise RuntimeError("NVML_FI_DEV_POWER_INSTANT unsupported or 0")
        return mw / 1e3

    def describe(self) -> dict:
        return {"readings": [sorted(r) for r in self._readers], "power_source": self.power_source}

    def use(self, k: int) -> dict:
        """Processes on device k (pids; None when NVML cannot list them) and its utilisation (%)."""
        nv, h = self.nv, self.handles[k]
        pids, listed = set(), False
        for name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            try:
                pids.update(int(p.pid) for p in getattr(nv, name)(h))
                listed = True
            except Exception:
                continue
        try:
            util = float(nv.nvmlDeviceGetUtilizationRates(h).gpu)
        except Exception:
            util = None
        return {"pids": sorted(pids) if listed else None, "util_pct": util}

    def read(self, k: int) -> Sample:
        return _read_all(self._readers[k])

    def close(self) -> None:
        try:
            self.nv.nvmlShutdown()
        except Exception:
            pass


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _read_all(readers: dict[str, Callable[[], Any]]) -> Sample:
    s = Sample(t=0.0)
    for key, fn in readers.items():
        try:
            value = fn()
        except Exception:
            continue
        if key == "throttle_reasons":
            if value is not None:
                s.throttle_reasons, s.throttle = tuple(value), bool(value)
        else:
            setattr(s, key, plausible(key, value))
    return s


# -- AMD -----------------------------------------------------------------------------------
def amd_power_w(info: dict) -> float | None:
    """Socket power (W) from amdsmi_get_power_info: the current reading, else the average."""
    for key in ("current_socket_power", "socket_power", "average_socket_power"):
        v = _num(info.get(key))
        if v is not None and v > 0:
            return v
    return None


def amd_energy_j(info: dict) -> float | None:
    """amdsmi_get_energy_count: accumulator x counter_resolution (uJ) -> J."""
    acc = _num(info.get("energy_accumulator", info.get("power")))  # 'power' before ROCm 6.1
    res = _num(info.get("counter_resolution"))
    return acc * res / 1e6 if acc is not None and res else None


# gpu_metrics indep_throttle_status (ASIC-independent, the kernel's SMU_THROTTLER_* bits):
# 0-15 power (PPT, SPL, FPPT, SPPT), 16-31 current (TDC, EDC, APCC), 32-47 temperature
# (GPU, memory, VR, hotspot, PROCHOT), 56-63 other (PPM, FIT).
AMD_BIT_GROUPS = ((0, 16, "power"), (16, 32, "current"), (32, 48, "thermal"), (56, 64, "other"))


def amd_reasons(metrics: dict) -> tuple[str, ...] | None:
    """Throttle reasons from amdsmi_get_gpu_metrics_info: indep_throttle_status decoded by bit
    group, else the ASIC-specific legacy throttle_status (any bit: "other"); None when neither is
    supported (fill values)."""
    bits = _bits(metrics.get("indep_throttle_status"))
    if bits is not None:
        return tuple(name for lo, hi, name in AMD_BIT_GROUPS if bits & (((1 << (hi - lo)) - 1) << lo))
    legacy = _bits(metrics.get("throttle_status"))
    if legacy is None:
        return None
    return ("other",) if legacy else ()


def _bits(v) -> int | None:
    """A status bit mask: a non-negative whole number that is not a fill value."""
    v = _num(v)
    if v is None or not math.isfinite(v) or v < 0 or v != int(v) or int(v) > 0xFFFFFFFFFFFFFFFF:
        return None
    return int(v)


def amd_throttled(metrics: dict) -> bool | None:
    """Whether any throttle reason is active; None: the device does not say."""
    reasons = amd_reasons(metrics)
    return None if reasons is None else bool(reasons)


class AmdsmiSource:
    method = "amdsmi"

    def __init__(self, indices: list[int] | None = None, bus_ids: list[str] | None = None):
        try:
            import amdsmi
        except (ImportError, KeyError, OSError) as exc:  # KeyError when libamd_smi.so is absent
            raise Unavailable(f"amdsmi unavailable: {type(exc).__name__}: {exc}") from exc
        self.smi = smi = amdsmi
        try:
            smi.amdsmi_init()
            if bus_ids:
                self.handles = [smi.amdsmi_get_processor_handle_from_bdf(b) for b in bus_ids]
            else:
                all_handles = smi.amdsmi_get_processor_handles()
                self.handles = [all_handles[i] for i in (indices or [0])]
        except Exception as exc:
            raise Unavailable(f"amdsmi device lookup failed: {exc}") from exc
        gfx, mem = smi.AmdSmiClkType.GFX, smi.AmdSmiClkType.MEM
        self.devices, self._readers = [], []
        for i, h in enumerate(self.handles):
            readers = {
                "power_w": lambda h=h: self._power(h),
                "energy_j": lambda h=h: self._energy(h),
                "sm_mhz": lambda h=h: _num(smi.amdsmi_get_clock_info(h, gfx)["clk"]),
                "mem_mhz": lambda h=h: _num(smi.amdsmi_get_clock_info(h, mem)["clk"]),
                "temp_c": lambda h=h: self._temp(h),
                "throttle_reasons": lambda h=h: amd_reasons(self.smi.amdsmi_get_gpu_metrics_info(h)),
            }
            self._readers.append({k: fn for k, fn in readers.items() if _probe(fn)})
            dev = {"index": indices[i] if indices and not bus_ids else i, "name": "", "wrap_j": None,
                   "max_sm_mhz": None}
            try:
                dev["max_sm_mhz"] = _num(smi.amdsmi_get_clock_info(h, gfx)["max_clk"])
                dev["name"] = smi.amdsmi_get_gpu_asic_info(h).get("market_name", "")
            except Exception:
                pass
            self.devices.append(dev)
        if not any("power_w" in r or "energy_j" in r for r in self._readers):
            raise Unavailable("amdsmi reports neither power nor energy for this device")

    def _power(self, h) -> float | None:
        return amd_power_w(self.smi.amdsmi_get_power_info(h))

    def _energy(self, h) -> float | None:
        return amd_energy_j(self.smi.amdsmi_get_energy_count(h))

    def _temp(self, h) -> float | None:
        smi = self.smi
        for kind in ("HOTSPOT", "EDGE"):
            try:
                v = _num(smi.amdsmi_get_temp_metric(h, getattr(smi.AmdSmiTemperatureType, kind),
                                                    smi.AmdSmiTemperatureMetric.CURRENT))
                if v is not None:
                    return v
            except Exception:
                continue
        return None

    def describe(self) -> dict:
        return {"readings": [sorted(r) for r in self._readers], "power_source": "amdsmi_get_power_info"}

    def use(self, k: int) -> dict:
        """Processes on device k (pids; None when amdsmi cannot list them) and its GFX activity (%)."""
        smi, h = self.smi, self.handles[k]
        pids = None
        try:
            pids = sorted({p for p in (_amd_pid(smi, h, x) for x in smi.amdsmi_get_gpu_process_list(h))
                           if p is not None})
        except Exception:
            pass
        try:
            util = _num(smi.amdsmi_get_gpu_activity(h).get("gfx_activity"))
        except Exception:
            util = None
        return {"pids": pids, "util_pct": util}

    def read(self, k: int) -> Sample:
        return _read_all(self._readers[k])

    def close(self) -> None:
        try:
            self.smi.amdsmi_shut_down()
        except Exception:
            pass


def _amd_pid(smi, h, entry) -> int | None:
    """The pid of one amdsmi_get_gpu_process_list entry: a dict (newer amdsmi) or a process
    handle to look up (older)."""
    if isinstance(entry, dict):
        pid = entry.get("pid")
    else:
        try:
            pid = smi.amdsmi_get_gpu_process_info(h, entry).get("pid")
        except Exception:
            return None
    return int(pid) if isinstance(pid, int) and not isinstance(pid, bool) else None


# -- CPU package power from RAPL -----------------------------------------------------------
POWERCAP_ROOT = "/sys/class/powercap"


class RaplSource:
    """Top-level package domains (intel-rapl:N; AMD CPUs use the same powercap interface)."""

    method = "rapl"

    def __init__(self, root: str = POWERCAP_ROOT):
        if not os.path.isdir(root):
            raise Unavailable(f"no RAPL: {root} not present")
        zones = sorted(d for d in os.listdir(root) if d.startswith("intel-rapl:") and d.count(":") == 1)
        if not zones:
            raise Unavailable(f"no RAPL package domain under {root}")
        self.paths, self.devices = [], []
        for k, zone in enumerate(zones):
            path = os.path.join(root, zone)
            try:
                self._read_uj(os.path.join(path, "energy_uj"))
            except OSError as exc:
                raise Unavailable(f"RAPL {zone}/energy_uj not readable ({exc.strerror}; root-only on "
                                  f"Linux >= 5.10)") from exc
            try:
                wrap_j = self._read_uj(os.path.join(path, "max_energy_range_uj")) / 1e6
            except (OSError, ValueError):
                wrap_j = None
            name = _read_text(os.path.join(path, "name")) or zone
            self.paths.append(os.path.join(path, "energy_uj"))
            self.devices.append({"index": k, "name": name, "wrap_j": wrap_j, "max_sm_mhz": None})

    @staticmethod
    def _read_uj(path: str) -> int:
        with open(path) as fh:
            return int(fh.read().strip())

    def describe(self) -> dict:
        return {"readings": [["energy_j"]] * len(self.paths), "power_source": "dE/dt of energy_uj"}

    def read(self, k: int) -> Sample:
        try:
            return Sample(t=0.0, energy_j=self._read_uj(self.paths[k]) / 1e6)
        except (OSError, ValueError):
            return Sample(t=0.0)

    def close(self) -> None:
        pass


def _read_text(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None
