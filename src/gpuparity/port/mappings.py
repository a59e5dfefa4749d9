"""CUDA -> HIP name map: the packaged HIPIFY-derived table plus this project's overrides.

`resolve(name, target)` answers: what HIP name does this CUDA name become, and is it usable
on the target HIP version? An API whose HIP 'added' version is newer than the target, or
that HIP removed by then, counts as unsupported for that target.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from gpuparity.errors import UserError

NEWEST_HIP = "7.0"

# The HIPIFY tables lag HIP. Each entry here replaces the table row for that name.
# 'legacy' is what to emit for targets older than 'added' (see translate.py for the rewrite).
_WARP_SYNC_ADDED = "6.2.0"  # amd_warp_sync_functions.h first shipped in HIP 6.2
OVERRIDES: dict[str, dict] = {
    "__shfl_sync": {"hip": "__shfl_sync", "added": _WARP_SYNC_ADDED, "family": "device", "legacy": "__shfl"},
    "__shfl_up_sync": {"hip": "__shfl_up_sync", "added": _WARP_SYNC_ADDED, "family": "device",
                       "legacy": "__shfl_up"},
    "__shfl_down_sync": {"hip": "__shfl_down_sync", "added": _WARP_SYNC_ADDED, "family": "device",
                         "legacy": "__shfl_down"},
    "__shfl_xor_sync": {"hip": "__shfl_xor_sync", "added": _WARP_SYNC_ADDED, "family": "device",
                        "legacy": "__shfl_xor"},
    "__ballot_sync": {"hip": "__ballot_sync", "added": _WARP_SYNC_ADDED, "family": "device", "legacy": "__ballot"},
    "__any_sync": {"hip": "__any_sync", "added": _WARP_SYNC_ADDED, "family": "device", "legacy": "__any"},
    "__all_sync": {"hip": "__all_sync", "added": _WARP_SYNC_ADDED, "family": "device", "legacy": "__all"},
    "__activemask": {"hip": "__activemask", "added": _WARP_SYNC_ADDED, "family": "device",
                     "legacy": "__ballot(1)"},
    "__match_any_sync": {"hip": "__match_any_sync", "added": _WARP_SYNC_ADDED, "family": "device"},
    "__match_all_sync": {"hip": "__match_all_sync", "added": _WARP_SYNC_ADDED, "family": "device"},
    "__syncwarp": {"hip": "__syncwarp", "added": _WARP_SYNC_ADDED, "family": "device"},
    # Compiler macros: hipcc defines __HIPCC__, not __CUDACC__.
    "__CUDACC__": {"hip": "__HIPCC__", "added": "1.5.0", "family": "macro"},
    # HIP has no cudaLaunchKernelEx equivalent with launch attributes (clusters etc.).
    "cudaLaunchKernelEx": {"family": "runtime", "unsupported": True},
}

# Namespace renames: `cub::X` -> `hipcub::X`; `thrust::cuda::par` -> `thrust::hip::par`.
NAMESPACES = {"cub": "hipcub"}
THRUST_SYSTEM = {"cuda": "hip"}

# Headers the torch-derived list misses. Value None: a CUDA header with no HIP counterpart.
HEADER_OVERRIDES: dict[str, str | None] = {
    "cuda.h": "hip/hip_runtime.h",
    "cuda_runtime.h": "hip/hip_runtime.h",
    "cuda_runtime_api.h": "hip/hip_runtime_api.h",
    "device_launch_parameters.h": "hip/hip_runtime.h",
    "cuda_fp8.h": "hip/hip_fp8.h",
    "cudnn.h": "miopen/miopen.h",
    "cusolverDn.h": "hipsolver/hipsolver.h",
    "cusolverSp.h": "hipsolver/hipsolver.h",
    "cusolver_common.h": "hipsolver/hipsolver.h",
    "cusparse_v2.h": "hipsparse/hipsparse.h",
    "curand_mtgp32dc_p_11213.h": "hiprand/hiprand_kernel.h",
    "cooperative_groups/reduce.h": "hip/hip_cooperative_groups.h",
    "mma.h": "rocwmma/rocwmma.hpp",
    "cuda_pipeline.h": None,
    "cuda_awbarrier.h": None,
    "cupti.h": None,
}
# Prefix rules, tried in order after exact matches.
HEADER_PREFIXES: list[tuple[str, str | None]] = [
    ("thrust/system/cuda/", "thrust/system/hip/"),
    ("thrust/", "thrust/"),  # rocThrust keeps Thrust's header paths
    ("cub/", "hipcub/hipcub.hpp"),  # one umbrella header
    ("cutlass/", None),
    ("cute/", None),
    ("cuda/", None),  # libcu++
    ("nvtx3/", "roctracer/roctx.h"),
]
_CUDA_HEADER = re.compile(r"^(cuda|cu[A-Z]|cublas|cudnn|cufft|curand|cusparse|cusolver|nvrtc|nvToolsExt|"
                          r"nvml|cooperative_groups|sm_\d+_intrinsics|crt/|mma\.h)")

# Which HIP headers each library family lives in (check.py uses this for messages).
LIBRARY_OF_HEADER = {
    "hipblas": "hipBLAS", "hipblaslt": "hipBLASLt", "hiprand": "hipRAND", "rocrand": "rocRAND",
    "hipfft": "hipFFT", "hipsparse": "hipSPARSE", "hipsolver": "hipSOLVER", "miopen": "MIOpen",
    "hipcub": "hipCUB", "thrust": "rocThrust", "rocwmma": "rocWMMA", "roctracer": "roctracer",
    "rccl": "RCCL",
}


@dataclass(frozen=True)
class Resolution:
    cuda: str
    hip: str | None  # name to emit (None: leave as is)
    supported: bool
    reason: str  # why unsupported, or a note ('' when fine)
    family: str
    legacy: str | None = None  # emitted form for targets older than `added`, when one exists


def parse_version(text: str) -> tuple[int, ...]:
    """'6.2' / '6.2.1' -> (major, minor, patch). UserError on anything else."""
    m = re.fullmatch(r"\s*(?:HIP\s*)?(\d+)\.(\d+)(?:\.(\d+))?\s*", str(text))
    if not m:
        raise UserError(f"not a HIP version: {text!r} (expected e.g. 6.2 or 7.0)")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def version_text(v: tuple[int, ...]) -> str:
    """(6, 2, 0) -> '6.2'; (6, 2, 1) -> '6.2.1'."""
    return ".".join(str(x) for x in (v[:2] if len(v) > 2 and v[2] == 0 else v))


@lru_cache(maxsize=1)
def load_table() -> dict:
    raw = resources.files("gpuparity.port").joinpath("data/hipify_map.json").read_text(encoding="utf-8")
    data = json.loads(raw)
    apis = data["apis"]
    apis.update(OVERRIDES)
    return data


def lookup(name: str) -> dict | None:
    return load_table()["apis"].get(name)


def resolve_entry(name: str, entry: dict, target: tuple[int, ...]) -> Resolution:
    hip = entry.get("hip")
    family = entry.get("family", "")
    legacy = entry.get("legacy")
    if not hip:
        return Resolution(name, None, False, "no HIP equivalent", family)
    added = entry.get("added")
    if entry.get("unsupported") or not added:
        return Resolution(name, hip, False, f"{hip} is not in a released HIP yet", family)
    removed = entry.get("removed")
    if removed and parse_version(removed) <= target:
        return Resolution(name, hip, False, f"{hip} was removed in HIP {removed}", family)
    if parse_version(added) > target:
        if legacy:
            return Resolution(name, hip, True, f"{hip} needs HIP {added}; emitting {legacy} instead",
                              family, legacy)
        return Resolution(name, hip, False, f"{hip} needs HIP {added} (target {version_text(target)})",
                          family)
    note = f"{hip} deprecated since HIP {entry['deprecated']}" if entry.get("deprecated") else ""
    return Resolution(name, hip, True, note, family)


@lru_cache(maxsize=65536)
def resolve(name: str, target: tuple[int, ...]) -> Resolution | None:
    entry = lookup(name)
    if entry is None:
        return None
    return resolve_entry(name, entry, target)


def counts_as_api(name: str, entry: dict) -> bool:
    """Whether a use of `name` counts toward the portability score.

    Plain lower-case math names (sinf, erfcinvf) that HIP provides under the same name are
    C library functions, not CUDA APIs: counting them would inflate the score and a user's own
    function called `norm` would be miscounted.
    """
    hip = entry.get("hip")
    if hip == name and re.fullmatch(r"[a-z0-9_]+", name) and not name.startswith("__"):
        return False
    return name != "texture"  # texture<> references are a hazard, reported separately


def map_header(header: str) -> tuple[bool, str | None]:
    """(is_a_cuda_header, hip_header_or_None) for the path inside <...> or "..."."""
    if header in HEADER_OVERRIDES:
        return True, HEADER_OVERRIDES[header]
    headers = load_table()["headers"]
    if header in headers:
        return True, headers[header]
    for prefix, target in HEADER_PREFIXES:
        if header.startswith(prefix):
            if target is None:
                return True, None
            if target.endswith("/"):
                return True, target + header[len(prefix):]
            return True, target
    if _CUDA_HEADER.match(header):
        return True, None
    return False, None
