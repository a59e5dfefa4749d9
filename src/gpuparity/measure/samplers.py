"""Readers of power, energy counters, clocks, temperature and throttle reasons, one per vendor.

Each source opens its library once, probes which readings the device supports, and then
`read(k)` returns one `Sample` (without its time) for its k-th device; a reading that fails
is None for that sample. Opening raises `Unavailable` with the reason when nothing can be read.

- NVML (nvidia-ml-py, `import pynvml`): instant power field where the driver has it (the plain
  power reading is a 1 s average on Ampere and newer), else nvmlDeviceGetPowerUsage (mW);
  total energy counter (mJ, Volta+); SM / memory clocks; temperature; clock event reasons.
- amdsmi (6.0 to 7.x): socket power (W), energy accumulator * counter_resolution (uJ; the key is
  `power` before 6.4), GFX / memory clocks (`cur_clk` before 6.2, `clk` from 6.2), hotspot
  temperature, throttling (measure.throttle). rocm-smi is never used for power: it has reported
  0-2 W on MI325X where amdsmi reads 450-670 W.
- RAPL (powercap sysfs): CPU package energy_uj, wrapping at max_energy_range_uj.

Every reading passes `plausible()`: the all-ones fill values libraries use for "not supported"
(amdsmi's UINT16/32/64_MAX), and values outside a physical range, become None, never a number.
Throttling is one notion on both vendors (measure.throttle): each device's best source (NVML
reasons; amdsmi violation status or throttle flags; else clock dips) is named in describe().
Both libraries are imported through platform.vendor_libs: whatever their import raises is a
reason, and what they print stays off stdout. A source finds its device by PCI bus id, UUID or a
trustworthy index (measure.device_map), and says which in describe().
"""

from __future__ import annotations

import os
from typing import Any, Callable

from gpuparity.measure import throttle as thr
from gpuparity.measure.device_map import same_uuid
from gpuparity.measure.energy import Sample
from gpuparity.measure.throttle import (  # noqa: F401 - decoders re-exported for callers and tests
    AMD_BIT_GROUPS,
    NVML_REASONS,
    SENTINELS,
    amd_reasons,
    nvml_reasons,
)
from gpuparity.platform.vendor_libs import load, quiet_stdout


class Unavailable(Exception):
    """No usable reading on this machine; the message says why."""


def _probe(fn: Callable[[], Any]) -> bool:
    """Whether a reading works on this device (once, at open)."""
    try:
        return fn() is not None
    except Exception:
        return False


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


def nvml_throttled(bits: int) -> bool:
    """Whether a clock-limiting reason (power cap, thermal or hardware slowdown) is active."""
    return bool(nvml_reasons(bits))


def _device_refs(indices, bus_ids, devices) -> list[list[dict]]:
    """Each device's ways to be found (measure.device_map.refs), from any of the three spellings."""
    if devices:
        return devices
    if bus_ids:
        return [[{"bus_id": b}] for b in bus_ids]
    return [[{"index": i, "pci_order": True}] for i in (indices or [0])]


def _resolve(refs: list[dict], by_bus, by_uuid, by_index, lib: str):
    """(handle, how) of the first ref that finds a device; Unavailable naming every try."""
    tried = []
    for ref in refs:
        try:
            if "bus_id" in ref:
                return by_bus(ref["bus_id"]), f"PCI bus id {ref['bus_id']}"
            if "uuid" in ref:
                return by_uuid(ref["uuid"]), f"UUID {ref['uuid']}"
            if "index" in ref:
                handle, how = by_index(ref)
                if handle is not None:
                    return handle, how
                tried.append(how)
                continue
        except Exception as exc:  # noqa: BLE001 - the next way may work
            tried.append(f"{next(iter(ref))} {next(iter(ref.values()))}: {type(exc).__name__}: {str(exc)[:120]}")
    raise Unavailable(f"cannot map the torch device to a {lib} device ({'; '.join(tried) or 'no identity known'})")


