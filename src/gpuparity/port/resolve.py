"""What a CUDA name becomes in this file: the tables' resolution with the per-file rules
(legacy cuBLAS v1 calls, hipDNN names, experimental APIs, --roc element and data types)."""

from __future__ import annotations

import re

from gpuparity.port import blas_v1, dnn, mappings, roc_types
from gpuparity.port.context import Context

_DATA_TYPE = re.compile(r"cudaDataType(_t)?$|CUDA_[RC]_\d+[A-Z]*$")


def _is_cublas_v1(ctx: Context) -> bool:
    """The file includes cuBLAS's legacy header and not the v2 one (or, including neither,
    calls a v1-only function such as cublasInit): its BLAS calls take no handle."""
    if "cublas_v2.h" in ctx.headers:
        return False
    return "cublas.h" in ctx.headers or not blas_v1.V1_ONLY.isdisjoint(ctx.names)


def _uses_only_cusparse(ctx: Context) -> bool:
    # the texts of other tokens start with a quote, `<`, `#`, `/`, a digit or punctuation: no match
    prefixes = {x[:8].lower() for x in ctx.names}
    return "cusparse" in prefixes and not any(x.startswith("cublas") for x in prefixes)


def resolve(ctx: Context, name: str, entry: dict) -> mappings.Resolution:
    """The name's resolution, with the per-file rules: legacy cuBLAS v1 calls, --roc data types.
    Within a file it depends on the name alone (the file-wide facts it reads are settled at
    their first use), so each name is worked out once."""
    res = ctx.resolved.get(name)
    if res is None:
        res = ctx.resolved[name] = _resolve(ctx, name, entry)
    return res


def _resolve(ctx: Context, name: str, entry: dict) -> mappings.Resolution:
    opts = ctx.opts
    family = entry.get("family")
    if family == "cudnn" and opts.dnn == "hipdnn":
        return mappings.resolve_hipdnn(name, entry)
    if entry.get("experimental") and not opts.experimental:
        return mappings.Resolution(name, None, False, f"HIPIFY marks {entry.get('hip')} experimental "
                                   "(translated with experimental on)", family or "")
    if family == "cublas" and (name in blas_v1.V1_ONLY or name + "_v2" in mappings.load_table()["apis"]):
        if ctx.cublas_v1 is None:
            ctx.cublas_v1 = _is_cublas_v1(ctx)
        if ctx.cublas_v1 or name in blas_v1.V1_ONLY:  # the call is rewritten (blas_v1.py)
            return mappings.Resolution(name, "", True, "", family)
    elif family == "cudnn" and name in dnn.PERF_TYPES:
        ctx.uses_dnn = True  # a perf struct: its members may need renaming
    if opts.roc and opts.hip_data_types and _DATA_TYPE.match(name):  # HIP's data types, not the library's
        return mappings.resolve(name, opts.hip_version, False)
    if opts.roc and name in ctx.roc_elements:
        ctx.roc_complex |= name in roc_types.COMPLEX
        return mappings.Resolution(name, ctx.roc_elements[name], True, "", family)
    if opts.roc and name in mappings.ROCSPARSE_DATATYPES:
        if ctx.sparse_datatypes is None:
            ctx.sparse_datatypes = _uses_only_cusparse(ctx)
        if ctx.sparse_datatypes:
            roc = {"family": "cusparse", "hip": mappings.ROCSPARSE_DATATYPES[name],
                   "added": mappings.ROCSPARSE_DATATYPES_ADDED}
            return mappings.resolve_entry(name, roc, opts.hip_version)
    return mappings.resolve(name, opts.hip_version, opts.roc)


def emitted_name(ctx: Context, name: str) -> str:
    entry = mappings.load_table()["apis"].get(name)
    if entry is None:
        return name
    res = resolve(ctx, name, entry)
    return res.hip or name


def family(name: str) -> str:
    entry = mappings.load_table()["apis"].get(name)
    return entry.get("family", "") if entry else ""
