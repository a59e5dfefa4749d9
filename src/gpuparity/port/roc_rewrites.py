"""--roc: calls whose ROCm library counterpart takes other arguments (rocSPARSE's generic API
stages, rocBLAS's gemm_ex and element types, rocSOLVER's own workspaces, rocRAND's MTGP32
set-up): the call is rewritten. The argument lists come from the libraries' headers."""

from __future__ import annotations

import re

from gpuparity.port.call_site import Args, CallSite, Rewrite, arg_texts


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
        for k in range(drop[0], drop[1] + 1):
            site.consume(args[k])
        return why
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


# cuBLAS's algorithm choices (cublasGemmAlgo_t): rocBLAS's *_ex calls take a rocblas_gemm_algo, whose
# one algorithm is rocblas_gemm_algo_standard (rocBLAS picks its kernel by solution_index, 0: default).
_GEMM_ALGO = re.compile(r"CUBLAS_GEMM_(?:DEFAULT|DFALT|ALGO\d{1,2})(?:_TENSOR_OP)?")


def _gemm_ex(n_args: int, c_first: int, c_count: int) -> Rewrite:
    """cublasGemm*Ex(..., C, Ctype, ldc[, strideC], [batch,] compute, algo) ->
    rocblas_gemm*_ex(..., C, Ctype, ldc[, strideC], D=C, Dtype, ldd[, strideD], [batch,]
    compute, rocblas_gemm_algo_standard, solution_index 0, flags 0): rocBLAS writes D, here the
    same matrix as C; every cuBLAS algorithm (DEFAULT, ALGOn, their _TENSOR_OP forms) becomes the
    standard one."""
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
        algo = args[-1]
        if algo[0] == algo[1] and _GEMM_ALGO.fullmatch(site.toks[algo[0]].text):
            tok = site.toks[algo[0]]
            site.ed.replace(tok.start, tok.end, "rocblas_gemm_algo_standard")
            site.handled[algo[0]] = "rocblas_gemm_algo_standard"
            if tok.text not in ("CUBLAS_GEMM_DEFAULT", "CUBLAS_GEMM_DFALT"):
                note += f"; {tok.text} -> rocblas_gemm_algo_standard (rocBLAS has one algorithm)"
        return note
    return rewrite


def _sgemm_ex(site: CallSite, i: int, args: Args, close: int) -> str | None:
    """cublasSgemmEx(..., C, Ctype, ldc) (FP32 compute) -> rocblas_gemm_ex(..., C, Ctype, ldc,
    D = C, Dtype, ldd, f32 compute, standard algorithm, solution_index 0, flags 0)."""
    texts = arg_texts(site, args) if len(args) == 17 else None
    if texts is None:
        return None
    site.ed.insert(site.toks[close].start, ", " + ", ".join(texts[14:17]) + ", rocblas_datatype_f32_r, "
                                           "rocblas_gemm_algo_standard, 0, 0")
    return "D = C added (in place), compute type f32 (SgemmEx computes in FP32), solution_index, flags = 0"


# rocBLAS's element types for half and complex (rocblas_half is not HIP's __half unless
# ROCBLAS_USE_HIP_HALF is defined; rocblas_float_complex is not hipFloatComplex).
_ROC_ELEMENT = {"H": "rocblas_half", "C": "rocblas_float_complex", "Z": "rocblas_double_complex"}
# gemm's pointer arguments: (position, 'in' | 'out'); batched ones are arrays of pointers.
_GEMM_POINTERS = {"gemm": ((6, "in"), (7, "in"), (9, "in"), (11, "in"), (12, "out")),
                  "gemmBatched": ((6, "in"), (7, "in*"), (9, "in*"), (11, "in"), (12, "out*")),
                  "gemmStridedBatched": ((6, "in"), (7, "in"), (10, "in"), (13, "in"), (14, "out"))}
_GEMM_ARGS = {"gemm": 14, "gemmBatched": 15, "gemmStridedBatched": 18}


def _element_casts(prec: str, routine: str) -> Rewrite:
    """Half and complex GEMMs: the CUDA element pointers cast to rocBLAS's element types."""
    element = _ROC_ELEMENT[prec]

    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) != _GEMM_ARGS[routine] or any(a > b for a, b in args):
            return None
        if site.roc_elements:
            return f"no casts: the file's elements are declared as {element}"
        for pos, kind in _GEMM_POINTERS[routine]:
            const = "const " if kind.startswith("in") else ""
            target = f"{const}{element}*" + (" const*" if kind.endswith("*") else "")
            cast = f"({target})(" if site.c_only else f"reinterpret_cast<{target}>("
            site.ed.insert(site.toks[args[pos][0]].start, cast)
            site.ed.insert(site.toks[args[pos][1]].end, ")")
        return f"alpha, beta and the matrices cast to {element} (rocBLAS's element type)"
    return rewrite


