"""The platform fingerprint: what ran, on what, with which stack.

Every probe is guarded: a missing NVML or amdsmi library, a CPU-only torch or an unreadable
/proc file leaves the field unknown with the reason in `unknown`, and never raises.
"""

from __future__ import annotations

import os
import platform as _pyplatform
import re
import socket
from functools import lru_cache
from typing import Any

from gpuparity.platform.spec_match import generic
from gpuparity.platform.specs import cpu_spec, identify
from gpuparity.platform.vendor_libs import load, quiet_stdout

# Environment variables that change results; recorded with every run.
ENV_PREFIXES = (
    "PYTORCH_TUNABLEOP_", "PYTORCH_", "TORCH_", "NCCL_", "RCCL_", "HIP_", "HSA_", "ROCBLAS_", "HIPBLASLT_",
    "MIOPEN_", "CUDA_", "CUBLAS_", "CUBLASLT_", "CUDNN_", "NVIDIA_TF32_", "OMP_", "MKL_", "OPENBLAS_",
    "GOMP_", "KMP_", "AMD_", "GPU_MAX_HW_QUEUES",
)

# ROCm 7.0 support list (compatibility matrix; also 7.0.1, 7.0.2, 7.1.0).
ROCM7_TARGETS = {
    "gfx950": "CDNA4 (MI355X, MI350X)",
    "gfx942": "CDNA3 (MI325X, MI300X, MI300A)",
    "gfx90a": "CDNA2 (MI250X, MI250, MI210)",
    "gfx908": "CDNA (MI100)",
    "gfx1201": "RDNA4 (RX 9070 XT, R9700)",
    "gfx1200": "RDNA4 (RX 9060)",
    "gfx1101": "RDNA3 (RX 7800 XT, W7700)",
    "gfx1100": "RDNA3 (RX 7900 XTX, W7900)",
    "gfx1030": "RDNA2 (W6800, V620)",
}
CUDA13_MIN_CC = (7, 5)  # CUDA 13.0 dropped offline compilation below sm_75
# Last-level caches beyond the L2 torch reports (AMD Infinity Cache / MALL, CDNA3 and CDNA4
# product pages: 256 MB on MI300X, MI325X, MI350X, MI355X).
INFINITY_CACHE_BYTES = {"gfx942": 256 * 2**20, "gfx950": 256 * 2**20}


def gpu_llc_bytes(arch_target: str, l2_bytes: int | None) -> int | None:
    """The GPU's last-level cache: the Infinity Cache where the part has one, else its L2."""
    return max(INFINITY_CACHE_BYTES.get(arch_target, 0), l2_bytes or 0) or None


def support_status(arch_target: str | None) -> dict:
    """Whether a GPU target is on the ROCm 7.0 or CUDA 13.0 support list."""
    if not arch_target:
        return {"list": None, "supported": None, "note": "no GPU"}
    if arch_target.startswith("gfx"):
        base = arch_target.split(":")[0]
        ok = base in ROCM7_TARGETS
        return {"list": "ROCm 7.0", "supported": ok,
                "note": ROCM7_TARGETS.get(base, f"{base} is not on the ROCm 7.0 compatibility matrix")}
    m = re.match(r"sm_(\d+?)(\d)a?$", arch_target)
    if m:
        cc = (int(m.group(1)), int(m.group(2)))
        ok = cc >= CUDA13_MIN_CC
        note = "supported by CUDA 13.0" if ok else "CUDA 13.0 dropped it: last toolkit is CUDA 12.9 (driver R580)"
        return {"list": "CUDA 13.0", "supported": ok, "note": note}
    return {"list": None, "supported": None, "note": f"unknown target {arch_target}"}


def env_flags() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}


# The SLURM job a run belongs to, from the variables slurmd and srun set (names as in sbatch(1)'s
# OUTPUT ENVIRONMENT VARIABLES); `list`/`compare`/`trend` select a fleet run by `job`.
SLURM_TEXT = {"job_name": "SLURM_JOB_NAME", "partition": "SLURM_JOB_PARTITION", "account": "SLURM_JOB_ACCOUNT",
              "cluster": "SLURM_CLUSTER_NAME", "node_list": "SLURM_JOB_NODELIST", "node": "SLURMD_NODENAME"}
