"""--roc: cuSPARSE's legacy and generic calls whose rocSPARSE counterparts take other arguments.

Argument lists from rocSPARSE's headers (the signatures HIPIFY's tests quote):
- solve policies: rocSPARSE has one solve policy (auto) and its analysis calls also take an
  analysis policy (force: analyse every time, as cuSPARSE does);
- *_bufferSize of the ilu0/ic0/sv/sm/gemvi families write a size_t where cuSPARSE writes an int:
  the int the call fills is declared size_t (a size_t written through an int* would overwrite
  the next 4 bytes);
- csrgeam2 / csrgeam2Nnz take no buffer, csrgemm2 names both operations, csrmm names op(B),
  csrmv takes an optional info, the interleaved batch solvers a batch stride (= the count for
  interleaved data), csr2cscEx2's size query only the structure and the action;
- csrsm2 has no algorithm choice in rocSPARSE (it picks one);
- the generic SpSV / SpSM calls are one call per stage; their solve stage needs the buffer
  the analysis was given, which cuSPARSE 12 keeps in the descriptor: left for a human.
"""

from __future__ import annotations

from typing import Callable

from gpuparity.port.call_site import Args, CallSite, Refused, Rewrite, arg_texts

SOLVE = "rocsparse_solve_policy_auto"
ANALYSIS = "rocsparse_analysis_policy_force"


def _reshape(n_args: int, shape: Callable[[list[str]], list[str]], why: str, dropped: tuple[int, ...] = ()) -> Rewrite:
    """The call's arguments rebuilt by shape(translated texts)."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        texts = arg_texts(site, args) if len(args) == n_args else None
        if texts is None:
            return None
        site.rebuild(args, shape(texts))
        for k in dropped:
            site.consume(args[k])
        return why
    return rewrite


def _policy(n_args: int, pos: int, analysis: bool) -> Rewrite:
    new = f"{ANALYSIS}, {SOLVE}" if analysis else SOLVE
    why = ("analysis and solve policies: rocSPARSE's (force, auto)" if analysis
           else "solve policy: rocSPARSE's one (auto)")
    return _reshape(n_args, lambda t: t[:pos] + [new] + t[pos + 1:], why, (pos,))


def _declared_int(site: CallSite, name: str, before: int) -> int | None:
    """Index of the `int` of the last `int NAME;` / `int NAME = ...;` declaring name before
    token `before` (one declarator, so retyping it retypes nothing else)."""
    toks = site.toks
    for k in range(before - 1, 0, -1):
        t = toks[k]
        if not (t.kind == "id" and t.text == name and toks[k - 1].text == "int"):
            continue
        depth = 0
        for j in range(k + 1, before):
            text = toks[j].text
            if text in ("(", "[", "{"):
                depth += 1
            elif text in (")", "]", "}"):
                depth -= 1
                if depth < 0:  # a parameter
                    return None
            elif depth == 0 and text in (";", ","):
                return k - 1 if text == ";" else None
        return None
    return None


def _size_t_size(n_args: int) -> Rewrite:
    """The size pointer cast to size_t*, its int declared size_t."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) != n_args:
            return None
        first, last = args[-1]
        toks = site.toks
        if not (last == first + 1 and toks[first].text == "&" and toks[last].kind == "id"):
            return Refused("rocSPARSE writes the buffer size as a size_t: pass the address of a size_t")
        name = toks[last].text
        decl = _declared_int(site, name, i)
        if decl is None:
            return Refused(f"rocSPARSE writes the buffer size as a size_t: declare {name} as size_t")
        site.ed.replace(toks[decl].start, toks[decl].end, "size_t")
        site.ed.insert(toks[first].start, "reinterpret_cast<size_t*>(")
        site.ed.insert(toks[last].end, ")")
        return f"{name} declared size_t (rocSPARSE writes a size_t buffer size)"
    return rewrite


def _stage_needs_buffer(name: str) -> Rewrite:
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        return Refused(f"rocSPARSE's {name} compute stage takes the buffer its analysis was given (cuSPARSE keeps it "
                       f"in the descriptor): call rocsparse_{name}(..., alg, rocsparse_{name}_stage_compute, nullptr, "
                       "buffer) with that buffer")
    return rewrite


def _generic_stage(n_args: int, stage: str, size: bool) -> Rewrite:
    """SpSV / SpSM: (..., alg, descr, &size | buffer) -> (..., alg, stage, &size, nullptr |
    nullptr, buffer); the descriptor is dropped (rocSPARSE keeps the analysis in the matrix)."""
    def shape(t: list[str]) -> list[str]:
        return t[:-2] + ([stage, t[-1], "nullptr"] if size else [stage, "nullptr", t[-1]])
    return _reshape(n_args, shape, f"{stage}; the SpSV/SpSM descriptor dropped", (n_args - 2,))


def _interleaved_alg(kind: str, algos: tuple[str, ...], text: str) -> str:
    """cuSPARSE's algorithm number as rocSPARSE's enumerator; an expression stays (rocSPARSE's
    enum does not take an int: the compiler asks for it)."""
    value = text.strip()
    if value.isdigit() and int(value) < len(algos):
        return f"rocsparse_{kind}_interleaved_alg_{algos[int(value)]}"
    return text


