"""Text a port adds to a file: the HIP runtime #include (nvcc includes the CUDA runtime
implicitly), the cuBLAS v1 helpers, and __half warp shuffles for a HIP before 5.6."""

from __future__ import annotations

from gpuparity.port import blas_v1, fp16, includes
from gpuparity.port.context import Context
from gpuparity.port.model import ApiUse, Rewrite

# CUDA's built-in device names: code with any of them needs the HIP runtime header.
_DEVICE_WORDS = {"__global__", "__device__", "__shared__", "__constant__", "__managed__", "__launch_bounds__",
                 "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"}


def needs_runtime(ids: set[str], uses: list[ApiUse]) -> bool:
    if any(u.supported and u.family != "header" for u in uses):
        return True
    return not ids.isdisjoint(_DEVICE_WORDS)


def add_runtime_include(ctx: Context, out: str) -> str:
    """HIP code needs the runtime header where CUDA got it from nvcc implicitly."""
    nl = "\r\n" if "\r\n" in ctx.text[:4096] else "\n"
    at = includes.runtime_insertion_point(ctx.text, ctx.toks)
    ctx.ed.insert(at, f"#include <hip/hip_runtime.h>{nl}")
    ctx.result.rewrites.append(Rewrite(ctx.text.count("\n", 0, at) + 1,
                                       "added #include <hip/hip_runtime.h> (nvcc includes the CUDA runtime "
                                       "implicitly)"))
    return ctx.ed.apply()


def add_v1_prelude(ctx: Context) -> None:
    """The cuBLAS v1 helpers, after the file's cuBLAS include (or, with none, before its
    first include, with the library's header)."""
    nl = "\r\n" if "\r\n" in ctx.text[:4096] else "\n"
    text = blas_v1.prelude(ctx.opts.roc, nl)
    at = ctx.cublas_include_end
    if at < 0:
        at = max(ctx.first_include, 0)
        text = f"#include <{blas_v1.header_of(ctx.opts.roc)}>{nl}" + text
    ctx.ed.insert(at, text)
    ctx.result.rewrites.append(Rewrite(ctx.text.count("\n", 0, at) + 1, "cuBLAS v1 helpers added (one handle for the "
                                       "file's v1 calls, their last error, character -> enum conversions)"))


def add_half_shuffles(ctx: Context) -> None:
    nl = "\r\n" if "\r\n" in ctx.text[:4096] else "\n"
    at = fp16.insertion_point(ctx.text, ctx.toks)
    ctx.ed.insert(at or 0, fp16.prelude(nl, with_headers=at is None))
    if at is None:
        ctx.runtime_included = True
    ctx.result.rewrites.append(Rewrite(ctx.text.count("\n", 0, at or 0) + 1, "__half / __half2 warp shuffle "
                                       "overloads added (the target HIP has none before 5.6)"))