SLURM_COUNTS = {"array_task_id": "SLURM_ARRAY_TASK_ID", "array_task_count": "SLURM_ARRAY_TASK_COUNT",
                "nodes": "SLURM_JOB_NUM_NODES", "procid": "SLURM_PROCID", "ntasks": "SLURM_NTASKS",
                "restart_count": "SLURM_RESTART_COUNT"}


def slurm_job(env=None) -> dict | None:
    """The run's SLURM job, or None outside one. `job` is the id sbatch printed (an array's, for
    each of its tasks); `job_id` is this task's own. Values that are not what SLURM writes are
    left out, never guessed."""
    env = os.environ if env is None else env
    own = env.get("SLURM_JOB_ID", "")
    if not own.isdigit():
        return None
    array = env.get("SLURM_ARRAY_JOB_ID", "")
    out: dict[str, Any] = {"job": array if array.isdigit() else own, "job_id": own}
    for key, name in SLURM_TEXT.items():
        value = env.get(name, "")
        if value and len(value) <= 1000 and value.isprintable():
            out[key] = value
    for key, name in SLURM_COUNTS.items():
        value = env.get(name, "")
        if value.isdigit() and len(value) < 10:
            out[key] = int(value)
    return out


def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return None


def cpu_info() -> dict:
    info: dict[str, Any] = {"arch": _pyplatform.machine(), "logical_cpus": os.cpu_count()}
    text = _read("/proc/cpuinfo") or ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            fields.setdefault(k.strip(), v.strip())
    info["model"] = fields.get("model name") or fields.get("Model") or _pyplatform.processor() or "unknown"
    info["vendor"] = fields.get("vendor_id")
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    interesting = ["avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                   "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "amx_fp16", "avx_vnni", "asimd",
                   "sve", "fphp", "asimdhp", "bf16"]
    info["isa"] = [f for f in interesting if f in flags]
    info["fp16_native"] = bool({"avx512_fp16", "fphp", "asimdhp"} & flags)
    info["bf16_native"] = bool({"avx512_bf16", "amx_bf16", "bf16"} & flags)
    # Physical cores: distinct (physical id, core id) pairs, else the logical count.
    cores, phys, core = set(), None, None
    for line in text.splitlines():
        if line.startswith("physical id"):
            phys = line.split(":")[1].strip()
        elif line.startswith("core id"):
            core = line.split(":")[1].strip()
            cores.add((phys, core))
    info["cores"] = len(cores) or os.cpu_count()
    max_khz = _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if max_khz:
        info["max_mhz"] = int(max_khz) / 1000.0
    elif fields.get("cpu MHz"):
        info["max_mhz"] = float(fields["cpu MHz"])
    mem = _read("/proc/meminfo") or ""
    m = re.search(r"MemTotal:\s+(\d+) kB", mem)
    if m:
        info["memory_gb"] = round(int(m.group(1)) / 1e6, 1)
    llc = None
    for idx in range(8):
        size = _read(f"/sys/devices/system/cpu/cpu0/cache/index{idx}/size")
        if size:
            size = size.strip()
            mult = {"K": 1024, "M": 1024**2}.get(size[-1], 1)
            llc = max(llc or 0, int(size.rstrip("KM")) * mult)
    info["llc_bytes"] = llc
    return info


def _nvml_info(unknown: dict) -> dict:
    pynvml, why = load("pynvml")
    if pynvml is None:
        unknown["nvml"] = why
        return {}
    try:
        with quiet_stdout():
            pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound and friends
        unknown["nvml"] = f"NVML unavailable: {exc}"
        return {}
    out: dict[str, Any] = {}
    try:
        out["driver_version"] = _s(pynvml.nvmlSystemGetDriverVersion())
        devices = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            dev: dict[str, Any] = {"index": i, "name": _s(pynvml.nvmlDeviceGetName(h))}
            for key, fn in (
                ("uuid", lambda h=h: _s(pynvml.nvmlDeviceGetUUID(h))),
                ("bus_id", lambda h=h: _s(pynvml.nvmlDeviceGetPciInfo(h).busId)),
                ("mig_mode", lambda h=h: pynvml.nvmlDeviceGetMigMode(h)[0]),
                ("power_limit_w", lambda h=h: pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0),
                ("max_sm_clock_mhz", lambda h=h: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)),
                ("max_mem_clock_mhz", lambda h=h: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM)),
                ("serial", lambda h=h: _s(pynvml.nvmlDeviceGetSerial(h))),
                ("vbios", lambda h=h: _s(pynvml.nvmlDeviceGetVbiosVersion(h))),
            ):
                try:
                    dev[key] = fn()
                except Exception as exc:
                    dev[key] = None
                    unknown[f"nvml.{key}"] = str(exc)
            devices.append(dev)
        out["devices"] = devices
        try:
            out["cuda_driver_version"] = pynvml.nvmlSystemGetCudaDriverVersion_v2()
        except Exception:
            pass
    except Exception as exc:
        unknown["nvml"] = f"NVML query failed: {exc}"
    return out


