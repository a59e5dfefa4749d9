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
"""

from __future__ import annotations

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


def _num(v) -> float | None:
    """amdsmi reports unsupported values as 'N/A' strings (or dicts with a 'value')."""
    if isinstance(v, dict):
        v = v.get("value")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# -- NVIDIA --------------------------------------------------------------------------------
def field_value(fv) -> float | None:
    """The number in an nvmlFieldValue_t, None when the driver returned an error for it."""
    if fv.nvmlReturn != 0:  # NVML_SUCCESS
        return None
    member = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")[fv.valueType]
    return float(getattr(fv.value, member))


def nvml_throttled(reasons: int) -> bool:
    """Any clock event reason other than nvmlClocksEventReasonGpuIdle (0x1)."""
    return bool(reasons & ~0x1)


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
                "throttle": lambda h=h: nvml_throttled(reasons_fn(h)),
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
            setattr(s, key, fn())
        except Exception:
            pass
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


def amd_throttled(metrics: dict) -> bool | None:
    """gpu_metrics throttle_status; the all-ones fill value means not supported."""
    v = _num(metrics.get("throttle_status"))
    return None if v is None or int(v) in (0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF) else bool(v)


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
                "throttle": lambda h=h: self._throttle(h),
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

    def _throttle(self, h) -> bool | None:
        return amd_throttled(self.smi.amdsmi_get_gpu_metrics_info(h))

    def describe(self) -> dict:
        return {"readings": [sorted(r) for r in self._readers], "power_source": "amdsmi_get_power_info"}

    def read(self, k: int) -> Sample:
        return _read_all(self._readers[k])

    def close(self) -> None:
        try:
            self.smi.amdsmi_shut_down()
        except Exception:
            pass


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
