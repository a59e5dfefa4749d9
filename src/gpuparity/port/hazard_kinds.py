"""The hazards a port can carry: what each kind breaks on AMD GPUs, how to fix it, and how bad it
is (the build fails; it builds but can give wrong results; it runs slower than it could).
hazards.py finds them; report.py and run.py count and print them."""

from __future__ import annotations

from dataclasses import dataclass

LDS_BYTES = 65536  # LDS per workgroup on CDNA2/CDNA3 (MI200/MI300); gfx950 has 160 KB

# kind -> (why it breaks on AMD, suggested fix)
KINDS: dict[str, tuple[str, str]] = {
    "warp_size_32": (
        "hard-codes a warp of 32 lanes; AMD CDNA GPUs run 64-lane wavefronts, so lane/warp "
        "indices, per-warp arrays and shuffle loops cover only half the wavefront",
        "derive lane and warp indices from warpSize (threadIdx.x % warpSize, / warpSize) and size "
        "per-warp arrays by blockDim.x / warpSize or a 64-lane upper bound"),
    "lane_mask_32": (
        "32-bit lane mask: on a 64-lane wavefront it names only lanes 0-31, and HIP's *_sync "
        "intrinsics (HIP 6.2+) require a 64-bit mask",
        "use a 64-bit mask (0xffffffffffffffffull or __activemask()); HIP 6.2-6.x need "
        "-DHIP_ENABLE_WARP_SYNC_BUILTINS for the *_sync intrinsics"),
    "sync_mask_dropped": (
        "the target HIP has no *_sync warp intrinsics, so the mask was dropped and the "
        "unsynchronised form acts on every active lane",
        "check that the code relied only on a full mask, or target HIP 6.2+ (--hip-version)"),
    "ballot_32bit": (
        "ballot/activemask results are 64-bit on AMD (one bit per lane); storing or counting "
        "them as 32-bit drops lanes 32-63",
        "store in uint64_t / unsigned long long (or auto) and use __popcll / __ffsll"),
    "inline_asm": (
        "inline PTX assembly does not assemble for AMD GPUs",
        "replace with a HIP/C++ intrinsic or builtin (e.g. __lane_id(), __builtin_amdgcn_*), "
        "or guard it with #ifdef __HIP_PLATFORM_NVIDIA__"),
    "launch_bounds": (
        "the second __launch_bounds__ argument means min blocks per SM on CUDA but min "
        "warps per execution unit on HIP, so occupancy hints change meaning",
        "keep only the first argument, or recompute the second as HIP's min waves per EU"),
    "texture_reference": (
        "texture references (texture<...>) were removed in CUDA 12 and HIP dropped them too",
        "use texture objects (hipTextureObject_t with hipCreateTextureObject)"),
    "cuda_arch_macro": (
        "__CUDA_ARCH__ is not defined by hipcc for AMD targets, so device-only branches "
        "silently compile as host code or vanish",
        "test __HIP_DEVICE_COMPILE__ for device code, or arch macros such as __gfx942__ / "
        "__HIP_ARCH_HAS_* feature macros"),
    "grid_sync": (
        "cooperative-groups grid sync needs a cooperative launch and a grid that fits on the "
        "device at once; occupancy differs on AMD, so a working CUDA grid size can deadlock or fail",
        "launch with hipLaunchCooperativeKernel and size the grid from "
        "hipOccupancyMaxActiveBlocksPerMultiprocessor; check hipDeviceAttributeCooperativeLaunch"),
    "thread_block_cluster": (
        "thread-block clusters (sm_90) have no AMD equivalent",
        "restructure to single-block cooperation or global-memory exchange"),
    "launch_kernel_ex": (
        "cudaLaunchKernelEx with launch attributes has no HIP equivalent",
        "launch with <<<...>>> or hipLaunchKernel and drop CUDA-only attributes"),
    "warp_matrix": (
        "warp matrix ops (nvcuda::wmma, PTX mma.sync) are NVIDIA tensor-core APIs",
        "port to rocWMMA (rocwmma::fragment, rocwmma::mma_sync) or MFMA builtins; tile shapes differ"),
    "no_dropin_library": (
        "this library has no drop-in AMD replacement; the renamed calls will not match",
        "port by hand: CUTLASS -> composable_kernel, cuBLASLt -> hipBLASLt"),
    "shared_memory_64k": (
        f"asks for more than {LDS_BYTES // 1024} KB of shared memory per block; AMD LDS is "
        f"{LDS_BYTES // 1024} KB per workgroup on MI200/MI300",
        "shrink the tile, split it across blocks, or stage through registers/global memory"),
    "independent_thread_scheduling": (
        "__syncwarp after lane-divergent code relies on Volta independent thread scheduling; "
        "AMD wavefronts reconverge differently",
        "restructure so all lanes reach the sync together, or use __syncthreads()"),
}


# What a hazard does to the port, worst first: the build fails; it builds but can fail or give
# wrong results at run time; it works but runs slower than it could.
BLOCKS_BUILD, WRONG_RESULTS, PERFORMANCE = "blocks build", "wrong results", "performance"
SEVERITIES = (BLOCKS_BUILD, WRONG_RESULTS, PERFORMANCE)
SEVERITY = {
    "warp_size_32": WRONG_RESULTS, "lane_mask_32": WRONG_RESULTS, "sync_mask_dropped": WRONG_RESULTS,
    "ballot_32bit": WRONG_RESULTS, "inline_asm": BLOCKS_BUILD, "launch_bounds": PERFORMANCE,
    "texture_reference": BLOCKS_BUILD, "cuda_arch_macro": WRONG_RESULTS, "grid_sync": WRONG_RESULTS,
    "thread_block_cluster": BLOCKS_BUILD, "launch_kernel_ex": BLOCKS_BUILD, "warp_matrix": BLOCKS_BUILD,
    "no_dropin_library": BLOCKS_BUILD, "shared_memory_64k": WRONG_RESULTS,
    "independent_thread_scheduling": WRONG_RESULTS,
}
WARP_SYNC_BUILTINS = (6, 2, 0)  # HIP's *_sync intrinsics static_assert a 64-bit mask


@dataclass
class Hazard:
    kind: str
    line: int
    why: str
    fix: str
    code: str = ""
    detail: str = ""
    severity: str = WRONG_RESULTS