def _amdsmi_info(unknown: dict) -> dict:
    amdsmi, why = load("amdsmi")      # KeyError without libamd_smi.so, AttributeError over an older one
    if amdsmi is None:
        unknown["amdsmi"] = why
        return {}
    out: dict[str, Any] = {}
    try:
        with quiet_stdout():
            amdsmi.amdsmi_init()
        handles = amdsmi.amdsmi_get_processor_handles()
        devices = []
        for i, h in enumerate(handles):
            dev: dict[str, Any] = {"index": i}
            for key, fn in (
                ("asic", lambda h=h: amdsmi.amdsmi_get_gpu_asic_info(h)),
                ("driver", lambda h=h: amdsmi.amdsmi_get_gpu_driver_info(h)),
                ("power_cap", lambda h=h: amdsmi.amdsmi_get_power_cap_info(h)),
                # Same names as NVML's; power_cap is in uW on Linux bare metal.
                ("power_limit_w", lambda h=h: amdsmi.amdsmi_get_power_cap_info(h)["power_cap"] / 1e6),
                ("max_sm_clock_mhz", lambda h=h: amdsmi.amdsmi_get_clock_info(h, amdsmi.AmdSmiClkType.GFX)["max_clk"]),
                ("max_mem_clock_mhz", lambda h=h: amdsmi.amdsmi_get_clock_info(h, amdsmi.AmdSmiClkType.MEM)["max_clk"]),
                ("bus_id", lambda h=h: amdsmi.amdsmi_get_gpu_device_bdf(h)),
                ("compute_partition", lambda h=h: amdsmi.amdsmi_get_gpu_compute_partition(h)),
                ("memory_partition", lambda h=h: amdsmi.amdsmi_get_gpu_memory_partition(h)),
            ):
                try:
                    dev[key] = fn()
                except Exception as exc:
                    unknown[f"amdsmi.{key}"] = str(exc)
            devices.append(dev)
        out["devices"] = devices
        if devices and isinstance(devices[0].get("driver"), dict):
            out["driver_version"] = devices[0]["driver"].get("driver_version")
    except Exception as exc:
        unknown["amdsmi"] = f"amdsmi query failed: {exc}"
    return out


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _torch_info(fp: dict, unknown: dict) -> None:
    from gpuparity.errors import signals_deferred

    try:
        with signals_deferred():     # a Ctrl-C half-way through leaves torch broken: it waits
            import torch
    except Exception as exc:
        unknown["torch"] = f"torch not importable: {exc}"
        fp["backend"] = "cpu"
        return
    fp["torch_version"] = torch.__version__
    fp["cuda_version"] = getattr(torch.version, "cuda", None)
    fp["hip_version"] = getattr(torch.version, "hip", None)
    fp["torch_threads"] = torch.get_num_threads()
    cfg = ""
    try:
        cfg = torch.__config__.show()
    except Exception:
        pass
    blas = re.search(r"BLAS_INFO=(\w+)", cfg)
    fp["cpu_blas"] = blas.group(1) if blas else None
    fp["mkldnn"] = bool(torch.backends.mkldnn.is_available())
    try:
        gpu = torch.cuda.is_available()
    except Exception as exc:
        gpu = False
        unknown["gpu"] = f"torch.cuda.is_available() failed: {exc}"
    if not gpu:
        fp["backend"] = "cpu"
        if fp["cuda_version"] or fp["hip_version"]:
            unknown["gpu"] = "torch has GPU support but sees no device"
        else:
            unknown.setdefault("gpu", "CPU-only torch build")
        return
    fp["backend"] = "rocm" if fp["hip_version"] else "cuda"
    n = torch.cuda.device_count()
    devices = []
    for i in range(n):
        p = torch.cuda.get_device_properties(i)
        dev = {
            "index": i,
            "name": p.name,
            "memory_bytes": int(p.total_memory),
            "multiprocessors": int(p.multi_processor_count),
            "compute_capability": f"{p.major}.{p.minor}",
        }
        arch = getattr(p, "gcnArchName", None)
        dev["arch_target"] = arch.split(":")[0] if fp["hip_version"] and arch else f"sm_{p.major}{p.minor}"
        dev["l2_bytes"] = int(getattr(p, "L2_cache_size", 0) or 0) or None
        dev["llc_bytes"] = gpu_llc_bytes(dev["arch_target"], dev["l2_bytes"])
        devices.append(dev)
    fp["devices"] = devices
    fp["device_count"] = n
    try:
        fp["cudnn_version"] = torch.backends.cudnn.version()
    except Exception:
        fp["cudnn_version"] = None
    try:
        v = torch.cuda.nccl.version()
        fp["nccl_version"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    except Exception as exc:
        unknown["nccl_version"] = str(exc)
    fp["gpu_blas"] = "hipBLASLt/rocBLAS" if fp["hip_version"] else f"cuBLAS (CUDA {fp['cuda_version']})"
    if fp["hip_version"]:
        fp["tunableop"] = os.environ.get("PYTORCH_TUNABLEOP_ENABLED", "0") == "1"
        rocm = _read("/opt/rocm/.info/version")
        fp["rocm_version"] = rocm.strip() if rocm else fp["hip_version"]


@lru_cache(maxsize=1)
def fingerprint() -> dict:
    """The full fingerprint (cached: probing the device is slow)."""
    unknown: dict[str, str] = {}
    fp: dict[str, Any] = {
        "host": socket.gethostname(),
        "os": f"{_pyplatform.system()} {_pyplatform.release()}",
        "python": _pyplatform.python_version(),
        "cpu": cpu_info(),
        "env": env_flags(),
        "unknown": unknown,
    }
    job = slurm_job()
    if job is not None:
        fp["slurm"] = job
    _torch_info(fp, unknown)
    if fp["backend"] == "cuda":
        mgmt = _nvml_info(unknown)
    elif fp["backend"] == "rocm":
        mgmt = _amdsmi_info(unknown)
    else:
        mgmt = {}
        unknown.setdefault("management_library", "no GPU: NVML / amdsmi not probed")
    fp["driver_version"] = mgmt.get("driver_version")
    fp["management"] = mgmt.get("devices")
    if fp["backend"] == "cpu":
        cpu = fp["cpu"]
        fp.update(vendor=cpu.get("vendor") or "cpu", product=cpu["model"], arch_target=cpu["arch"],
                  device_count=0, memory_bytes=int((cpu.get("memory_gb") or 0) * 1e9))
        fp["spec"] = cpu_spec(cpu)
    else:
        d0 = fp["devices"][0]
        product = d0["name"]
        named, partition = _management_identity(fp.get("management"))
        if generic(product) and named:
            product = named       # ROCm's generic name: amdsmi's market name, one for every GPU here
        spec, why = identify(product, d0["arch_target"], d0["memory_bytes"] / 1e9, partition)
        fp["spec_match"] = why
        if generic(product):
            product = spec["product"] if spec else d0["arch_target"]
        fp.update(vendor="AMD" if fp["backend"] == "rocm" else "NVIDIA", product=product,
                  arch_target=d0["arch_target"], memory_bytes=d0["memory_bytes"])
        fp["spec"] = spec
        if spec is None:
            unknown["spec"] = why
    fp["support"] = support_status(fp["arch_target"] if fp["backend"] != "cpu" else None)
    return fp


def _management_identity(devices) -> tuple[str | None, str | None]:
    """(market name, compute partition) every management-library device agrees on, else None."""
    names, parts = set(), set()
    for d in devices or []:
        asic = d.get("asic") if isinstance(d, dict) else None
        names.add(asic.get("market_name") if isinstance(asic, dict) else None)
        parts.add(d.get("compute_partition") if isinstance(d, dict) else None)
    name = names.pop() if len(names) == 1 else None
    part = parts.pop() if len(parts) == 1 else None
    return (name if isinstance(name, str) and not generic(name) else None,
            part if isinstance(part, str) else None)


def torch_device(fp: dict) -> str:
    return "cpu" if fp.get("backend") == "cpu" else "cuda"