ROC_ARG_REWRITES: dict[str, Rewrite] = {
    "cublasSgemmEx": _sgemm_ex,
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
def _info_zeroed(n_args: int, keep: tuple[int, ...], why: str) -> Rewrite:
    """rocSOLVER calls without cuSOLVER's devInfo (getrs, potrs, geqrf): the arguments kept,
    in order, and devInfo (the last argument) set to 0 before the call, as cuSOLVER would
    (rocSOLVER reports bad arguments through its status instead)."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        texts = arg_texts(site, args) if len(args) == n_args else None
        if texts is None:
            return None
        site.rebuild(args, [texts[k] for k in keep])
        for k in set(range(n_args)) - set(keep):
            site.consume(args[k])
        site.ed.insert(site.toks[i].start, f"((void)hipMemset({texts[-1]}, 0, sizeof(int)), ")
        site.ed.insert(site.toks[close].end, ")")
        return why + "; devInfo set to 0 (rocSOLVER writes no info here)"
    return rewrite


def _workspace_size(n_args: int, size_arg: int | None) -> Rewrite:
    """`X_bufferSize(..., &lwork)` -> `(*(&lwork) = SIZE, rocblas_status_success)`: rocSOLVER
    allocates its own workspace (SIZE 0), or takes a work array of n elements (syevd's E)."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) != n_args or args[-1][0] > args[-1][1]:
            return None
        size = "0" if size_arg is None else f"({site.translated_arg(args[size_arg])})"
        site.replace_call(i, close, f"(*({site.arg(args[-1])}) = {size}, rocblas_status_success)")
        if size_arg is None:
            return "rocSOLVER needs no workspace query: the size is set to 0"
        return "rocSOLVER's syevd takes a work array of n elements (E): the size is set to n"
    return rewrite


def _no_workspace(n_args: int) -> Rewrite:
    return _workspace_size(n_args, None)


for _p in _ROC_ELEMENT:
    for _routine in _GEMM_POINTERS:
        ROC_ARG_REWRITES[f"cublas{_p}{_routine}"] = _element_casts(_p, _routine)
        if _routine == "gemm":
            ROC_ARG_REWRITES[f"cublas{_p}gemm_v2"] = _element_casts(_p, _routine)

_POTRF_WHY = "rocSOLVER allocates its own workspace: Workspace and Lwork dropped"
_GETRF_WHY = "rocSOLVER allocates its own workspace: Workspace dropped"
for _t in "SDCZ":
    ROC_ARG_REWRITES[f"cusolverDn{_t}potrf"] = _drop_args(8, (5, 6), _POTRF_WHY)
    ROC_ARG_REWRITES[f"cusolverDn{_t}potrf_bufferSize"] = _no_workspace(6)
    ROC_ARG_REWRITES[f"cusolverDn{_t}getrf"] = _drop_args(8, (5, 5), _GETRF_WHY)
    ROC_ARG_REWRITES[f"cusolverDn{_t}getrf_bufferSize"] = _no_workspace(6)
    # (handle, trans, n, nrhs, A, lda, ipiv, B, ldb, devInfo)
    ROC_ARG_REWRITES[f"cusolverDn{_t}getrs"] = _info_zeroed(10, tuple(range(9)), "devInfo dropped")
    # (handle, uplo, n, nrhs, A, lda, B, ldb, devInfo)
    ROC_ARG_REWRITES[f"cusolverDn{_t}potrs"] = _info_zeroed(9, tuple(range(8)), "devInfo dropped")
    # (handle, m, n, A, lda, TAU, Workspace, Lwork, devInfo): TAU is rocSOLVER's ipiv
    ROC_ARG_REWRITES[f"cusolverDn{_t}geqrf"] = _info_zeroed(9, tuple(range(6)), _POTRF_WHY)
    ROC_ARG_REWRITES[f"cusolverDn{_t}geqrf_bufferSize"] = _no_workspace(6)
def _mtgp_constants(site: CallSite, i: int, args: Args, close: int) -> str | None:
    if len(args) != 2:
        return None
    for rng in args:
        site.consume(rng)
    site.replace_call(i, close, "ROCRAND_STATUS_SUCCESS")
    return "rocrand_make_state_mtgp32 loads the MTGP parameters itself: call replaced by ROCRAND_STATUS_SUCCESS"


# rocRAND's MTGP32 set-up: (states, params, kernel params, n, seed) -> (states, params, n, seed)
ROC_ARG_REWRITES["curandMakeMTGP32KernelState"] = _drop_args(5, (2, 2), "kernel parameters dropped (rocRAND keeps "
                                                                       "them in each state)")
ROC_ARG_REWRITES["curandMakeMTGP32Constants"] = _mtgp_constants
for _t in "SD":
    # (handle, jobz, uplo, n, A, lda, W, work, lwork, devInfo) -> (..., W -> D, work -> E, info)
    ROC_ARG_REWRITES[f"cusolverDn{_t}syevd"] = _drop_args(
        10, (8, 8), "Lwork dropped; work (n elements, see the size query) is rocSOLVER's E array")
    ROC_ARG_REWRITES[f"cusolverDn{_t}syevd_bufferSize"] = _workspace_size(8, 3)
