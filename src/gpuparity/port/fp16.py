"""Warp shuffles of __half / __half2 values on HIP before 5.6.

CUDA's cuda_fp16.h overloads the shuffles (__shfl*_sync, and the old __shfl*) for __half and
__half2; HIP's amd_hip_fp16.h has them only since ROCm 5.6. For an older target the
translated shuffle of a half2 matches no overload (a half is ambiguous between the int,
float and double ones), so the assignment that takes its result fails. A file that uses
half types and shuffles gets these overloads (through the 32-bit int shuffle, the way the
later HIP does it), once, after its includes.
"""

from __future__ import annotations

from gpuparity.port.tokens import Token

HALF_SHUFFLES_ADDED = (5, 6, 0)
_HALF_TYPES = {"half", "__half", "half2", "__half2"}
_SHUFFLES = {"__shfl", "__shfl_up", "__shfl_down", "__shfl_xor",
             "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync"}
# name -> (type of the lane argument, its parameter name)
_LEGACY = {"__shfl": ("int", "lane"), "__shfl_up": ("unsigned int", "delta"),
           "__shfl_down": ("unsigned int", "delta"), "__shfl_xor": ("int", "mask")}


def needs_half_shuffles(toks: list[Token], target: tuple[int, ...]) -> bool:
    if target >= HALF_SHUFFLES_ADDED:
        return False
    ids = {t.text for t in toks if t.kind == "id"}
    return bool(ids & _HALF_TYPES) and bool(ids & _SHUFFLES)


def prelude(nl: str = "\n", with_headers: bool = False) -> str:
    """The overloads; with_headers: preceded by the HIP headers they need (a file with no
    #include of its own)."""
    lines = ["#include <hip/hip_runtime.h>", "#include <hip/hip_fp16.h>"] if with_headers else []
    lines += ["#ifndef GPUPARITY_HALF_SHUFFLES", "#define GPUPARITY_HALF_SHUFFLES",
             "/* gpuparity: HIP before 5.6 has no __half / __half2 warp shuffles (CUDA's cuda_fp16.h has). */"]
    for name, (lane_type, lane) in _LEGACY.items():
        for half in ("__half", "__half2"):
            clear = " t.i = 0;" if half == "__half" else ""  # a __half fills half of the int
            lines.append(f"__device__ inline {half} {name}({half} v, {lane_type} {lane}, int width = warpSize) "
                         f"{{ union {{ int i; {half} h; }} t;{clear} t.h = v; t.i = {name}(t.i, {lane}, width); "
                         f"return t.h; }}")
    lines.append("#endif")
    return nl.join(lines) + nl


def insertion_point(text: str, toks: list[Token]) -> int | None:
    """After the file's last #include line (hip_fp16.h and the warp functions come first);
    None when it has none."""
    last = None
    for t in toks:
        if t.kind == "header" and t.directive == "include":
            last = t
    if last is None:
        return None
    end = text.find("\n", last.end)
    return len(text) if end < 0 else end + 1
