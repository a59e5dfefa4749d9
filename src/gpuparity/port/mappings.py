"""CUDA -> HIP name map: the packaged HIPIFY-derived table plus this project's overrides.

`resolve(name, target, roc)` answers: what HIP name does this CUDA name become, and is it
usable on the target HIP version? An API whose HIP 'added' version is newer than the target,
or that HIP removed by then, counts as unsupported for that target. With `roc`, the cuBLAS,
cuSPARSE, cuRAND and cuSOLVER names go straight to rocBLAS, rocSPARSE, rocRAND and rocSOLVER
(HIPIFY's ROC column) instead of the hip* wrapper libraries.
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
# 'legacy' is what to emit for targets older than 'added' (see warp_sync.py for the rewrite).
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

# The compiler's own macros: a file that defines one (to pose as nvcc) defines the HIP one.
COMPILER_MACROS = {"__CUDACC__"}

# --roc: the families that go to a ROCm library, and that library's name.
ROC_LIBRARY = {"cublas": "rocBLAS", "cusparse": "rocSPARSE", "curand": "rocRAND", "cusolver": "rocSOLVER"}
# ROC rows the HIPIFY tables leave empty although rocRAND has the type (rocrand_kernel.h):
# cuRAND's default device generator is XORWOW.
ROC_OVERRIDES: dict[str, dict] = {
    "curandState_t": {"name": "rocrand_state_xorwow", "added": "1.5.0"},
    "curandState": {"name": "rocrand_state_xorwow", "added": "1.5.0"},
    "curandStateXORWOW_t": {"name": "rocrand_state_xorwow", "added": "1.5.0"},
    "curandStateXORWOW": {"name": "rocrand_device::xorwow_engine", "added": "1.5.0"},
    # cuBLAS names the ROC table leaves empty although rocBLAS has the call or an equivalent:
    # SgemmEx is gemm_ex with FP32 compute (roc_rewrites.py); rocBLAS uses its matrix cores by default.
    "cublasSgemmEx": {"name": "rocblas_gemm_ex", "added": "1.8.2"},
    "CUBLAS_TENSOR_OP_MATH": {"name": "rocblas_default_math", "added": "5.7.0"},
    "CUBLAS_PEDANTIC_MATH": {"name": "rocblas_default_math", "added": "5.7.0"},
    "CUBLAS_TF32_TENSOR_OP_MATH": {"name": "rocblas_xf32_xdl_math_op", "added": "5.7.0"},
    "mtgp32_kernel_params": {"name": "mtgp32_params", "added": "1.5.0"},
    "mtgp32_kernel_params_t": {"name": "mtgp32_params", "added": "1.5.0"},
    "curandMakeMTGP32Constants": {"name": "", "added": "1.5.0"},  # the call is replaced (roc_rewrites.py)
    # cuSPARSE's generic triangular solves: rocSPARSE's one call per stage (sparse_roc.py)
    "cusparseSpSV_bufferSize": {"name": "rocsparse_spsv", "added": "5.1.0"},
    "cusparseSpSV_analysis": {"name": "rocsparse_spsv", "added": "5.1.0"},
    "cusparseSpSM_bufferSize": {"name": "rocsparse_spsm", "added": "5.1.0"},
    "cusparseSpSM_analysis": {"name": "rocsparse_spsm", "added": "5.1.0"},
    "cusparseSpSV_solve": {"name": "rocsparse_spsv", "added": "5.1.0"},  # refused there, with the reason
    "cusparseSpSM_solve": {"name": "rocsparse_spsm", "added": "5.1.0"},
}
# Names HIPIFY's tables lack: cuRAND's MTGP32 kernel parameters (hipRAND keeps the name).
EXTRA_APIS = {name: {"family": "curand", "hip": name, "added": "1.5.0"}
              for name in ("mtgp32_kernel_params", "mtgp32_kernel_params_t")}
# Names the tables leave empty that roc_rewrites.py ports to rocSOLVER (its calls allocate their
# own workspace and some write no info), and the workspace queries, which become an
# expression (name ""). rocSOLVER's first releases (ROCm 3.2) had getrf/getrs/potrf/geqrf;
# potrs came with 4.1, syevd with 4.5.
_ROCSOLVER_CALLS = {"getrf": "3.2.0", "getrs": "3.2.0", "geqrf": "3.2.0", "potrs": "4.1.0"}
for _t in "SDCZ":
    for _call, _added in _ROCSOLVER_CALLS.items():
        ROC_OVERRIDES[f"cusolverDn{_t}{_call}"] = {"name": f"rocsolver_{_t.lower()}{_call}", "added": _added}
    for _call in ("potrf", "getrf", "geqrf"):
        ROC_OVERRIDES[f"cusolverDn{_t}{_call}_bufferSize"] = {"name": "", "added": "3.2.0"}
for _t in "SD":  # the complex ones are heevd
    ROC_OVERRIDES[f"cusolverDn{_t}syevd"] = {"name": f"rocsolver_{_t.lower()}syevd", "added": "4.5.0"}
    ROC_OVERRIDES[f"cusolverDn{_t}syevd_bufferSize"] = {"name": "", "added": "4.5.0"}
# cuSOLVER's handle is a rocBLAS handle in rocSOLVER (the table gives the names, not the versions).
ROC_OVERRIDES.update({
    "cusolverDnCreate": {"name": "rocblas_create_handle", "added": "1.5.0"},
    "cusolverDnDestroy": {"name": "rocblas_destroy_handle", "added": "1.5.0"},
    "cusolverDnSetStream": {"name": "rocblas_set_stream", "added": "1.5.0"},
    "cusolverDnGetStream": {"name": "rocblas_get_stream", "added": "1.5.0"},
})

# cuDNN -> MIOpen where HIPIFY's table leaves the MIOpen cell empty (or maps a call whose
# arguments differ as a plain rename): dnn.py rewrites these calls' arguments, and a call
# it cannot rewrite keeps its CUDA name (MIOPEN_REWRITTEN). 'why' is the reason shown for
# a name with no MIOpen counterpart.
_M = "2.1.0"  # MIOpen's first API in HIPIFY's tables
MIOPEN_OVERRIDES: dict[str, dict] = {
    "cudnnCreateFilterDescriptor": {"hip": "miopenCreateTensorDescriptor", "added": _M},
    "cudnnDestroyFilterDescriptor": {"hip": "miopenDestroyTensorDescriptor", "added": _M},
    "cudnnSetTensor4dDescriptor": {"hip": "miopenSet4dTensorDescriptor", "added": _M},
    "cudnnSetFilter4dDescriptor": {"hip": "miopenSet4dTensorDescriptor", "added": _M},
    "cudnnSetTensorNdDescriptor": {"hip": "miopenSetTensorDescriptor", "added": _M},
    "cudnnSetFilterNdDescriptor": {"hip": "miopenSetTensorDescriptor", "added": _M},
    "cudnnSetConvolution2dDescriptor": {"hip": "miopenInitConvolutionDescriptor", "added": _M},
    "cudnnSetConvolutionNdDescriptor": {"hip": "miopenInitConvolutionNdDescriptor", "added": _M},
    "cudnnSetConvolutionMathType": {"hip": "", "added": _M},
    "cudnnConvolutionBackwardFilter": {"hip": "miopenConvolutionBackwardWeights", "added": _M},
    "cudnnGetConvolutionBackwardFilterWorkspaceSize": {"hip": "miopenConvolutionBackwardWeightsGetWorkSpaceSize",
                                                       "added": _M},
    "cudnnFindConvolutionBackwardDataAlgorithmEx": {"hip": "miopenFindConvolutionBackwardDataAlgorithm", "added": _M},
    "cudnnFindConvolutionBackwardFilterAlgorithmEx": {"hip": "miopenFindConvolutionBackwardWeightsAlgorithm",
                                                      "added": _M},
    "cudnnGetConvolutionForwardAlgorithmMaxCount": {"hip": "", "added": _M},
    "cudnnGetConvolutionBackwardDataAlgorithmMaxCount": {"hip": "", "added": _M},
    "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount": {"hip": "", "added": _M},
    "cudnnConvolutionBwdFilterAlgoPerf_t": {"hip": "miopenConvAlgoPerf_t", "added": _M},
    "cudnnConvolutionBwdFilterAlgoPerfStruct": {"hip": "miopenConvAlgoPerf_t", "added": _M},
    "cudnnConvolutionBwdFilterAlgo_t": {"hip": "miopenConvBwdWeightsAlgorithm_t", "added": _M},
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0": {"hip": "miopenConvolutionBwdWeightsAlgoGEMM", "added": _M},
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1": {"hip": "miopenConvolutionBwdWeightsAlgoDirect", "added": _M},
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED": {"hip": "miopenConvolutionBwdWeightsAlgoWinograd",
                                                            "added": _M},
    "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM": {"hip": "miopenConvolutionFwdAlgoImplicitGEMM",
                                                        "added": "2.6.0"},
    "CUDNN_BATCHNORM_SPATIAL_PERSISTENT": {"hip": "miopenBNSpatial", "added": _M},
    "cudnnPoolingForward": {"hip": "miopenPoolingForward", "added": _M},
    "cudnnSetActivationDescriptor": {"hip": "miopenSetActivationDescriptor", "added": _M},
    # LRN: MIOpen's descriptor holds the mode, which cuDNN passes to the forward call
    "cudnnSetLRNDescriptor": {"hip": "miopenSetLRNDescriptor", "added": _M},
    "cudnnLRNCrossChannelForward": {"hip": "miopenLRNForward", "added": _M},
    # Wrong in the table, or needing a person:
    "cudnnLRNCrossChannelBackward": {"why": "MIOpen's miopenLRNBackward takes no mode and reads the workspace its "
                                            "forward filled: run miopenLRNForward with do_backward = true and a "
                                            "workspace of miopenLRNGetWorkSpaceSize(yDesc) bytes, then call "
                                            "miopenLRNBackward(handle, desc, alpha, yDesc, y, dyDesc, dy, xDesc, x, "
                                            "beta, dxDesc, dx, workspace)"},
    "cudnnGetLRNDescriptor": {"why": "MIOpen's miopenGetLRNDescriptor also returns the mode (a miopenLRNMode_t* "
                                     "after the descriptor, before lrnN): add a variable for it"},
    "CUDNN_CONVOLUTION": {"why": "MIOpen's miopenConvolution is cross-correlation (cuDNN's "
                                 "CUDNN_CROSS_CORRELATION); a true convolution needs the filter flipped by hand"},
    "CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT": {"why": "MIOpen has no algorithm count: "
                                                     "ask miopenFindConvolutionBackwardDataAlgorithm for up to 5"},
    "cudnnPoolingBackward": {"why": "MIOpen's pooling backward reads the indices its forward saved: run "
                                    "miopenPoolingForward with do_backward = true and a workspace of "
                                    "miopenPoolingGetWorkSpaceSizeV2 bytes, then pass that workspace here"},
    "cudnnAddTensor": {"why": "no miopenAddTensor: use miopenOpTensor(handle, miopenTensorOpAdd, beta, cDesc, C, "
                              "alpha, aDesc, A, &zero, cDesc, C) (C = beta*C + alpha*A, A broadcast)"},
    "cudnnGetActivationDescriptor": {"why": "MIOpen's descriptor holds alpha, beta and gamma, not a NaN option and "
                                            "one coefficient: call miopenGetActivationDescriptor by hand"},
}
for _dir, _what in (("Forward", "Forward"), ("BackwardData", "BackwardData"), ("BackwardFilter", "BackwardWeights")):
    MIOPEN_OVERRIDES[f"cudnnFindConvolution{_dir}Algorithm"] = {
        "why": f"MIOpen's search runs on real buffers: call the Ex form (with x, w, y and a workspace), "
               f"which ports to miopenFindConvolution{_what}Algorithm"}
    for _v in ("", "_v7"):
        MIOPEN_OVERRIDES[f"cudnnGetConvolution{_dir}Algorithm{_v}"] = {
            "why": f"cuDNN's heuristic choice has no MIOpen call: benchmark with miopenFindConvolution{_what}"
                   f"Algorithm (the Ex form ports), or use MIOpen's immediate mode (miopenConvolution{_what}"
                   "GetSolution)"}
# Present in HIP 5.2's hip/library_types.h although the tables say 5.7 (hipDataType's
# later unification): the targeted HIP has them.
HIP_ADDED_OVERRIDES = {name: "5.2.0" for name in ("cudaDataType", "cudaDataType_t", "CUDA_R_16F", "CUDA_R_32F",
                                                   "CUDA_R_64F", "CUDA_C_16F", "CUDA_C_32F", "CUDA_C_64F")}
# hip* names the tables leave empty (the row's ROC name is kept): hipBLAS has had its status
# string call since 0.46 (ROCm 4.3).
HIP_NAME_OVERRIDES = {"cublasGetStatusString": ("hipblasStatusToString", "4.3.0")}
# rocSPARSE has its own data-type enum: in a file that uses cuSPARSE (and not cuBLAS) with
# --roc, these go to it instead of rocBLAS's (HIPIFY's cuBLAS table).
ROCSPARSE_DATATYPES = {
    "cudaDataType": "rocsparse_datatype", "cudaDataType_t": "rocsparse_datatype",
    "CUDA_R_32F": "rocsparse_datatype_f32_r", "CUDA_R_64F": "rocsparse_datatype_f64_r",
    "CUDA_C_32F": "rocsparse_datatype_f32_c", "CUDA_C_64F": "rocsparse_datatype_f64_c",
}
ROCSPARSE_DATATYPES_ADDED = "4.1.0"  # with rocSPARSE's generic API

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
    "cusolverRf.h": "hipsolver/hipsolver.h",  # hipSOLVER has the refactorization API (hipsolverRf*)
    "cusolverMg.h": "hipsolver/hipsolver.h",
    "cusolverSp_LOWLEVEL_PREVIEW.h": "hipsolver/hipsolver.h",
    "cusparse_v2.h": "hipsparse/hipsparse.h",
    "curand_mtgp32dc_p_11213.h": "rocrand/rocrand_mtgp32_11213.h",  # hipRAND reads rocRAND's table
    "curand_mtgp32_host.h": "hiprand/hiprand_mtgp32_host.h",
    # cuDNN 8 and 9 split cudnn.h into per-part headers: MIOpen has one.
    **{f"cudnn_{part}.h": "miopen/miopen.h" for part in (
        "v8", "v9", "version", "ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train",
        "backend", "graph", "ops", "cnn", "adv")},
    "cooperative_groups/reduce.h": "hip/hip_cooperative_groups.h",
    "mma.h": "rocwmma/rocwmma.hpp",
    "math_constants.h": "hip/hip_math_constants.h",
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

# --roc headers: the ROCm library's own header instead of the hip* wrapper's.
ROC_HEADERS = {
    "cublas.h": "rocblas/rocblas.h", "cublas_v2.h": "rocblas/rocblas.h", "cublas_api.h": "rocblas/rocblas.h",
    "cusparse.h": "rocsparse/rocsparse.h", "cusparse_v2.h": "rocsparse/rocsparse.h",
    "curand.h": "rocrand/rocrand.h", "curand_kernel.h": "rocrand/rocrand_kernel.h",
    "cusolverDn.h": "rocsolver/rocsolver.h", "cusolver_common.h": "rocsolver/rocsolver.h",
    "curand_mtgp32_host.h": "rocrand/rocrand_mtgp32.h", "curand_mtgp32dc_p_11213.h": "rocrand/rocrand_mtgp32_11213.h",
    # cuRAND's device headers: rocRAND's header for each part
    **{f"curand_{cuda}.h": f"rocrand/rocrand_{roc}.h" for cuda, roc in (
        ("discrete", "discrete"), ("discrete2", "discrete"), ("globals", "common"), ("lognormal", "log_normal"),
        ("mrg32k3a", "mrg32k3a"), ("mtgp32", "mtgp32"), ("mtgp32_kernel", "mtgp32"), ("normal", "normal"),
        ("normal_static", "normal"), ("philox4x32_x", "philox4x32_10"), ("poisson", "poisson"),
        ("precalc", "xorwow_precomputed"), ("uniform", "uniform"))},
}
# Headers a HIP release introduced: older targets get no counterpart (and are told so).
HEADER_ADDED = {"hip/hip_math_constants.h": (5, 3, 0)}
# ROCm 5.2 moved the library headers into per-library folders; older targets use the flat name.
FOLDER_HEADERS_SINCE = (5, 2, 0)
_FOLDERED = {"hipblas", "hipsparse", "hipsolver", "hiprand", "hipfft", "rocblas", "rocsparse", "rocrand",
             "rocsolver"}
# Header layouts: "folder" is the library's own folder (hipblas/hipblas.h), which every HIP since
# 5.2 has and ROCm 6.0 and later have alone; "hipify" is the name HIPIFY writes (hipblas.h, from
# the folder-less layout before 5.2), which builds where the library's folder is on the include
# path. hipRAND, rocRAND, hipFFT and rocSOLVER keep their folder in both.
LAYOUTS = ("hipify", "folder")
_HIPIFY_FLAT = {"hipblas", "hipsparse", "hipsolver", "rocblas", "rocsparse", "hipblaslt"}

# Which HIP headers each library family lives in (check.py uses this for messages).
LIBRARY_OF_HEADER = {
    "hipblas": "hipBLAS", "hipblaslt": "hipBLASLt", "hiprand": "hipRAND", "rocrand": "rocRAND",
    "hipfft": "hipFFT", "hipsparse": "hipSPARSE", "hipsolver": "hipSOLVER", "miopen": "MIOpen",
    "hipcub": "hipCUB", "thrust": "rocThrust", "rocwmma": "rocWMMA", "roctracer": "roctracer",
    "rccl": "RCCL", "rocblas": "rocBLAS", "rocsparse": "rocSPARSE", "rocsolver": "rocSOLVER",
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
    for name, added in HIP_ADDED_OVERRIDES.items():
        if name in apis:
            apis[name] = dict(apis[name], added=added)
    for name, (hip, added) in HIP_NAME_OVERRIDES.items():
        if name in apis:
            entry = {k: v for k, v in apis[name].items() if k != "unsupported"}
            apis[name] = dict(entry, hip=hip, added=added)
    apis.update(OVERRIDES)
    for name, entry in EXTRA_APIS.items():
        apis.setdefault(name, entry)
    for name, entry in MIOPEN_OVERRIDES.items():
        hipdnn = apis.get(name, {}).get("hipdnn")
        apis[name] = {"family": "cudnn", **entry, **({"hipdnn": hipdnn} if hipdnn else {})}
    return data


def lookup(name: str) -> dict | None:
    return load_table()["apis"].get(name)


def resolve_entry(name: str, entry: dict, target: tuple[int, ...]) -> Resolution:
    hip = entry.get("hip")
    family = entry.get("family", "")
    legacy = entry.get("legacy")
    # hip "" with a version: the call is ported by a rewrite into an expression (no name to emit)
    if hip is None or (hip == "" and not entry.get("added")):
        return Resolution(name, None, False, entry.get("why") or "no HIP equivalent", family)
    added = entry.get("added")
    label = hip or f"the port of {name}"
    if entry.get("unsupported") or not added:
        return Resolution(name, hip, False, f"{label} is not in a released HIP yet", family)
    removed = entry.get("removed")
    if removed and parse_version(removed) <= target:
        return Resolution(name, hip, False, f"{label} was removed in HIP {removed}", family)
    if parse_version(added) > target:
        if legacy:
            return Resolution(name, hip, True, f"{label} needs HIP {added}; emitting {legacy} instead",
                              family, legacy)
        return Resolution(name, hip, False, f"{label} needs HIP {added} (target {version_text(target)})",
                          family)
    note = f"{label} deprecated since HIP {entry['deprecated']}" if entry.get("deprecated") else ""
    return Resolution(name, hip, True, note, family)


def roc_entry(name: str, entry: dict) -> dict:
    """The --roc view of a table row: its ROC name and versions, or no counterpart."""
    family = entry.get("family", "")
    roc = ROC_OVERRIDES.get(name) or entry.get("roc")
    if roc is None:
        hip = entry.get("hip")
        why = f"no {ROC_LIBRARY[family]} equivalent" + (f" ({hip} exists in the hip* library)" if hip else "")
        return {"family": family, "roc_missing": why}
    out = {"family": family, "hip": roc["name"]}  # "": the rewrite emits an expression
    out.update({k: v for k, v in roc.items() if k != "name"})
    return out


HIPDNN_WHY = "hipDNN is not part of ROCm (HIPIFY's cuDNN target without --miopen): it builds only against hipDNN"


def resolve_hipdnn(name: str, entry: dict) -> Resolution:
    """--dnn hipdnn: the hipDNN name HIPIFY gives, always listed (no ROCm release has hipDNN)."""
    return Resolution(name, entry.get("hipdnn"), False, HIPDNN_WHY if entry.get("hipdnn") else "no hipDNN equivalent",
                      "cudnn")


@lru_cache(maxsize=65536)
def resolve(name: str, target: tuple[int, ...], roc: bool = False) -> Resolution | None:
    entry = lookup(name)
    if entry is None:
        return None
    if roc and entry.get("family") in ROC_LIBRARY:
        entry = roc_entry(name, entry)
        if "roc_missing" in entry:
            return Resolution(name, None, False, entry["roc_missing"], entry["family"])
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


def map_header(header: str, target: tuple[int, ...] | None = None, roc: bool = False,
               layout: str = "folder") -> tuple[bool, str | None]:
    """(is_a_cuda_header, hip_header_or_None) for the path inside <...> or "...", for the
    target HIP version (None: the newest), with roc the ROCm libraries' own headers, in the
    header layout asked (LAYOUTS)."""
    is_cuda, hip = _map_header(header, roc)
    if hip is None:
        return is_cuda, hip
    added = HEADER_ADDED.get(hip)
    if target is not None and added and target < added:
        return True, None
    top, _, rest = hip.partition("/")
    if rest and ((top in _FOLDERED and target is not None and target < FOLDER_HEADERS_SINCE)
                 or (layout == "hipify" and top in _HIPIFY_FLAT and rest == f"{top}.h")):
        return True, rest
    return is_cuda, hip


def header_note(header: str, target: tuple[int, ...], roc: bool = False) -> str:
    """Why a CUDA header has no counterpart on this target."""
    _, newest = _map_header(header, roc)
    added = HEADER_ADDED.get(newest or "")
    if added and target < added:
        return f"{newest} needs HIP {version_text(added)} (target {version_text(target)})"
    return "no HIP counterpart for this header"


@lru_cache(maxsize=4096)
def _map_header(header: str, roc: bool) -> tuple[bool, str | None]:
    if roc:
        if header in ROC_HEADERS:
            return True, ROC_HEADERS[header]
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