class NvmlSource:
    method = "nvml"

    def __init__(self, indices: list[int] | None = None, bus_ids: list[str] | None = None,
                 devices: list[list[dict]] | None = None):
        nv, why = load("pynvml")
        if nv is None:
            raise Unavailable(why)
        try:
            with quiet_stdout():
                nv.nvmlInit()
        except Exception as exc:
            raise Unavailable(f"NVML init failed: {exc}") from exc
        self.nv = nv
        found = [_resolve(refs, nv.nvmlDeviceGetHandleByPciBusId, self._by_uuid, self._by_index, "NVML")
                 for refs in _device_refs(indices, bus_ids, devices)]
        self.handles = [h for h, _ in found]
        self.mapped_by = [how for _, how in found]
        self.devices, self.throttle_sources = [], []
        self._readers: list[dict[str, Callable[[], Any]]] = []
        self.power_source = "field NVML_FI_DEV_POWER_INSTANT"
        reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            getattr(nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
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
            works = {k: fn for k, fn in readers.items() if (reasons_fn or k != "throttle_reasons") and _probe(fn)}
            self._readers.append(works)
            self.throttle_sources.append(thr.NVML if "throttle_reasons" in works else
                                         thr.CLOCK if "sm_mhz" in works else None)
            dev = {"index": _or_none(lambda h=h: nv.nvmlDeviceGetIndex(h)), "name": _s(nv.nvmlDeviceGetName(h)),
                   "wrap_j": None, "max_sm_mhz": _or_none(lambda h=h: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM))}
            mig = _or_none(lambda h=h: nv.nvmlDeviceIsMigDeviceHandle(h))
            if bool(getattr(mig, "value", mig)):     # a c_uint: its value, not the object, says yes
                dev["mig"] = True
            self.devices.append(dev)
        if not any("power_w" in r or "energy_j" in r for r in self._readers):
            raise Unavailable("NVML reports neither power nor energy for this device"
                              + (" (a MIG slice: NVML reads power for the whole GPU only)"
                                 if any(d.get("mig") for d in self.devices) else ""))

    def _by_uuid(self, uuid: str):
        text = uuid if uuid.upper().startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
        return self.nv.nvmlDeviceGetHandleByUUID(text)

    def _by_index(self, ref: dict):
        """An NVML index is CUDA's only where both enumerate in PCI order: CUDA_DEVICE_ORDER=PCI_BUS_ID,
        one device, or devices all of one name (CUDA's fastest-first order then keeps PCI order)."""
        nv, i = self.nv, ref["index"]
        count = nv.nvmlDeviceGetCount()
        names = {_s(nv.nvmlDeviceGetName(nv.nvmlDeviceGetHandleByIndex(k))) for k in range(count)}
        if ref.get("pci_order") or count == 1 or len(names) == 1:
            return nv.nvmlDeviceGetHandleByIndex(i), f"index {i}"
        return None, (f"index {i}: CUDA orders {len(names)} kinds of GPU fastest first and NVML by PCI bus; "
                      "set CUDA_DEVICE_ORDER=PCI_BUS_ID")

    def _instant_power(self, h) -> float:
        nv = self.nv
        mw = field_value(nv.nvmlDeviceGetFieldValues(h, [nv.NVML_FI_DEV_POWER_INSTANT])[0])
        if not mw:
            raise RuntimeError("NVML_FI_DEV_POWER_INSTANT unsupported or 0")
        return mw / 1e3

    def describe(self) -> dict:
        return {"readings": [sorted(r) for r in self._readers], "power_source": self.power_source,
                "throttle_sources": list(self.throttle_sources), "mapped_by": list(self.mapped_by)}

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


def _or_none(fn: Callable[[], Any]):
    try:
        return fn()
    except Exception:  # noqa: BLE001 - an optional reading
        return None


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
    acc = _num(info.get("energy_accumulator", info.get("power")))  # 'power' before amdsmi 6.4
    res = _num(info.get("counter_resolution"))
    return acc * res / 1e6 if acc is not None and res else None


def amd_clock_mhz(info: dict) -> float | None:
    """The current clock in amdsmi_get_clock_info: `clk` from amdsmi 6.2, `cur_clk` before."""
    return _num(info.get("clk", info.get("cur_clk")))


def amd_throttled(metrics: dict) -> bool | None:
    """Whether any gpu_metrics throttle flag is set; None: the device does not say."""
    reasons = amd_reasons(metrics)
    return None if reasons is None else bool(reasons)


