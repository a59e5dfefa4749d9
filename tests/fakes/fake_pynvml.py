"""A fake `pynvml` mirroring nvidia-ml-py 13.615.71: the real function names and parameters, the
real constant values, return types (str names and UUIDs, ints in mW / mJ / MHz, a ctypes c_uint
from nvmlDeviceIsMigDeviceHandle, field values with nvmlReturn / valueType / value), and the
NVMLError subclasses it raises (NotSupported for a reading a part lacks, LibraryNotFound from
nvmlInit without a driver)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from fakes import build, logged, readers, real_api


@dataclass
class NvGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-5a4c8f6e-0000-1111-2222-333344445555"
    bus_id: str = "00000000:3B:00.0"          # NVML's form: 8-digit domain, upper-case hex
    power_mw: int = 612_000                   # nvmlDeviceGetPowerUsage (1 s average on Ampere+)
    instant_mw: int | None = 640_000          # NVML_FI_DEV_POWER_INSTANT; None: not supported
    energy_mj: int = 1_000_000
    sm_mhz: int = 1980
    mem_mhz: int = 2619
    max_sm_mhz: int = 1980
    temp_c: int = 61
    reasons: int | None = 0                   # clock event reason bits; None: call not supported
    pids: list = field(default_factory=list)
    util: int = 0
    mig_device: bool = False                  # a MIG device handle (the slice torch sees)
    mig_mode: int | None = None               # nvmlDeviceGetMigMode's current mode; None: not MIG-capable
    nvlinks: int = 18                         # active NVLink links (0: none, NotSupported)
    level: int = 10                           # topology level to every other GPU (NVML_TOPOLOGY_SINGLE)
    power_limit_mw: int = 700_000


def make(gpus: list[NvGpu] | None = None, driver_loaded: bool = True):
    api = real_api()["pynvml"]
    c = dict(api["constants"])
    gpus = list(gpus if gpus is not None else [NvGpu()])
    calls: list[str] = []

    class NVMLError(Exception):
        def __init__(self, value):
            super().__init__(value)
            self.value = value

        def __str__(self):
            return {1: "Uninitialized", 2: "Invalid Argument", 3: "Not Supported", 6: "Not Found",
                    12: "NVML Shared Library Not Found"}.get(self.value, f"Unknown Error {self.value}")

    errors = {name: type(name, (NVMLError,), {}) for name in api["classes"] if name.startswith("NVMLError_")}

    def err(code: int):
        name = {1: "NVMLError_Uninitialized", 2: "NVMLError_InvalidArgument", 3: "NVMLError_NotSupported",
                6: "NVMLError_NotFound", 12: "NVMLError_LibraryNotFound"}[code]
        return errors[name](code)

    state = {"init": False}

    class Handle:                      # c_nvmlDevice_t: an opaque pointer
        def __init__(self, k):
            self.k = k

    def gpu(handle) -> NvGpu:
        if not state["init"]:
            raise err(1)
        if not isinstance(handle, Handle):
            raise err(2)
        return gpus[handle.k]

    def norm_bus(text: str) -> tuple:
        dom, bus, rest = text.split(":")
        dev, fn = rest.split(".")
        return int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16)

    class FieldValue:                  # c_nvmlFieldValue_t
        class _Value:
            dVal = uiVal = ulVal = ullVal = sllVal = siVal = usVal = 0

        def __init__(self, field_id):
            self.fieldId, self.scopeId, self.timestamp, self.latencyUsec = field_id, 0, 0, 0
            self.valueType, self.nvmlReturn, self.value = c["NVML_VALUE_TYPE_UNSIGNED_INT"], 0, self._Value()

    class PciInfo:                     # nvmlPciInfo_t (char fields read back as str)
        def __init__(self, g):
            dom, bus, dev, _ = norm_bus(g.bus_id)
            self.busId, self.busIdLegacy = g.bus_id, g.bus_id[-12:]
            self.domain, self.bus, self.device, self.pciDeviceId, self.pciSubSystemId = dom, bus, dev, 0x233010DE, 0

    class ProcessInfo:                 # c_nvmlProcessInfo_t
        def __init__(self, pid):
            self.pid, self.usedGpuMemory, self.gpuInstanceId, self.computeInstanceId = pid, 2**30, 0xFFFFFFFF, 0xFFFFFFFF

    class Utilization:                 # c_nvmlUtilization_t
        def __init__(self, g):
            self.gpu, self.memory = g.util, 0

    log = logged(calls)

    @log
    def nvmlInit():
        if not driver_loaded:
            raise err(12)
        state["init"] = True

    @log
    def nvmlShutdown():
        state["init"] = False

    @log
    def nvmlDeviceGetCount():
        if not state["init"]:
            raise err(1)
        return len(gpus)

    @log
    def nvmlDeviceGetHandleByIndex(index):
        if not state["init"]:
            raise err(1)
        if not isinstance(index, int) or not 0 <= index < len(gpus):
            raise err(2)
        return Handle(index)

    @log
    def nvmlDeviceGetHandleByPciBusId(pciBusId):
        if not state["init"]:
            raise err(1)
        want = norm_bus(pciBusId.decode() if isinstance(pciBusId, bytes) else pciBusId)
        for k, g in enumerate(gpus):
            if norm_bus(g.bus_id)[:3] == want[:3]:
                return Handle(k)
        raise err(6)

    @log
    def nvmlDeviceGetHandleByUUID(uuid):
        if not state["init"]:
            raise err(1)
        text = uuid.decode() if isinstance(uuid, bytes) else uuid
        for k, g in enumerate(gpus):
            if g.uuid == text:
                return Handle(k)
        raise err(6)

    @log
    def nvmlDeviceGetIndex(handle):
        return gpus.index(gpu(handle))

    @log
    def nvmlDeviceGetPciInfo(handle):
        return PciInfo(gpu(handle))

    @log
    def nvmlDeviceGetFieldValues(handle, fieldIds):
        g = gpu(handle)
        out = []
        for fid in fieldIds:
            fv = FieldValue(fid)
            if fid == c["NVML_FI_DEV_POWER_INSTANT"] and g.instant_mw is not None:
                fv.value.uiVal = g.instant_mw
            else:
                fv.nvmlReturn = c["NVML_ERROR_NOT_SUPPORTED"]
            out.append(fv)
        return out

    @log
    def nvmlDeviceGetClockInfo(handle, type):  # noqa: A002 - the real parameter's name
        g = gpu(handle)
        return {c["NVML_CLOCK_SM"]: g.sm_mhz, c["NVML_CLOCK_MEM"]: g.mem_mhz}[type]

    @log
    def nvmlDeviceGetMaxClockInfo(handle, type):  # noqa: A002
        g = gpu(handle)
        return {c["NVML_CLOCK_SM"]: g.max_sm_mhz, c["NVML_CLOCK_MEM"]: g.mem_mhz}[type]

    @log
    def nvmlDeviceGetTemperature(handle, sensor):
        if sensor != c["NVML_TEMPERATURE_GPU"]:
            raise err(2)
        return gpu(handle).temp_c

    def _reasons(handle):
        g = gpu(handle)
        if g.reasons is None:
            raise err(3)
        return g.reasons

    @log
    def nvmlDeviceGetCurrentClocksEventReasons(handle):
        return _reasons(handle)

    @log
    def nvmlDeviceGetCurrentClocksThrottleReasons(handle):
        return _reasons(handle)

    @log
    def nvmlDeviceGetComputeRunningProcesses(handle):
        return [ProcessInfo(p) for p in gpu(handle).pids]

    @log
    def nvmlDeviceGetGraphicsRunningProcesses(handle):
        gpu(handle)
        return []

    @log
    def nvmlDeviceGetUtilizationRates(handle):
        return Utilization(gpu(handle))

    @log
    def nvmlDeviceIsMigDeviceHandle(device):
        return ctypes.c_uint(1 if gpu(device).mig_device else 0)

    @log
    def nvmlDeviceGetSerial(handle):
        gpu(handle)
        return "1650123456789"

    @log
    def nvmlDeviceGetVbiosVersion(handle):
        gpu(handle)
        return "96.00.99.00.01"

    @log
    def nvmlDeviceGetMigMode(device):
        g = gpu(device)
        if g.mig_mode is None:
            raise err(3)
        return [g.mig_mode, g.mig_mode]

    @log
    def nvmlDeviceGetNvLinkState(device, link):
        g = gpu(device)
        if not g.nvlinks:
            raise err(3)
        if not 0 <= link < c["NVML_NVLINK_MAX_LINKS"]:
            raise err(2)
        return c["NVML_FEATURE_ENABLED"] if link < g.nvlinks else c["NVML_FEATURE_DISABLED"]

    @log
    def nvmlDeviceGetTopologyCommonAncestor(device1, device2):
        return max(gpu(device1).level, gpu(device2).level)

    @log
    def nvmlDeviceGetP2PStatus(device1, device2, p2pIndex):
        a, b = gpu(device1), gpu(device2)
        if p2pIndex == c["NVML_P2P_CAPS_INDEX_NVLINK"]:
            return c["NVML_P2P_STATUS_OK"] if a.nvlinks and b.nvlinks else c["NVML_P2P_STATUS_NOT_SUPPORTED"]
        return c["NVML_P2P_STATUS_OK"]

    @log
    def nvmlSystemGetDriverVersion():
        return "580.159.04"

    @log
    def nvmlSystemGetCudaDriverVersion_v2():
        return 13000

    members = {k: v for k, v in locals().items() if k.startswith("nvml")}
    members.update(readers({"nvmlDeviceGetName": "name", "nvmlDeviceGetUUID": "uuid", "nvmlDeviceGetPowerUsage": "power_mw",
                            "nvmlDeviceGetTotalEnergyConsumption": "energy_mj",
                            "nvmlDeviceGetEnforcedPowerLimit": "power_limit_mw"}, "handle", gpu, log))
    members.update(c)
    members.update(errors)
    members["NVMLError"] = NVMLError
    members["c_nvmlFieldValue_t"] = FieldValue
    mod = build("pynvml", api, members)
    mod.calls, mod.gpus = calls, gpus
    return mod