SPARSE_ROC_REWRITES: dict[str, Rewrite] = {
    "cusparseXcsrgeam2Nnz": _reshape(15, lambda t: t[:-1], "workspace dropped (rocSPARSE needs none)", (14,)),
    "cusparseCsr2cscEx2_bufferSize": _reshape(
        15, lambda t: [t[k] for k in (0, 1, 2, 3, 5, 6, 11, 14)],
        "rocsparse_csr2csc_buffer_size takes the structure and the action only", (4, 7, 8, 9, 10, 12, 13)),
    "cusparseSpSV_bufferSize": _generic_stage(10, "rocsparse_spsv_stage_buffer_size", True),
    "cusparseSpSV_analysis": _generic_stage(10, "rocsparse_spsv_stage_preprocess", False),
    "cusparseSpSV_solve": _stage_needs_buffer("spsv"),
    "cusparseSpSM_bufferSize": _generic_stage(11, "rocsparse_spsm_stage_buffer_size", True),
    "cusparseSpSM_analysis": _generic_stage(11, "rocsparse_spsm_stage_preprocess", False),
    "cusparseSpSM_solve": _stage_needs_buffer("spsm"),
}
for _t in "SDCZ":
    _r = SPARSE_ROC_REWRITES
    # (name, argument count, policy position): solve and analysis calls
    for _name, _n, _pos in (("csrilu02", 10, 8), ("bsrilu02", 12, 10), ("bsric02", 12, 10), ("bsrsv2_solve", 16, 14),
                            ("csrsv2_solve", 14, 12)):
        _r[f"cusparse{_t}{_name}"] = _policy(_n, _pos, False)
    for _name, _n, _pos in (("csrilu02_analysis", 10, 8), ("csric02_analysis", 10, 8), ("bsrilu02_analysis", 12, 10),
                            ("bsric02_analysis", 12, 10), ("bsrsv2_analysis", 13, 11), ("csrsv2_analysis", 11, 9)):
        _r[f"cusparse{_t}{_name}"] = _policy(_n, _pos, True)
    for _name, _n in (("csrsv2", 10), ("csric02", 9), ("csrilu02", 9), ("bsric02", 11), ("bsrilu02", 11),
                      ("bsrsm2", 14), ("bsrsv2", 12), ("gemvi", 6)):
        _r[f"cusparse{_t}{_name}_bufferSize"] = _size_t_size(_n)
    # csrsm2: (handle, algo, transA, transB, m, nrhs, nnz, alpha, descr, val, ptr, ind, B, ldb, info, policy, x)
    for _name, _analysis in (("solve", False), ("analysis", True), ("bufferSizeExt", False)):
        _new = f"{ANALYSIS}, {SOLVE}" if _analysis else SOLVE
        _r[f"cusparse{_t}csrsm2_{_name}"] = _reshape(
            17, lambda t, new=_new: [t[0]] + t[2:15] + [new, t[16]],
            "algorithm dropped (rocSPARSE picks one); " + ("analysis and solve policies: rocSPARSE's (force, auto)"
                                                          if _analysis else "solve policy: rocSPARSE's (auto)"), (1, 15))
    _r[f"cusparse{_t}csrgeam2"] = _reshape(20, lambda t: t[:-1], "buffer dropped (rocSPARSE needs none)", (19,))
    _r[f"cusparse{_t}csrgemm2"] = _reshape(
        27, lambda t: [t[0], "rocsparse_operation_none", "rocsparse_operation_none"] + t[1:],
        "op(A), op(B) added (none: csrgemm2 multiplies A and B as they are)")
    _r[f"cusparse{_t}csrmm"] = _reshape(16, lambda t: t[:2] + ["rocsparse_operation_none"] + t[2:],
                                         "op(B) added (none, as csrmm reads B)")
    _r[f"cusparse{_t}csrmv"] = _reshape(13, lambda t: t[:10] + ["nullptr"] + t[10:],
                                         "optional analysis info added (nullptr)")
    # (handle, algo, m, ..., batchCount, buffer | &size): cuSPARSE's algo is an int (gtsv: 0 Thomas,
    # 1 LU, 2 QR; gpsv: 0 QR), rocSPARSE's an enum that starts with "default"
    for _name, _n, _count, _algos in (("gpsv", 11, 9, ("qr",)), ("gtsv", 9, 7, ("thomas", "lu", "qr"))):
        for _suffix in ("InterleavedBatch", "InterleavedBatch_bufferSizeExt"):
            _r[f"cusparse{_t}{_name}{_suffix}"] = _reshape(
                _n, lambda t, c=_count, kind=_name, algos=_algos: [
                    t[0], _interleaved_alg(kind, algos, t[1]), *t[2:c + 1], t[c], *t[c + 1:]],
                "batch stride added (= the batch count: the data are interleaved); a literal algorithm as "
                "rocSPARSE's enum (cuSPARSE's 0 is its second value)")
