"""A fake `amdsmi` per supported version (6.0.2, 6.1.2, 6.2.4, 6.4.4, 7.0.2), mirroring what each
release's amdsmi_interface.py returns:

- amdsmi_get_clock_info: {"cur_clk", "max_clk", "min_clk", "sleep_clk"} before 6.2; from 6.2
  {"clk", "min_clk", "max_clk", "clk_locked", "clk_deep_sleep"} (MHz).
- amdsmi_get_gpu_metrics_info: throttle_status / indep_throttle_status are the raw bit masks in
  6.0 (fill values where the metrics table lacks them); from 6.1 bool(value), or "N/A" for the
  fill value. MI300's metrics table (v1.4+) has neither, so both read "N/A" there; 6.4+ adds the
  accumulated residencies (ppt_residency_acc, socket_thm_residency_acc, ...) and accumulation_counter,
  which advance on every reading (here: a residency where its violation is active; "N/A" where unsupported).
- amdsmi_get_violation_status (6.4+): active_* bools or "N/A", per_* percentages, acc_* counters.
- amdsmi_get_energy_count: {"power", "counter_resolution", "timestamp"} before 6.4, then
  {"energy_accumulator", ...}; accumulator x resolution = uJ.
- amdsmi_get_power_info: current_socket_power / average_socket_power in W ("N/A" from 6.1 where
  0xFFFF); 7.0 adds socket_power.
- amdsmi_get_gpu_process_list: process handles in 6.0 (amdsmi_get_gpu_process_info(handle, p)
  gives the dict), dicts from 6.1.
- amdsmi_get_gpu_enumeration_info (6.4+): hip_id, hip_uuid, drm ids.
- every function checks its processor handle (and enum arguments) and raises
  AmdSmiParameterException, as the real ones do; an unsupported reading raises
  AmdSmiLibraryException(AMDSMI_STATUS_NOT_SUPPORTED).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from fakes import build, logged, readers, real_api

U16, U32, U64 = 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF
NOT_SUPPORTED, INVAL, NOT_FOUND = 2, 1, 31


@dataclass
class AmdGpu:
    market_name: str = "AMD Instinct MI300X"
    bdf: str = "0000:0c:00.0"                 # amdsmi's form: 4-digit domain, lower-case hex
    uuid: str = "5aff74a1-0000-1000-80a5-6f2b3c1d0e9a"
    hip_id: int = 0                           # 6.4+: the HIP index amdsmi reports
    target: str = "gfx942"
    current_w: int | None = None              # None: "N/A" (MI300 reports the average only)
    average_w: int = 612
    socket_w: int = 615                       # 7.0's socket_power
    energy_acc: int = 2_000_000
    resolution_uj: float = 15.259
    gfx_mhz: int = 2100
    mem_mhz: int = 1300
    max_gfx_mhz: int = 2100
    hotspot_c: int = 64
    edge_c: int | None = None                 # None: not supported (MI300 has no edge sensor)
    throttle_bits: int | None = None          # legacy throttle_status bits; None: fill value (MI300)
    indep_bits: int | None = None             # indep_throttle_status bits; None: fill value (MI300)
    violation: dict = field(default_factory=lambda: {"ppt_pwr": False, "socket_thrm": False, "vr_thrm": False,
                                                     "hbm_thrm": False, "prochot_thrm": False})
    residency: dict = field(default_factory=dict)    # accumulated violation residencies, by violation name
    accumulations: int = 0
    compute_partition: str = "SPX"
    memory_partition: str = "NPS1"
    pids: list = field(default_factory=list)
    gfx_activity: int = 0
    power_cap_uw: int = 750_000_000


def _ver(version: str) -> tuple[int, int]:
    major, minor, *_ = version.split(".")
    return int(major), int(minor)


def make(version: str = "7.0.2", gpus: list[AmdGpu] | None = None, init_error: bool = False):
    api = real_api()["amdsmi"][version]
    v = _ver(version)
    gpus = list(gpus if gpus is not None else [AmdGpu()])
    calls: list[str] = []

    class AmdSmiException(Exception):
        pass

    class AmdSmiLibraryException(AmdSmiException):
        def __init__(self, err_code):
            err_code = abs(err_code)
            super().__init__(err_code)
            self.err_code = err_code
            self.err_info = {1: "AMDSMI_STATUS_INVAL - Invalid parameters",
                             2: "AMDSMI_STATUS_NOT_SUPPORTED - Feature not supported",
                             31: "AMDSMI_STATUS_NOT_FOUND - Device Not found"}.get(err_code, "unknown")

        def __str__(self):
            return f"Error code:\n\t{self.err_code} | {self.err_info}"

    class AmdSmiRetryException(AmdSmiLibraryException):
        pass

    class AmdSmiTimeoutException(AmdSmiLibraryException):
        pass

    class AmdSmiParameterException(AmdSmiException):
        def __init__(self, received, expected):
            super().__init__(f"Invalid parameter: received {received!r}, expected {expected}")

    class AmdSmiKeyException(AmdSmiException):
        pass

    class AmdSmiBdfFormatException(AmdSmiException):
        pass

    enums = {name: IntEnum(name, {m: i for i, m in enumerate(members)}) for name, members in api["enums"].items()}
    ClkType, TempType, TempMetric = enums["AmdSmiClkType"], enums["AmdSmiTemperatureType"], enums["AmdSmiTemperatureMetric"]
    state = {"init": False}

    class ProcessorHandle:             # amdsmi_wrapper.amdsmi_processor_handle (a void pointer)
        def __init__(self, k):
            self.k = k

    class ProcessHandle(int):          # 6.0's amdsmi_process_handle_t
        pass

    def gpu(processor_handle) -> AmdGpu:
        if not isinstance(processor_handle, ProcessorHandle):
            raise AmdSmiParameterException(processor_handle, "amdsmi_processor_handle")
        if not state["init"]:
            raise AmdSmiLibraryException(32)     # AMDSMI_STATUS_NOT_INIT
        return gpus[processor_handle.k]

    def na(value, fill):               # _validate_if_max_uint, and 6.1-6.4's explicit N/A checks
        return "N/A" if value is None or value == fill else value

    def flag(bits, fill):              # throttle flags: raw in 6.0, bool or "N/A" from 6.1
        raw = fill if bits is None else bits
        if v < (6, 1):
            return raw
        return "N/A" if raw == fill else bool(raw)

    log = logged(calls)

    @log
    def amdsmi_init(flag=None):
        if init_error:
            raise AmdSmiLibraryException(NOT_FOUND)
        state["init"] = True

    @log
    def amdsmi_shut_down():
        state["init"] = False

    @log
    def amdsmi_get_processor_handles():
        if not state["init"]:
            raise AmdSmiLibraryException(32)
        return [ProcessorHandle(k) for k in range(len(gpus))]

    @log
    def amdsmi_get_processor_handle_from_bdf(bdf):
        if not isinstance(bdf, str) or bdf.count(":") not in (1, 2):
            raise AmdSmiBdfFormatException(bdf)
        want = bdf.lower().split(":")[-2:]
        for k, g in enumerate(gpus):
            if g.bdf.split(":")[-2:] == want and (bdf.count(":") == 1 or int(bdf.split(":")[0], 16) == int(g.bdf[:4], 16)):
                return ProcessorHandle(k)
        raise AmdSmiLibraryException(NOT_FOUND)

    @log
    def amdsmi_get_gpu_enumeration_info(processor_handle):
        g = gpu(processor_handle)
        return {"drm_render": 128 + g.hip_id, "drm_card": g.hip_id, "hsa_id": g.hip_id + 1, "hip_id": g.hip_id,
                "hip_uuid": f"GPU-{g.uuid.replace('-', '')[:16]}"}

    @log
    def amdsmi_get_gpu_asic_info(processor_handle):
        g = gpu(processor_handle)
        return {"market_name": g.market_name or "N/A", "vendor_id": "0x1002", "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
                "subvendor_id": "0x1002", "device_id": "0x74a1", "rev_id": "0x00", "asic_serial": "0x5AFF74A100000000",
                "oam_id": 0, "num_compute_units": 304, "target_graphics_version": g.target}

    @log
    def amdsmi_get_gpu_driver_info(processor_handle):
        gpu(processor_handle)
        return {"driver_name": "amdgpu", "driver_version": "6.12.12", "driver_date": "2015/01/01 00:00"}

    @log
    def amdsmi_get_power_cap_info(processor_handle):
        g = gpu(processor_handle)
        return {"power_cap": g.power_cap_uw, "default_power_cap": g.power_cap_uw, "dpm_cap": 0,
                "min_power_cap": 0, "max_power_cap": g.power_cap_uw}

    @log
    def amdsmi_get_clock_info(processor_handle, clock_type):
        g = gpu(processor_handle)
        if not isinstance(clock_type, ClkType):
            raise AmdSmiParameterException(clock_type, ClkType)
        cur, top = {ClkType.GFX: (g.gfx_mhz, g.max_gfx_mhz), ClkType.MEM: (g.mem_mhz, g.mem_mhz)}[clock_type]
        if v < (6, 2):
            return {"cur_clk": cur, "max_clk": top, "min_clk": 100, "sleep_clk": 0}
        return {"clk": cur, "min_clk": 100, "max_clk": top, "clk_locked": False if v >= (6, 4) else 0,
                "clk_deep_sleep": 0}

    @log
    def amdsmi_get_temp_metric(processor_handle, sensor_type, metric):
        g = gpu(processor_handle)
        if not isinstance(sensor_type, TempType):
            raise AmdSmiParameterException(sensor_type, TempType)
        if not isinstance(metric, TempMetric):
            raise AmdSmiParameterException(metric, TempMetric)
        value = {TempType.HOTSPOT: g.hotspot_c, TempType.EDGE: g.edge_c}.get(sensor_type)
        if value is None:
            raise AmdSmiLibraryException(NOT_SUPPORTED)
        return value

    def _power_info(processor_handle):
        g = gpu(processor_handle)
        cur = U16 if g.current_w is None else g.current_w
        out = {"current_socket_power": cur, "average_socket_power": g.average_w, "gfx_voltage": 800,
               "soc_voltage": 900, "mem_voltage": 1100, "power_limit": g.power_cap_uw // 10**6}
        if v >= (7, 0):
            out = {"socket_power": g.socket_w, **out}
        if v >= (6, 1):
            out = {k: ("N/A" if x == U16 else x) for k, x in out.items()}
        return out

    if v >= (6, 4) and v < (7, 0):
        def amdsmi_get_power_info(processor_handle, sensor_ind=0):
            return _power_info(processor_handle)
    else:
        def amdsmi_get_power_info(processor_handle):
            return _power_info(processor_handle)
    amdsmi_get_power_info = log(amdsmi_get_power_info)

    @log
    def amdsmi_get_energy_count(processor_handle):
        g = gpu(processor_handle)
        key = "energy_accumulator" if v >= (6, 4) else "power"
        return {key: g.energy_acc, "counter_resolution": g.resolution_uj, "timestamp": 1_700_000_000_000}

    @log
    def amdsmi_get_gpu_metrics_info(processor_handle):
        g = gpu(processor_handle)
        out = {"temperature_hotspot": g.hotspot_c, "temperature_edge": na(g.edge_c, U16),
               "average_socket_power": g.average_w, "current_socket_power": na(g.current_w, U16),
               "current_gfxclk": g.gfx_mhz, "average_gfxclk_frequency": g.gfx_mhz,
               "throttle_status": flag(g.throttle_bits, U32),
               "indep_throttle_status": flag(g.indep_bits, U64),
               "energy_accumulator": g.energy_acc}
        if v >= (6, 4):
            g.accumulations += 1
            out["accumulation_counter"] = g.accumulations
            for key, name in (("ppt_residency_acc", "ppt_pwr"), ("socket_thm_residency_acc", "socket_thrm"),
                              ("vr_thm_residency_acc", "vr_thrm"), ("hbm_thm_residency_acc", "hbm_thrm"),
                              ("prochot_residency_acc", "prochot_thrm")):
                g.residency[name] = g.residency.get(name, 0) + bool(g.violation.get(name))
                out[key] = "N/A" if g.violation.get(name) is None else g.residency[name]
        return out

    @log
    def amdsmi_get_violation_status(processor_handle):
        g = gpu(processor_handle)
        out = {"reference_timestamp": 1, "violation_timestamp": 1, "acc_counter": 10}
        for name in ("prochot_thrm", "ppt_pwr", "socket_thrm", "vr_thrm", "hbm_thrm"):
            state_ = g.violation.get(name)
            out[f"acc_{name}"] = 5 if state_ else 0
            out[f"per_{name}"] = 50 if state_ else 0
            out[f"active_{name}"] = "N/A" if state_ is None else bool(state_)
        out.update(active_gfx_clk_below_host_limit=False, per_gfx_clk_below_host_limit=0)
        return out

    @log
    def amdsmi_get_gpu_activity(processor_handle):
        return {"gfx_activity": gpu(processor_handle).gfx_activity, "umc_activity": 0, "mm_activity": "N/A"}

    @log
    def amdsmi_get_gpu_process_list(processor_handle):
        g = gpu(processor_handle)
        if v < (6, 1):
            return [ProcessHandle(p) for p in g.pids]
        return [{"name": "python", "pid": p, "mem": 2**30, "engine_usage": {"gfx": 0, "enc": 0},
                 "memory_usage": {"gtt_mem": 0, "cpu_mem": 0, "vram_mem": 2**30}} for p in g.pids]

    @log
    def amdsmi_get_gpu_process_info(processor_handle, process):
        gpu(processor_handle)
        return {"name": "python", "pid": int(process), "mem": 2**30}

    @log
    def amdsmi_topo_get_link_type(processor_handle_src, processor_handle_dst):
        gpu(processor_handle_src)
        gpu(processor_handle_dst)
        return {"hops": 1, "type": 2}       # AMDSMI_IOLINK_TYPE_XGMI

    members = {k: f for k, f in locals().items() if k.startswith("amdsmi_") and k in api["functions"]}
    members.update(readers({"amdsmi_get_gpu_device_bdf": "bdf", "amdsmi_get_gpu_device_uuid": "uuid",
                            "amdsmi_get_gpu_compute_partition": "compute_partition",
                            "amdsmi_get_gpu_memory_partition": "memory_partition"}, "processor_handle", gpu, log))
    members.update({k: e for k, e in locals().items() if k.startswith("AmdSmi") and k.endswith("Exception")})
    members.update(enums)
    mod = build("amdsmi", api, members)
    mod.calls, mod.gpus, mod.version = calls, gpus, version
    return mod
