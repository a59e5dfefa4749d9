"""cuBLAS v1 (the legacy API of cublas.h) -> rocBLAS (--roc) or hipBLAS.

v1 calls take no handle, pass alpha/beta by value and the operation, fill, diagonal and
side as characters ('N', 'T', 'U' ...), report errors through cublasGetError() and return
dot products, norms and indices. rocBLAS and hipBLAS have only the handle API, with
scalars by pointer and enums. A file that uses v1 gets a small prelude (once, after its
cuBLAS include): one handle, created on first use, the last error, and the character ->
enum conversions; each v1 call then becomes its handle call. Scalars go through locals
(a lambda in C++, a GNU statement expression in C) so that literals work; results come back
the same way.

Complex-precision v1 calls (cuComplex by value) and trmm (in place in v1, out of place in
rocBLAS 6) are left for a person, named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuparity.port import mappings
from gpuparity.port.call_site import Args, CallSite, Refused, Rewrite, arg_texts

# Argument codes: n plain value, p pointer, s scalar by value, T operation, U fill, D diagonal,
# S side. Result: the v1 call returns a real (float/double) or an index.
_SPECS: dict[str, tuple[str, str | None]] = {
    "axpy": ("nspnpn", None), "scal": ("nspn", None), "copy": ("npnpn", None), "swap": ("npnpn", None),
    "dot": ("npnpn", "real"), "nrm2": ("npn", "real"), "asum": ("npn", "real"),
    "amax": ("npn", "index"), "amin": ("npn", "index"),
    "rot": ("npnpnss", None), "rotg": ("pppp", None), "rotm": ("npnpnp", None), "rotmg": ("ppppp", None),
    "gemv": ("Tnnspnpnspn", None), "gbmv": ("Tnnnnspnpnspn", None),
    "symv": ("Unspnpnspn", None), "sbmv": ("Unnspnpnspn", None), "spmv": ("Unsppnspn", None),
    "trmv": ("UTDnpnpn", None), "trsv": ("UTDnpnpn", None), "tbmv": ("UTDnnpnpn", None),
    "tbsv": ("UTDnnpnpn", None), "tpmv": ("UTDnppn", None), "tpsv": ("UTDnppn", None),
    "ger": ("nnspnpnpn", None), "syr": ("Unspnpn", None), "spr": ("Unspnp", None),
    "syr2": ("Unspnpnpn", None), "spr2": ("Unspnpnp", None),
    "gemm": ("TTnnnspnpnspn", None), "symm": ("SUnnspnpnspn", None), "syrk": ("UTnnspnspn", None),
    "syr2k": ("UTnnspnpnspn", None), "trsm": ("SUTDnnspnpn", None),
}
_NAME = re.compile(r"^cublas(?:([SD])([a-z0-9]+)|I([sd])(amax|amin))$")
_CTYPE = {"S": "float", "D": "double", "s": "float", "d": "double"}
# v1 calls with no v2 twin of the same name: setup, memory and errors.
V1_ONLY = {"cublasInit", "cublasShutdown", "cublasGetError", "cublasAlloc", "cublasFree", "cublasSetKernelStream"}


@dataclass(frozen=True)
class _Lib:
    header: str
    handle: str
    create: str
    destroy: str
    status: str
    ok: str
    alloc_failed: str
    internal: str
    set_stream: str
    op: tuple[str, str, str, str]  # type, none, transpose, conjugate transpose
    fill: tuple[str, str, str]  # type, upper, lower
    diag: tuple[str, str, str]  # type, unit, non-unit
    side: tuple[str, str, str]  # type, left, right


_LIBS = {
    True: _Lib("rocblas/rocblas.h", "rocblas_handle", "rocblas_create_handle", "rocblas_destroy_handle",
               "rocblas_status", "rocblas_status_success", "rocblas_status_memory_error",
               "rocblas_status_internal_error", "rocblas_set_stream",
               ("rocblas_operation", "rocblas_operation_none", "rocblas_operation_transpose",
                "rocblas_operation_conjugate_transpose"),
               ("rocblas_fill", "rocblas_fill_upper", "rocblas_fill_lower"),
               ("rocblas_diagonal", "rocblas_diagonal_unit", "rocblas_diagonal_non_unit"),
               ("rocblas_side", "rocblas_side_left", "rocblas_side_right")),
    False: _Lib("hipblas/hipblas.h", "hipblasHandle_t", "hipblasCreate", "hipblasDestroy", "hipblasStatus_t",
                "HIPBLAS_STATUS_SUCCESS", "HIPBLAS_STATUS_ALLOC_FAILED", "HIPBLAS_STATUS_INTERNAL_ERROR",
                "hipblasSetStream", ("hipblasOperation_t", "HIPBLAS_OP_N", "HIPBLAS_OP_T", "HIPBLAS_OP_C"),
                ("hipblasFillMode_t", "HIPBLAS_FILL_MODE_UPPER", "HIPBLAS_FILL_MODE_LOWER"),
                ("hipblasDiagType_t", "HIPBLAS_DIAG_UNIT", "HIPBLAS_DIAG_NON_UNIT"),
                ("hipblasSideMode_t", "HIPBLAS_SIDE_LEFT", "HIPBLAS_SIDE_RIGHT")),
}
_KINDS = {"T": "op", "U": "fill", "D": "diag", "S": "side"}


def prelude(roc: bool, nl: str = "\n") -> str:
    """The helpers v1 calls are rewritten to use (C and C++; guarded, so several headers
    of one translation unit may carry it)."""
    lib = _LIBS[roc]
    op, fill, diag, side = lib.op, lib.fill, lib.diag, lib.side
    lines = [
        "#ifndef GPUPARITY_BLAS_V1",
        "#define GPUPARITY_BLAS_V1",
        "/* gpuparity: cuBLAS v1 (legacy) calls take no handle; these helpers give them one. */",
        f"static {lib.handle} gpuparity_v1_handle_ = 0;",
        f"static {lib.status} gpuparity_v1_error_ = {lib.ok};",
        f"static inline {lib.handle} gpuparity_v1_handle(void) {{ if (!gpuparity_v1_handle_) "
        f"{lib.create}(&gpuparity_v1_handle_); return gpuparity_v1_handle_; }}",
        f"static inline {lib.status} gpuparity_v1_init(void) {{ return gpuparity_v1_handle() ? {lib.ok} : "
        f"{lib.internal}; }}",
        f"static inline {lib.status} gpuparity_v1_shutdown(void) {{ {lib.status} s = gpuparity_v1_handle_ ? "
        f"{lib.destroy}(gpuparity_v1_handle_) : {lib.ok}; gpuparity_v1_handle_ = 0; return s; }}",
        f"static inline void gpuparity_v1_status({lib.status} s) {{ if (s != {lib.ok}) gpuparity_v1_error_ = s; }}",
        f"static inline {lib.status} gpuparity_v1_get_error(void) {{ {lib.status} s = gpuparity_v1_error_; "
        f"gpuparity_v1_error_ = {lib.ok}; return s; }}",
        f"static inline {op[0]} gpuparity_v1_op(char t) {{ return (t == 'T' || t == 't') ? {op[2]} : "
        f"(t == 'C' || t == 'c') ? {op[3]} : {op[1]}; }}",
        f"static inline {fill[0]} gpuparity_v1_fill(char u) {{ return (u == 'U' || u == 'u') ? {fill[1]} : "
        f"{fill[2]}; }}",
        f"static inline {diag[0]} gpuparity_v1_diag(char d) {{ return (d == 'U' || d == 'u') ? {diag[1]} : "
        f"{diag[2]}; }}",
        f"static inline {side[0]} gpuparity_v1_side(char s) {{ return (s == 'R' || s == 'r') ? {side[2]} : "
        f"{side[1]}; }}",
        "#endif",
    ]
    return nl.join(lines) + nl


def _char_enum(lib: _Lib, kind: str, text: str) -> str:
    """'N' -> the enumerator itself; anything else -> the helper call."""
    m = re.fullmatch(r"'([A-Za-z])'", text.strip())
    if m:
        c = m.group(1).upper()
        if kind == "op":
            return {"N": lib.op[1], "T": lib.op[2], "C": lib.op[3]}.get(c, lib.op[1])
        if kind == "fill":
            return lib.fill[1] if c == "U" else lib.fill[2]
        if kind == "diag":
            return lib.diag[1] if c == "U" else lib.diag[2]
        return lib.side[2] if c == "R" else lib.side[1]
    return f"gpuparity_v1_{kind}({text})"


def _spec(name: str) -> tuple[str, str | None, str] | None:
    """(codes, result kind, C type) of a real-precision v1 BLAS routine, else None."""
    m = _NAME.match(name)
    if not m:
        return None
    prec, routine = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    spec = _SPECS.get(routine)
    return (spec[0], spec[1], _CTYPE[prec]) if spec else None


def why_not(name: str) -> str:
    """Why a v1 name has no automatic port."""
    if re.match(r"^cublas(I[cz]|[CZ])", name) or re.match(r"^cublas(Cs|Zd)", name):
        return "cuBLAS v1 complex call (cuComplex by value): port it to cuBLAS v2 by hand"
    if re.match(r"^cublas[SD]trmm$", name):
        return "cuBLAS v1 trmm is in place; rocBLAS 6 trmm writes a separate C: port it by hand"
    return "cuBLAS v1 (legacy) call with no automatic port: port it to cuBLAS v2 by hand"


def _blas_call(site: CallSite, i: int, args: Args, close: int) -> str | None:
    name = site.toks[i].text
    spec = _spec(name)
    if spec is None:
        return Refused(why_not(name))
    codes, result, ctype = spec
    texts = arg_texts(site, args) if len(args) == len(codes) else None
    if texts is None:
        return None
    res = mappings.resolve(name, site.target, site.roc)
    if res is None or not res.hip or not res.supported:
        return Refused(res.reason if res else "no counterpart")
    lib = _LIBS[site.roc]
    decls, new = [], []
    for code, text in zip(codes, texts, strict=True):
        if code == "s":
            local = f"s{len(decls)}_"
            decls.append(f"const {ctype} {local} = ({text});")
            new.append(f"&{local}")
        elif code in _KINDS:
            new.append(_char_enum(lib, _KINDS[code], text))
        else:
            new.append(text)
    if result:
        decls.append(f"{ctype if result == 'real' else 'int'} r_ = 0;")
        new[-1] += ", &r_"
    site.rebuild(args, new)
    site.ed.replace(site.toks[i].start, site.toks[i].end, res.hip)
    site.ed.insert(site.toks[args[0][0]].start, "gpuparity_v1_handle(), ")
    head, tail = "gpuparity_v1_status(", ")"
    if decls:
        if site.c_only:  # GNU statement expression: the C compilers hipcc and gcc take it
            head = "({ " + " ".join(decls) + " gpuparity_v1_status("
            tail = "); " + ("r_; " if result else "") + "})"
        else:
            ret = f" -> {ctype if result == 'real' else 'int'}" if result else ""
            head = f"[&](){ret} {{ " + " ".join(decls) + " gpuparity_v1_status("
            tail = "); " + ("return r_; " if result else "") + "}()"
    site.ed.insert(site.toks[i].start, head)
    site.ed.insert(site.toks[close].end, tail)
    parts = ["handle added"]
    if any(c == "s" for c in codes):
        parts.append("scalars by pointer")
    if any(c in _KINDS for c in codes):
        parts.append("characters -> enums")
    if result:
        parts.append("result through a pointer")
    return f"cuBLAS v1 -> {res.hip}: " + ", ".join(parts)


def _setup_call(site: CallSite, i: int, args: Args, close: int) -> str | None:
    name = site.toks[i].text
    lib = _LIBS[site.roc]
    texts = arg_texts(site, args)
    if texts is None:
        return None
    if name in ("cublasInit", "cublasShutdown", "cublasGetError") and not args:
        helper = {"cublasInit": "init", "cublasShutdown": "shutdown", "cublasGetError": "get_error"}[name]
        site.replace_call(i, close, f"gpuparity_v1_{helper}()")
        return f"cuBLAS v1 {name} -> gpuparity_v1_{helper}() (the file's handle)"
    if name == "cublasAlloc" and len(args) == 3:
        ptr = texts[2] if texts[2].replace(" ", "").startswith("(void**)") else f"(void**)({texts[2]})"
        site.replace_call(i, close, f"(hipMalloc({ptr}, (size_t)({texts[0]}) * (size_t)({texts[1]})) "
                                    f"== hipSuccess ? {lib.ok} : {lib.alloc_failed})")
        return "cuBLAS v1 cublasAlloc -> hipMalloc"
    if name == "cublasFree" and len(args) == 1:
        site.replace_call(i, close, f"(hipFree({texts[0]}) == hipSuccess ? {lib.ok} : {lib.internal})")
        return "cuBLAS v1 cublasFree -> hipFree"
    if name == "cublasSetKernelStream" and len(args) == 1:
        site.replace_call(i, close, f"{lib.set_stream}(gpuparity_v1_handle(), {texts[0]})")
        return f"cuBLAS v1 cublasSetKernelStream -> {lib.set_stream} on the file's handle"
    return None


def rewrite_for(name: str) -> Rewrite:
    """The rewrite of a v1 call (a refusal, with the reason, for the ones left to a person)."""
    return _setup_call if name in V1_ONLY else _blas_call


def header_of(roc: bool) -> str:
    return _LIBS[roc].header