class AmdsmiSource:
    method = "amdsmi"

    def __init__(self, indices: list[int] | None = None, bus_ids: list[str] | None = None,
                 devices: list[list[dict]] | None = None):
        smi, why = load("amdsmi")
        if smi is None:
            raise Unavailable(why)
        self.smi = smi
        try:
            with quiet_stdout():
                smi.amdsmi_init()
            self._all = smi.amdsmi_get_processor_handles()
        except Exception as exc:
            raise Unavailable(f"amdsmi init failed: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from exc
        found = [_resolve(refs, smi.amdsmi_get_processor_handle_from_bdf, self._by_uuid, self._by_index, "amdsmi")
                 for refs in _device_refs(indices, bus_ids, devices)]
        self.handles = [h for h, _ in found]
        self.mapped_by = [how for _, how in found]
        gfx, mem = smi.AmdSmiClkType.GFX, smi.AmdSmiClkType.MEM
        self.devices, self._readers, self.throttle_sources = [], [], []
        for i, h in enumerate(self.handles):
            readers = {
                "power_w": lambda h=h: amd_power_w(smi.amdsmi_get_power_info(h)),
                "energy_j": lambda h=h: amd_energy_j(smi.amdsmi_get_energy_count(h)),
                "sm_mhz": lambda h=h: amd_clock_mhz(smi.amdsmi_get_clock_info(h, gfx)),
                "mem_mhz": lambda h=h: amd_clock_mhz(smi.amdsmi_get_clock_info(h, mem)),
                "temp_c": lambda h=h: self._temp(h),
            }
            works = {k: fn for k, fn in readers.items() if _probe(fn)}
            source, reasons = self._throttle_reader(h)
            if reasons is not None:
                works["throttle_reasons"] = reasons
            self._readers.append(works)
            self.throttle_sources.append(source or (thr.CLOCK if "sm_mhz" in works else None))
            dev = {"index": i, "name": "", "wrap_j": None,
                   "max_sm_mhz": _or_none(lambda h=h: _num(smi.amdsmi_get_clock_info(h, gfx)["max_clk"]))}
            asic = _or_none(lambda h=h: smi.amdsmi_get_gpu_asic_info(h)) or {}
            dev["name"] = asic.get("market_name", "") if isinstance(asic, dict) else ""
            partition = _or_none(lambda h=h: smi.amdsmi_get_gpu_compute_partition(h))
            if isinstance(partition, str) and partition and partition != "SPX":
                dev["compute_partition"] = partition
            self.devices.append(dev)
        if not any("power_w" in r or "energy_j" in r for r in self._readers):
            raise Unavailable("amdsmi reports neither power nor energy for this device")

    def _by_uuid(self, uuid: str):
        smi = self.smi
        enum = getattr(smi, "amdsmi_get_gpu_enumeration_info", None)
        for h in self._all:
            ids = [_or_none(lambda h=h: smi.amdsmi_get_gpu_device_uuid(h))]
            if enum is not None:
                ids.append((_or_none(lambda h=h: enum(h)) or {}).get("hip_uuid"))
            if any(same_uuid(uuid, x) for x in ids if isinstance(x, str)):
                return h
        raise Unavailable(f"no amdsmi device has UUID {uuid}")

    def _by_index(self, ref: dict):
        """amdsmi's order is not HIP's on every platform: an index maps through amdsmi's own HIP
        id (6.4+), or on a machine with one device."""
        smi, i = self.smi, ref["index"]
        enum = getattr(smi, "amdsmi_get_gpu_enumeration_info", None)
        if enum is not None:
            for h in self._all:
                if (_or_none(lambda h=h: enum(h)) or {}).get("hip_id") == i:
                    return h, f"HIP id {i} (amdsmi_get_gpu_enumeration_info)"
        if len(self._all) == 1 and i == 0:
            return self._all[0], "index 0 (the only device)"
        return None, (f"index {i}: amdsmi's device order may differ from HIP's and this amdsmi has no "
                      "HIP ids (6.4+)")

    def _throttle_reader(self, h) -> tuple[str | None, Callable[[], Any] | None]:
        """(source, reader) of the best throttle reading this device answers (measure.throttle)."""
        smi = self.smi
        violation = getattr(smi, "amdsmi_get_violation_status", None)
        if violation is not None and thr.amd_violation_reasons(_or_none(lambda: violation(h)) or {}) is not None:
            residencies = thr.AmdResidencies()       # its reasons, per reading, without its 100 ms wait
            if residencies(_or_none(lambda: smi.amdsmi_get_gpu_metrics_info(h)) or {}) is not None:
                return thr.AMD_VIOLATION, lambda: residencies(smi.amdsmi_get_gpu_metrics_info(h))
        source = thr.amd_metrics_source(_or_none(lambda: smi.amdsmi_get_gpu_metrics_info(h)) or {})
        if source is not None:
            return source, lambda: amd_reasons(smi.amdsmi_get_gpu_metrics_info(h))
        return None, None

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
        return {"readings": [sorted(r) for r in self._readers], "power_source": "amdsmi_get_power_info",
                "throttle_sources": list(self.throttle_sources), "mapped_by": list(self.mapped_by)}

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
    """The pid of one amdsmi_get_gpu_process_list entry: a dict (amdsmi 6.1+) or a process
    handle to look up (6.0)."""
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
