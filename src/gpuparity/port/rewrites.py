"""Calls whose HIP or ROCm counterpart takes other arguments: the call itself is rewritten.

Each rewrite gets the call's argument token ranges and edits the source through the
translation context; it returns a one-line note for the report, or None when the call does
not have the shape it expects (then only the name changes and the report says so).
The argument lists come from the libraries' headers (rocSPARSE's generic API, rocSOLVER,
rocBLAS's *_ex calls, HIP's symbol and function-address calls).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Callable

from gpuparity.port import mappings

if TYPE_CHECKING:
    from gpuparity.port.edits import Editor
    from gpuparity.port.tokens import Token

Args = list[tuple[int, int]]


@dataclass
class CallSite:
    """What a rewrite may touch: the source, its tokens, the editor and the target."""
    text: str
    toks: list[Token]
    ed: Editor
    target: tuple[int, ...]
    roc: bool
    handled: dict[int, str] = field(default_factory=dict)  # token index -> name already emitted
    rename: Callable[[str], str] = str  # a CUDA name -> the name this translation emits

    def arg(self, rng: tuple[int, int]) -> str:
        first, last = rng
        return self.text[self.toks[first].start:self.toks[last].end] if first <= last else ""

    def translated_arg(self, rng: tuple[int, int]) -> str:
        """An argument's text with its names translated, for text a rewrite copies."""
        first, last = rng
        if first > last:
            return ""
        out, pos = [], self.toks[first].start
        for tok in self.toks[first:last + 1]:
            if tok.kind == "id":
                out.append(self.text[pos:tok.start] + self.rename(tok.text))
                pos = tok.end
        out.append(self.text[pos:self.toks[last].end])
        return "".join(out)


Rewrite = Callable[[CallSite, int, Args, int], "str | None"]


# ---------------------------------------------------------------- HIP runtime

def _host_malloc(site: CallSite, i: int, args: Args, close: int) -> str | None:
    if len(args) == 2:
        site.ed.insert(site.toks[close].start, ", hipHostMallocDefault")
        return "added the hipHostMallocDefault flags argument"
    return None


def _wrap(site: CallSite, rng: tuple[int, int], before: str, after: str) -> None:
    site.ed.insert(site.toks[rng[0]].start, before)
    site.ed.insert(site.toks[rng[1]].end, after)


def _cast_func_arg(index: int) -> Rewrite:
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) <= index or args[index][0] > args[index][1]:
            return None
        arg = site.arg(args[index])
        if "void" in arg or "cast" in arg:
            return None
        _wrap(site, args[index], "reinterpret_cast<const void*>(", ")")
        return "kernel argument cast to const void* (HIP takes a function address)"
    return rewrite


def _symbol_arg(index: int) -> Rewrite:
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) <= index or args[index][0] > args[index][1] or "HIP_SYMBOL" in site.arg(args[index]):
            return None
        _wrap(site, args[index], "HIP_SYMBOL(", ")")
        return "symbol wrapped in HIP_SYMBOL()"
    return rewrite


