"""torch.distributed for runs launched by torchrun: every rank measures, rank 0 writes.

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and GROUP_WORLD_SIZE (the number of
nodes) plus MASTER_ADDR/PORT, so `init()` needs no arguments. The back end is NCCL on a GPU
(ROCm builds of torch ship RCCL under the same name) and gloo on a CPU. Without torchrun
(WORLD_SIZE unset or 1) nothing is initialised and every helper is a no-op.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta

from gpuparity.validate import env_float, env_int


def timeout_s() -> float:
    """How long a collective may wait for a slow or dead rank before the job fails."""
    return env_float("GPUPARITY_DIST_TIMEOUT", 900.0, lo=1.0)


def world_size() -> int:
    return env_int("WORLD_SIZE", 1, lo=1)


def rank() -> int:
    return env_int("RANK", 0, lo=0)


def local_rank() -> int:
    return env_int("LOCAL_RANK", 0, lo=0)


def local_world_size() -> int:
    return env_int("LOCAL_WORLD_SIZE", world_size(), lo=1)


def nodes() -> int:
    """Nodes in the job: torchrun's GROUP_WORLD_SIZE, else ranks / ranks per node."""
    if os.environ.get("GROUP_WORLD_SIZE"):
        return env_int("GROUP_WORLD_SIZE", 1, lo=1)
    return max(1, world_size() // max(1, local_world_size()))


def is_distributed() -> bool:
    return world_size() > 1


def is_writer() -> bool:
    return rank() == 0


def _torch_dist():
    import torch.distributed as tdist

    return tdist


def initialized() -> bool:
    """Whether this process joined a process group. Never imports: after an import of torch that a
    signal interrupted, importing it again would run a half-initialised torch (and crash)."""
    tdist = sys.modules.get("torch.distributed")
    try:
        return bool(tdist is not None and tdist.is_available() and tdist.is_initialized())
    except Exception:   # noqa: BLE001 - a partially imported module lacks its functions
        return False


def backend() -> str | None:
    return _torch_dist().get_backend() if initialized() else None


def init() -> str | None:
    """Join the torchrun job's process group (once). Returns the back end, or None when not distributed."""
    if not is_distributed():
        return None
    if initialized():
        return backend()
    import torch

    tdist = _torch_dist()
    kwargs = {"timeout": timedelta(seconds=timeout_s())}
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank())
        name = "nccl"
        kwargs["device_id"] = torch.device("cuda", local_rank())  # eager NCCL init (torch >= 2.3)
    else:
        name = "gloo"
    try:
        tdist.init_process_group(name, **kwargs)
    except TypeError:  # torch < 2.3 has no device_id
        kwargs.pop("device_id", None)
        tdist.init_process_group(name, **kwargs)
    return name


def destroy() -> None:
    if initialized():
        _torch_dist().destroy_process_group()


def comm_device() -> str:
    """Where collective tensors live: this rank's GPU for NCCL, the CPU for gloo."""
    if backend() == "nccl":
        import torch

        return f"cuda:{torch.cuda.current_device()}"
    return "cpu"


def barrier() -> None:
    if not initialized():
        return
    tdist = _torch_dist()
    if backend() == "nccl":
        import torch

        tdist.barrier(device_ids=[torch.cuda.current_device()])
    else:
        tdist.barrier()


def reduce_max(values: list[float]) -> list[float]:
    """Element-wise MAX over ranks, returned on every rank (one collective)."""
    if not initialized():
        return list(values)
    import torch

    t = torch.tensor(values, dtype=torch.float64, device=comm_device())
    _torch_dist().all_reduce(t, op=_torch_dist().ReduceOp.MAX)
    return t.cpu().tolist()


def reduce_min(value: float) -> float:
    return -reduce_max([-value])[0]


def describe() -> dict:
    """The job's shape for the run document (world size, nodes, back end)."""
    return {
        "world_size": world_size(), "nodes": nodes(), "local_world_size": local_world_size(),
        "backend": backend(), "launcher": "torchrun" if os.environ.get("TORCHELASTIC_RUN_ID") else None,
    }


# -- interconnect topology of this node's GPUs ---------------------------------
# nvmlGpuTopologyLevel_t values, named as `nvidia-smi topo -m` prints them.
NVML_LEVELS = {0: "same board", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def topology(backend_name: str) -> dict:
    """GPU-to-GPU links on this node from NVML or amdsmi; never raises (reasons go in 'unknown')."""
    try:
        if backend_name == "cuda":
            return _nvml_topology()
        if backend_name == "rocm":
            return _amdsmi_topology()
    except Exception as exc:  # a management library that half works must not stop a run
        return {"source": backend_name, "unknown": f"{type(exc).__name__}: {exc}"}
    return {"source": None, "unknown": "no GPU"}


def _library(name: str):
    from gpuparity.platform.vendor_libs import load

    module, why = load(name)      # never prints to stdout, whatever the import raises
    if module is None:
        raise RuntimeError(why)
    return module


def _nvml_topology() -> dict:
    pynvml = _library("pynvml")
    pynvml.nvmlInit()
    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    nvlinks = []
    for h in handles:
        active = 0
        for link in range(pynvml.NVML_NVLINK_MAX_LINKS):
            try:
                active += pynvml.nvmlDeviceGetNvLinkState(h, link) == pynvml.NVML_FEATURE_ENABLED
            except pynvml.NVMLError:
                break  # no such link, or NVLink not supported
        nvlinks.append(active)
    links = []
    for i in range(len(handles)):
        for j in range(i + 1, len(handles)):
            level = pynvml.nvmlDeviceGetTopologyCommonAncestor(handles[i], handles[j])
            try:
                p2p = pynvml.nvmlDeviceGetP2PStatus(handles[i], handles[j], pynvml.NVML_P2P_CAPS_INDEX_NVLINK)
                nvlink = p2p == pynvml.NVML_P2P_STATUS_OK
            except pynvml.NVMLError:
                nvlink = None
            links.append({"a": i, "b": j, "path": NVML_LEVELS.get(int(level), str(level)), "nvlink": nvlink})
    kinds = {"NVLink" if lk["nvlink"] else "PCIe/" + lk["path"] for lk in links}
    return {"source": "nvml", "gpus": len(handles), "nvlinks_per_gpu": nvlinks, "links": links,
            "interconnect": ", ".join(sorted(kinds)) or None}


def _amdsmi_topology() -> dict:
    amdsmi = _library("amdsmi")
    amdsmi.amdsmi_init()
    handles = amdsmi.amdsmi_get_processor_handles()
    links = []
    for i in range(len(handles)):
        for j in range(i + 1, len(handles)):
            info = amdsmi.amdsmi_topo_get_link_type(handles[i], handles[j])
            links.append({"a": i, "b": j, "type": _amd_link_name(amdsmi, info.get("type")),
                          "hops": info.get("hops")})
    return {"source": "amdsmi", "gpus": len(handles), "links": links,
            "interconnect": ", ".join(sorted({lk["type"] for lk in links})) or None}


def _amd_link_name(amdsmi, kind) -> str:
    """The link type as a word (XGMI, PCIEXPRESS): amdsmi versions return an enum, a ctypes int or an int."""
    value = getattr(kind, "value", kind)
    for enum_name in ("AmdSmiLinkType", "AmdSmiIoLinkType"):
        enum = getattr(amdsmi, enum_name, None)
        try:
            return enum(value).name.split("_TYPE_")[-1]
        except Exception:
            continue
    return str(value)