def _reorder(n_args: int, order: tuple[int, ...], why: str) -> Rewrite:
    """The same arguments in another order: new argument k is old argument order[k]."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) != n_args or any(a > b for a, b in args):
            return None
        first = min(k for k, old in enumerate(order) if old != k)
        start, end = site.toks[args[first][0]].start, site.toks[args[-1][1]].end
        site.ed.replace(start, end, ", ".join(site.translated_arg(args[old]) for old in order[first:]))
        return why
    return rewrite


ARG_REWRITES: dict[str, Rewrite] = {
    "cudaMallocHost": _host_malloc,
    "cudaFuncSetAttribute": _cast_func_arg(0),
    "cudaFuncGetAttributes": _cast_func_arg(1),
    "cudaFuncSetCacheConfig": _cast_func_arg(0),
    "cudaLaunchKernel": _cast_func_arg(0),
    "cudaLaunchCooperativeKernel": _cast_func_arg(0),
    "cudaMemcpyToSymbol": _symbol_arg(0),
    "cudaMemcpyToSymbolAsync": _symbol_arg(0),
    "cudaMemcpyFromSymbol": _symbol_arg(1),
    "cudaMemcpyFromSymbolAsync": _symbol_arg(1),
    "cudaGetSymbolAddress": _symbol_arg(1),
    "cudaGetSymbolSize": _symbol_arg(1),
    # hipGraph*Symbol take the symbol's address too: (node, graph, deps, n, symbol, src, ...)
    "cudaGraphAddMemcpyNodeToSymbol": _symbol_arg(4),
    "cudaGraphAddMemcpyNodeFromSymbol": _symbol_arg(5),
    "cudaGraphMemcpyNodeSetParamsToSymbol": _symbol_arg(1),
    "cudaGraphMemcpyNodeSetParamsFromSymbol": _symbol_arg(2),
    "cudaGraphExecMemcpyNodeSetParamsToSymbol": _symbol_arg(2),
    "cudaGraphExecMemcpyNodeSetParamsFromSymbol": _symbol_arg(3),
    # MIOpen's softmax takes the algorithm and mode last (miopen.h, *_V2)
    "cudnnSoftmaxForward": _reorder(9, (0, 3, 4, 5, 6, 7, 8, 1, 2), "algorithm and mode moved last (MIOpen order)"),
    "cudnnSoftmaxBackward": _reorder(11, (0, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2),
                                     "algorithm and mode moved last (MIOpen order)"),
}


# ---------------------------------------------------------------- status strings for older targets

# name -> (HIP status type, enumerator prefix, library) per mode. The targeted HIP lacks the
# error-string call (hipSPARSE and rocSPARSE have it since 6.0), so an inline switch over the
# status enumerators that this HIP has takes its place.
STATUS_STRINGS = {
    "cusparseGetErrorString": {False: ("hipsparseStatus_t", "CUSPARSE_STATUS_", "hipSPARSE"),
                               True: ("rocsparse_status", "CUSPARSE_STATUS_", "rocSPARSE")},
    "cusparseGetErrorName": {False: ("hipsparseStatus_t", "CUSPARSE_STATUS_", "hipSPARSE"),
                             True: ("rocsparse_status", "CUSPARSE_STATUS_", "rocSPARSE")},
}


@lru_cache(maxsize=64)
def status_string_lambda(name: str, target: tuple[int, ...], roc: bool) -> str | None:
    """`[](hipsparseStatus_t s) -> const char* { switch (s) {...} }`: called with the original
    argument it gives the status name, as the missing call would."""
    spec = STATUS_STRINGS.get(name, {}).get(roc)
    if spec is None:
        return None
    type_name, prefix, library = spec
    cases = []
    seen = set()
    for cuda in mappings.load_table()["apis"]:
        if not cuda.startswith(prefix):
            continue
        res = mappings.resolve(cuda, target, roc)
        if res is None or not res.supported or not res.hip or res.hip in seen:
            continue
        seen.add(res.hip)
        cases.append(f'case {res.hip}: return "{res.hip}";')
    if not cases:
        return None
    return (f"[]({type_name} status_) -> const char* {{ switch (status_) {{ {' '.join(cases)} "
            f'default: return "unknown {library} status"; }} }}')


# ---------------------------------------------------------------- --roc: rocSPARSE generic API

def _roc_stage(n_args: int, tail: str, stage: str | None, stage_since: tuple[int, ...] | None = None) -> Rewrite:
    """cuSPARSE's generic calls come in pairs (X_bufferSize ends with size_t*, X ends with the
    buffer); rocSPARSE has one call per operation ending with (stage, size_t*, void* buffer)."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) != n_args:
            return None
        last = args[-1]
        if last[0] > last[1]:
            return None
        use_stage = stage is not None and (stage_since is None or site.target >= stage_since)
        before = f"{stage}, " if use_stage else ""
        if tail == "size":  # size query: a null buffer
            site.ed.insert(site.toks[last[0]].start, before)
            site.ed.insert(site.toks[last[1]].end, ", nullptr")
            what = f"added {before}nullptr buffer (size query)"
        else:  # the work itself: no size pointer
            site.ed.insert(site.toks[last[0]].start, before + "nullptr, ")
            what = f"added {before}nullptr size pointer"
        if tail == "buffer" and stage is not None and not use_stage:
            what += " (rocSPARSE before 6.0 has no stage: a null buffer here only queries the size)"
        return what
    return rewrite


def _drop_args(n_args: int, drop: tuple[int, int], why: str) -> Rewrite:
    """Remove the arguments drop[0]..drop[1] (inclusive)."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) != n_args:
            return None
        a, b = args[drop[0]], args[drop[1] + 1]
        site.ed.replace(site.toks[a[0]].start, site.toks[b[0]].start, "")
        return why
    return rewrite


def _no_workspace(n_args: int) -> Rewrite:
    """rocSOLVER allocates its own workspace: `X_bufferSize(..., &lwork)` becomes
    `(*(&lwork) = 0, rocblas_status_success)`, so the caller's allocation is empty."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) != n_args or args[-1][0] > args[-1][1]:
            return None
        site.ed.replace(site.toks[i].start, site.toks[close].end,
                        f"(*({site.arg(args[-1])}) = 0, rocblas_status_success)")
        return "rocSOLVER needs no workspace query: the size is set to 0"
    return rewrite


# cuBLAS compute types -> rocBLAS's rocblas_datatype, which rocblas_gemm_ex takes for them.
_GEMM_EX_COMPUTE = {
    "CUBLAS_COMPUTE_16F": "rocblas_datatype_f16_r", "CUBLAS_COMPUTE_16F_PEDANTIC": "rocblas_datatype_f16_r",
    "CUBLAS_COMPUTE_32F": "rocblas_datatype_f32_r", "CUBLAS_COMPUTE_32F_PEDANTIC": "rocblas_datatype_f32_r",
    "CUBLAS_COMPUTE_32F_FAST_16F": "rocblas_datatype_f32_r", "CUBLAS_COMPUTE_32F_FAST_16BF": "rocblas_datatype_f32_r",
    "CUBLAS_COMPUTE_32F_FAST_TF32": "rocblas_datatype_f32_r", "CUBLAS_COMPUTE_64F": "rocblas_datatype_f64_r",
    "CUBLAS_COMPUTE_64F_PEDANTIC": "rocblas_datatype_f64_r", "CUBLAS_COMPUTE_32I": "rocblas_datatype_i32_r",
    "CUBLAS_COMPUTE_32I_PEDANTIC": "rocblas_datatype_i32_r",
    "CUDA_R_16F": "rocblas_datatype_f16_r", "CUDA_R_32F": "rocblas_datatype_f32_r",
    "CUDA_R_64F": "rocblas_datatype_f64_r", "CUDA_R_32I": "rocblas_datatype_i32_r",
}


def _gemm_ex(n_args: int, c_first: int, c_count: int) -> Rewrite:
    """cublasGemm*Ex(..., C, Ctype, ldc[, strideC], [batch,] compute, algo) ->
    rocblas_gemm*_ex(..., C, Ctype, ldc[, strideC], D=C, Dtype, ldd[, strideD], [batch,]
    compute, algo, solution_index 0, flags 0): rocBLAS writes D, here the same matrix as C."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) != n_args:
            return None
        c_args = args[c_first:c_first + c_count]
        if any(a > b for a, b in c_args):
            return None
        site.ed.insert(site.toks[c_args[-1][1]].end, ", " + ", ".join(site.translated_arg(a) for a in c_args))
        site.ed.insert(site.toks[close].start, ", 0, 0")
        note = "D = C added (in place) and solution_index, flags = 0"
        compute = args[-2]
        if compute[0] == compute[1] and site.toks[compute[0]].text in _GEMM_EX_COMPUTE:
            tok = site.toks[compute[0]]
            new = _GEMM_EX_COMPUTE[tok.text]
            site.ed.replace(tok.start, tok.end, new)
            site.handled[compute[0]] = new
            note += f"; compute type {tok.text} -> {new}"
        return note
    return rewrite


ROC_ARG_REWRITES: dict[str, Rewrite] = {
    "cusparseSpMV_bufferSize": _roc_stage(10, "size", "rocsparse_spmv_stage_buffer_size", (6, 0, 0)),
    "cusparseSpMV": _roc_stage(10, "buffer", "rocsparse_spmv_stage_compute", (6, 0, 0)),
    "cusparseSpMM_bufferSize": _roc_stage(11, "size", "rocsparse_spmm_stage_buffer_size"),
    "cusparseSpMM_preprocess": _roc_stage(11, "buffer", "rocsparse_spmm_stage_preprocess"),
    "cusparseSpMM": _roc_stage(11, "buffer", "rocsparse_spmm_stage_compute"),
    "cusparseSpVV_bufferSize": _roc_stage(7, "size", None),
    "cusparseSpVV": _roc_stage(7, "buffer", None),
    "cusparseSparseToDense_bufferSize": _roc_stage(5, "size", None),
    "cusparseSparseToDense": _roc_stage(5, "buffer", None),
    "cusparseDenseToSparse_bufferSize": _roc_stage(5, "size", None),
    "cusparseDenseToSparse_analysis": _roc_stage(5, "buffer", None),
    "cublasGemmEx": _gemm_ex(19, 14, 3),
    "cublasGemmBatchedEx": _gemm_ex(20, 14, 3),
    "cublasGemmStridedBatchedEx": _gemm_ex(23, 16, 4),
}
_POTRF_WHY = "rocSOLVER allocates its own workspace: Workspace and Lwork dropped"
_GETRF_WHY = "rocSOLVER allocates its own workspace: Workspace dropped"
for _t in "SDCZ":
    ROC_ARG_REWRITES[f"cusolverDn{_t}potrf"] = _drop_args(8, (5, 6), _POTRF_WHY)
    ROC_ARG_REWRITES[f"cusolverDn{_t}potrf_bufferSize"] = _no_workspace(6)
    ROC_ARG_REWRITES[f"cusolverDn{_t}getrf"] = _drop_args(8, (5, 5), _GETRF_WHY)
    ROC_ARG_REWRITES[f"cusolverDn{_t}getrf_bufferSize"] = _no_workspace(6)

