"""Translate one CUDA C/C++ source to HIP, token by token.

Only whole identifier tokens in code (and in macro bodies and #if conditions) are renamed, and
CUDA API names inside string literals (messages name the HIP call made); comments, raw strings,
character literals, and #pragma/#error lines are copied untouched.
#include lines are the one preprocessor line whose text changes. Where the HIP call takes
different arguments, the call is rewritten (rewrites.py). A file that used the CUDA runtime
without including it (nvcc includes it implicitly) gets `#include <hip/hip_runtime.h>`.
Code in inactive #if branches is translated like active code: which branch is live
depends on the build, not on this tool.
A call left for a human (its rewrite refused it or did not recognise its shape, or its name
has only a reason, mappings' "why") is left as written, arguments and all, so the original
call stands beside the reason; the CUDA names in its arguments count as not ported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from heapq import heappop, heappush
from itertools import compress, islice
from operator import itemgetter

from gpuparity.port import blas_v1, conditions, dnn, fp16, half2, includes, mappings, roc_types
from gpuparity.port.edits import Editor, realign_continuations
from gpuparity.port.launch import rewrite_launches_ggl
from gpuparity.port.model import ApiUse, Options, Rewrite, Translation
from gpuparity.port.rewrites import (
    ARG_REWRITES,
    ROC_ARG_REWRITES,
    STATUS_STRINGS,
    CallSite,
    Refused,
    status_string_lambda,
)
from gpuparity.port.sparse_roc import SPARSE_ROC_REWRITES
from gpuparity.port.tokens import Token, call_args, int_value, scan

SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".inl")
COMPILE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx")
# Directives whose text is prose or compiler-specific: never rewritten.
_OPAQUE_DIRECTIVES = {"pragma", "error", "warning", "line", "ident", "sccs", "assert", "null", ""}
_MEMBER_ACCESS = {".", "->", ".*", "->*"}
# Words that can stand before a global-scope `::name` (`typedef ::cub::X T;`): not a scope.
_NOT_SCOPES = {"typedef", "return", "using", "typename", "const", "static", "extern", "inline", "new", "delete",
               "case", "throw", "sizeof", "decltype", "co_return", "volatile", "constexpr", "else", "do"}
_FULL_MASK_32 = {0xFFFFFFFF}
WARP_SYNC_MASKED = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
                    "__ballot_sync", "__any_sync", "__all_sync", "__match_any_sync", "__match_all_sync",
                    "__syncwarp"}


# ---------------------------------------------------------------- token helpers

def is_full_mask_32(tokens: list[Token], first: int, last: int) -> bool:
    """A 32-bit all-lanes mask literal: 0xffffffff, 0xFFFFFFFFu, 4294967295, ~0u."""
    span = tokens[first:last + 1]
    span = [t for t in span if t.kind != "comment"]
    if len(span) == 1 and span[0].kind == "num":
        v = int_value(span[0].text)
        return v in _FULL_MASK_32 and not span[0].text.lower().rstrip("u").endswith("l")
    if len(span) == 2 and span[0].text == "~" and span[1].kind == "num":
        return span[1].text.lower() in ("0u", "0x0u")
    return False


# ---------------------------------------------------------------- the pass

@dataclass
class _Ctx:
    text: str
    toks: list[Token]
    ed: Editor
    opts: Options
    result: Translation
    site: CallSite
    runtime_included: bool = False  # an #include that is (or becomes) the HIP runtime
    first_include: int = -1  # offset of the first #include directive
    conditions: includes.Conditions = field(default_factory=includes.Conditions)
    included: includes.Included = field(default_factory=includes.Included)
    cublas_v1: bool | None = None  # decided at the first cuBLAS name
    sparse_datatypes: bool | None = None  # --roc: CUDA data types go to rocSPARSE's enum
    cublas_include_end: int = -1  # end of the #include <cublas.h> line (the v1 prelude goes there)
    sparse_include_end: int = -1  # end of the rocSPARSE #include line (--roc: its complex typedefs go there)
    roc_elements: dict[str, str] = field(default_factory=dict)  # --roc: element type renames (roc_types.py)
    roc_complex: bool = False  # a complex type was renamed
    v1_rewritten: bool = False  # a cuBLAS v1 call was rewritten: the file needs the prelude
    uses_dnn: bool = False  # a cuDNN perf-struct type was seen: its members may need renaming
    left_end: int = -1  # last token of the call left as written for a human (its arguments are not ported)
    left_call: str = ""  # that call's name


def _prev_code(toks: list[Token], i: int) -> int:
    """Index of the nearest non-comment token before i, or -1."""
    j = i - 1
    while j >= 0 and toks[j].kind == "comment":
        j -= 1
    return j


def _next_code(toks: list[Token], i: int) -> int:
    j = i + 1
    while j < len(toks) and toks[j].kind == "comment":
        j += 1
    return j


def _translate_include(ctx: _Ctx, i: int) -> None:
    tok = ctx.toks[i]
    inner = tok.text[1:-1]
    if ctx.first_include < 0:
        ctx.first_include = ctx.text.rfind("\n", 0, tok.start) + 1
    if inner == "cublas.h" and ctx.cublas_include_end < 0:
        line_end = ctx.text.find("\n", tok.end)
        ctx.cublas_include_end = len(ctx.text) if line_end < 0 else line_end + 1
    target, roc = ctx.opts.hip_version, ctx.opts.roc
    is_cuda, hip = mappings.map_header(inner, target, roc, ctx.opts.headers)
    stack = ctx.conditions.stack
    if not is_cuda:
        if inner == _RUNTIME_HEADER:
            ctx.runtime_included = True
        ctx.included.add(inner, stack)
        return
    if hip == "miopen/miopen.h" and ctx.opts.dnn == "hipdnn":
        hip = "hipDNN.h"
    if hip is None:
        ctx.result.uses.append(ApiUse(f"<{inner}>", tok.line, "header", None, False,
                                      mappings.header_note(inner, target, roc)))
        return
    ctx.result.uses.append(ApiUse(f"<{inner}>", tok.line, "header", hip, True))
    if ctx.included.already(hip, stack):  # the file has it on every path here: the line goes
        p = _prev_code(ctx.toks, i)
        start = ctx.toks[p].start if p >= 0 and ctx.toks[p].kind == "pp" else tok.start
        ctx.ed.replace(start, tok.end, "")
        ctx.result.rewrites.append(Rewrite(tok.line, f"#include <{inner}> dropped: <{hip}> is already included"))
        return
    ctx.included.add(hip, stack)
    if hip.rpartition("/")[2] == "rocsparse.h" and ctx.sparse_include_end < 0:
        line_end = ctx.text.find("\n", tok.end)
        ctx.sparse_include_end = len(ctx.text) if line_end < 0 else line_end + 1
    if hip == _RUNTIME_HEADER:
        ctx.runtime_included = True
    if hip != inner:
        ctx.ed.replace(tok.start + 1, tok.end - 1, hip)


_RUNTIME_HEADER = "hip/hip_runtime.h"


def _warp_sync(ctx: _Ctx, i: int, res: mappings.Resolution) -> bool:
    """Rewrite a *_sync warp intrinsic call. Returns True when it handled the call."""
    toks = ctx.toks
    k = _next_code(toks, i)
    if k >= len(toks) or toks[k].text != "(":
        return False
    parsed = call_args(toks, k)
    if parsed is None:
        return False
    args, close = parsed
    tok = toks[i]
    if res.legacy:  # target older than HIP 6.2
        if res.cuda == "__activemask":
            ctx.ed.replace(tok.start, toks[close].end, "__ballot(1)")
            ctx.result.rewrites.append(Rewrite(tok.line, "__activemask() -> __ballot(1) (HIP < 6.2)"))
            return True
        if len(args) < 2:
            return False
        ctx.ed.replace(tok.start, tok.end, res.legacy)
        ctx.ed.replace(toks[args[0][0]].start, toks[args[1][0]].start, "")
        ctx.result.rewrites.append(Rewrite(tok.line, f"{res.cuda}(mask, ...) -> {res.legacy}(...): "
                                                     "mask dropped (HIP < 6.2)"))
        return True
    if res.cuda in WARP_SYNC_MASKED and args and is_full_mask_32(toks, *args[0]):
        first, last = args[0]
        ctx.ed.replace(toks[first].start, toks[last].end, "0xffffffffffffffffull")
        ctx.result.rewrites.append(Rewrite(tok.line, f"{res.cuda}: 32-bit full mask widened to 64 bits "
                                                     "(HIP masks are 64-bit)"))
    return False


def _user_macros(toks: list[Token], defines: list[int]) -> set[str]:
    """The names the file's own #define lines (at the indices `defines`) define."""
    return {toks[i + 1].text for i in defines if i + 1 < len(toks) and toks[i + 1].kind == "id"}


_kind, _text = itemgetter(0), itemgetter(1)


@lru_cache(maxsize=1)
def _visited_names() -> frozenset[str]:
    """The texts of the code tokens the loop acts on: table names, namespaces, `<<<`."""
    return frozenset(mappings.load_table()["apis"]) | set(mappings.NAMESPACES) | set(mappings.THRUST_SYSTEM) \
        | {"<<<"}


def _is_cublas_v1(toks: list[Token]) -> bool:
    """The file includes cuBLAS's legacy header and not the v2 one (or, including neither,
    calls a v1-only function such as cublasInit): its BLAS calls take no handle."""
    headers = {t.text[1:-1] for t in compress(toks, map("header".__eq__, map(_kind, toks)))}
    if "cublas_v2.h" in headers:
        return False
    return "cublas.h" in headers or not blas_v1.V1_ONLY.isdisjoint(
        compress(map(_text, toks), map("id".__eq__, map(_kind, toks))))


def _uses_only_cusparse(toks: list[Token]) -> bool:
    ids = {x[:8].lower() for x in compress(map(_text, toks), map("id".__eq__, map(_kind, toks)))}
    return "cusparse" in ids and not any(x.startswith("cublas") for x in ids)


def _call(ctx: _Ctx, i: int, rewrite) -> str | None:
    """Run an argument rewrite on the call whose name is toks[i]."""
    k = _next_code(ctx.toks, i)
    if k < len(ctx.toks) and ctx.toks[k].text == "(":
        parsed = call_args(ctx.toks, k)
        if parsed is not None:
            return rewrite(ctx.site, i, *parsed)
    return None


def _leave_call(ctx: _Ctx, i: int) -> None:
    """Leave the call whose name is toks[i] as written (a human ports it): its arguments keep
    their CUDA text, and the names in them count as not ported."""
    k = _next_code(ctx.toks, i)
    if k < len(ctx.toks) and ctx.toks[k].text == "(":
        parsed = call_args(ctx.toks, k)
        if parsed is not None:
            args, close = parsed
            ctx.site.keep(args)
            if close > ctx.left_end:
                ctx.left_end, ctx.left_call = close, ctx.toks[i].text


def _left_use(ctx: _Ctx, i: int) -> None:
    """A name inside a call left for a human: a CUDA API use that is not ported."""
    toks = ctx.toks
    tok = toks[i]
    entry = mappings.load_table()["apis"].get(tok.text)
    if entry is None or not mappings.counts_as_api(tok.text, entry):
        return
    p = _prev_code(toks, i)
    if p >= 0 and toks[p].kind == "punct" and (toks[p].text in _MEMBER_ACCESS or toks[p].text == "::"):
        return  # a member, or a name in some namespace: not a CUDA name
    ctx.result.uses.append(ApiUse(tok.text, tok.line, entry.get("family", ""), None, False,
                                  f"in the arguments of {ctx.left_call}, which is left as written "
                                  "for a human to port"))


def _resolve(ctx: _Ctx, name: str, entry: dict) -> mappings.Resolution:
    """The name's resolution, with the per-file rules: legacy cuBLAS v1 calls, --roc data types."""
    opts = ctx.opts
    family = entry.get("family")
    if family == "cudnn" and opts.dnn == "hipdnn":
        return mappings.resolve_hipdnn(name, entry)
    if entry.get("experimental") and not opts.experimental:
        return mappings.Resolution(name, None, False, f"HIPIFY marks {entry.get('hip')} experimental "
                                   "(translated with experimental on)", family or "")
    if family == "cublas" and (name in blas_v1.V1_ONLY or name + "_v2" in mappings.load_table()["apis"]):
        if ctx.cublas_v1 is None:
            ctx.cublas_v1 = _is_cublas_v1(ctx.toks)
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
            ctx.sparse_datatypes = _uses_only_cusparse(ctx.toks)
        if ctx.sparse_datatypes:
            roc = {"family": "cusparse", "hip": mappings.ROCSPARSE_DATATYPES[name],
                   "added": mappings.ROCSPARSE_DATATYPES_ADDED}
            return mappings.resolve_entry(name, roc, opts.hip_version)
    return mappings.resolve(name, opts.hip_version, opts.roc)


def _emitted_name(ctx: _Ctx, name: str) -> str:
    entry = mappings.load_table()["apis"].get(name)
    if entry is None:
        return name
    res = _resolve(ctx, name, entry)
    return res.hip or name


def _library_call(ctx: _Ctx, i: int, name: str, res: mappings.Resolution) -> mappings.Resolution:
    """Argument rewrites (and, for older targets, stand-ins for missing calls); the
    resolution a successful rewrite leaves."""
    tok = ctx.toks[i]
    opts = ctx.opts
    v1 = res.family == "cublas" and res.hip == "" and bool(ctx.cublas_v1 or name in blas_v1.V1_ONLY)
    rewrite = blas_v1.rewrite_for(name) if v1 else REWRITES[opts.roc].get(name)
    if res.family == "cudnn" and opts.dnn == "hipdnn":
        rewrite = None  # hipDNN keeps cuDNN's arguments
    if rewrite is not None and res.hip is not None:
        what = _call(ctx, i, rewrite)
        if what and not isinstance(what, Refused):
            ctx.result.rewrites.append(Rewrite(tok.line, f"{name}: {what}"))
            ctx.v1_rewritten |= v1
            if not res.hip:  # rewritten into an expression: nothing left to rename
                return mappings.Resolution(name, "", True, "", res.family)
        elif isinstance(what, Refused):
            _leave_call(ctx, i)
            return mappings.Resolution(name, None, False, str(what), res.family)
        elif not res.hip or name in REQUIRED:  # a rename alone would leave a wrong call
            _leave_call(ctx, i)
            return mappings.Resolution(name, None, False, "call shape not recognised for the rewrite "
                                       "(its arguments differ in the AMD library): port it by hand", res.family)
    if not res.supported and name in STATUS_STRINGS:
        stand_in = status_string_lambda(name, opts.hip_version, opts.roc)
        if stand_in:
            ctx.ed.replace(tok.start, tok.end, stand_in)
            ctx.result.rewrites.append(Rewrite(tok.line, f"{name}: the target lacks {res.hip}; "
                                                         "an inline switch over the status names stands in"))
            return mappings.Resolution(name, "", True, f"{res.reason}: inline stand-in", res.family)
    return res


# CUDA's built-in device names: code with any of them needs the HIP runtime header.
_DEVICE_WORDS = {"__global__", "__device__", "__shared__", "__constant__", "__managed__", "__launch_bounds__",
                 "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"}


def _needs_runtime(ids: set[str], uses: list[ApiUse]) -> bool:
    if any(u.supported and u.family != "header" for u in uses):
        return True
    return not ids.isdisjoint(_DEVICE_WORDS)


def _add_runtime_include(ctx: _Ctx, out: str) -> str:
    """HIP code needs the runtime header where CUDA got it from nvcc implicitly."""
    nl = "\r\n" if "\r\n" in ctx.text[:4096] else "\n"
    at = includes.runtime_insertion_point(ctx.text, ctx.toks)
    ctx.ed.insert(at, f"#include <hip/hip_runtime.h>{nl}")
    ctx.result.rewrites.append(Rewrite(ctx.text.count("\n", 0, at) + 1,
                                       "added #include <hip/hip_runtime.h> (nvcc includes the CUDA runtime "
                                       "implicitly)"))
    return ctx.ed.apply()


def translate_source(text: str, opts: Options | None = None, c_only: bool = False,
                     cuda_source: bool = False) -> Translation:
    """The HIP text of one C/C++/CUDA source and what was converted. c_only: a C file
    (no runtime header is added, C compilers cannot take hip_runtime.h). cuda_source: a .cu
    or .cuh file, which nvcc gives the CUDA runtime whatever it uses: it gets the HIP runtime
    header (other files only when they use the runtime)."""
    opts = opts or Options()
    scanned = scan(text, opts.engine)
    toks, kinds, texts = scanned.tokens, scanned.kinds, scanned.texts
    result = Translation(text=text, engine=scanned.engine, tokens=toks, columns=(kinds, texts))
    ed = Editor(text)
    apis = mappings.load_table()["apis"]
    site = CallSite(text, toks, ed, opts.hip_version, opts.roc, c_only=c_only, known=apis.__contains__)
    ctx = _Ctx(text, toks, ed, opts, result, site)
    site.rename = lambda cuda: _emitted_name(ctx, cuda)
    if opts.roc:
        ctx.roc_elements = roc_types.element_map(toks, _family)
        site.roc_elements = bool(ctx.roc_elements)
    # Only tokens the loop can act on are visited (the rest would be skipped one by one):
    # names the tables know, launches, and the texts of headers, literals and directives.
    unique = set(texts)  # its identifier-shaped texts are the file's identifiers
    names = _visited_names()
    wanted = {x for x in unique if x in names or x[:1] in "#<" or '"' in x}
    todo = list(compress(range(len(texts)), map(wanted.__contains__, texts)))
    own_macros = _user_macros(toks, [i for i in todo if texts[i] == "#define"])
    handled = site.handled
    uses = result.uses
    n = len(toks)
    left_end = -1  # ctx.left_end: the tokens up to it are inside a call left for a human
    skipped = conditions.excluded(toks, opts.defines) if opts.skip_excluded else []
    visited = set(todo)
    todo.reverse()  # a stack: the next index last
    extra: list[int] = []  # a heap: arguments a call rewrite emitted that are not in todo
    seen_handled, i = 0, -1
    while todo or extra:
        if len(handled) != seen_handled:  # visit those arguments too, in order
            for k in islice(handled, seen_handled, None):
                if k > i and k not in visited:
                    visited.add(k)
                    heappush(extra, k)
            seen_handled = len(handled)
        i = heappop(extra) if extra and (not todo or extra[0] < todo[-1]) else todo.pop()
        tok = toks[i]
        kind = tok.kind
        if skipped and kind != "pp" and conditions.in_ranges(skipped, tok.start):
            continue
        if i <= left_end:
            if kind == "id":
                _left_use(ctx, i)
            continue
        if kind == "header":
            if tok.directive in ("include", "include_next", "import"):
                _translate_include(ctx, i)
            continue
        if kind == "str":
            if tok.directive in ("", "define") and not _RAW.match(tok.text):
                _translate_string(ctx, tok)
            continue
        if kind == "pp":
            ctx.conditions.directive(tok.text)
            continue
        if kind == "punct":
            if tok.text == "<<<" and tok.directive in ("", "define"):
                uses.append(ApiUse("<<<...>>>", tok.line, "launch", "<<<...>>>", True))
            continue
        if kind != "id" or tok.directive in _OPAQUE_DIRECTIVES and tok.directive:
            continue
        name = tok.text
        if handled and i in handled:  # a call rewrite already emitted this argument
            uses.append(ApiUse(name, tok.line, apis.get(name, {}).get("family", ""), handled[i], True))
            continue
        p = i - 1
        if p >= 0 and toks[p].kind == "comment":
            p = _prev_code(toks, i)
        prev = toks[p] if p >= 0 else None
        if prev is not None and prev.kind == "punct":
            if prev.text in _MEMBER_ACCESS:
                continue
            if prev.text == "::":
                q = _prev_code(toks, p)
                qual = toks[q] if q >= 0 else None
                if qual is not None and qual.kind == "id" and qual.text not in _NOT_SCOPES:
                    if qual.text == "thrust" and name in mappings.THRUST_SYSTEM:
                        ed.replace(tok.start, tok.end, mappings.THRUST_SYSTEM[name])
                        uses.append(ApiUse(f"thrust::{name}", tok.line, "thrust",
                                           f"thrust::{mappings.THRUST_SYSTEM[name]}", True))
                    continue  # a member of some namespace or class: not ours to rename
        if prev is not None and prev.kind == "pp" and prev.text in ("#define", "#undef") \
                and name not in mappings.COMPILER_MACROS:
            continue  # the name a user macro defines
        if name in mappings.NAMESPACES:
            j = _next_code(toks, i)
            if (j < n and toks[j].text == "::") or (prev is not None and prev.text == "namespace"):
                ed.replace(tok.start, tok.end, mappings.NAMESPACES[name])
                uses.append(ApiUse(f"{name}::", tok.line, "cub", mappings.NAMESPACES[name] + "::", True))
            continue
        entry = apis.get(name)
        if entry is None or (name in own_macros and name not in mappings.COMPILER_MACROS):
            continue
        res = _resolve(ctx, name, entry)
        if name in mappings.OVERRIDES and res.family == "device" and _warp_sync(ctx, i, res):
            uses.append(ApiUse(name, tok.line, res.family, res.legacy or res.hip, res.supported, res.reason))
            continue
        if name in _CALL_NAMES or res.hip == "":
            res = _library_call(ctx, i, name, res)
        if res.hip is None and "why" in entry and ctx.left_end < i:  # named for a human: left as written
            _leave_call(ctx, i)
        left_end = ctx.left_end
        if mappings.counts_as_api(name, entry):
            uses.append(ApiUse(name, tok.line, res.family, res.legacy or res.hip, res.supported, res.reason))
        if res.hip and res.hip != name:
            ed.replace(tok.start, tok.end, res.hip)
    if ctx.uses_dnn:
        _perf_members(ctx)
    if ctx.v1_rewritten:
        _add_v1_prelude(ctx)
    if ctx.roc_complex and ctx.sparse_include_end >= 0 and roc_types.uses_only_sparse(toks, _family):
        nl = "\r\n" if "\r\n" in text[:4096] else "\n"
        ed.insert(ctx.sparse_include_end, roc_types.sparse_prelude(nl))
    if not c_only and not unique.isdisjoint(half2.TYPES):
        result.rewrites.extend(Rewrite(line, what) for line, what in half2.rewrite(text, toks, ed))
    if not c_only and fp16.needs_half_shuffles(toks, opts.hip_version):
        _add_half_shuffles(ctx)
    out = realign_continuations(text, ed.apply()) if ed.edits else text
    if not c_only and not ctx.runtime_included and (cuda_source or _needs_runtime(unique, uses)):
        out = realign_continuations(text, _add_runtime_include(ctx, out))
    if opts.launch == "ggl" and any(u.family == "launch" for u in uses):
        out, lines = rewrite_launches_ggl(out, opts.engine, opts.defines if opts.skip_excluded else None)
        result.rewrites.extend(Rewrite(line, "kernel launch <<<...>>> -> hipLaunchKernelGGL") for line in lines)
    result.text = out
    site.rename = str  # the closure above ties site and ctx in a cycle: untie it, and the tokens go at once
    return result


_RAW = re.compile(r'(?:u8|[uUL])?R"')
_DATA_TYPE = re.compile(r"cudaDataType(_t)?$|CUDA_[RC]_\d+[A-Z]*$")
_WORD = re.compile(r"(?<![\w$])[A-Za-z_]\w*(?![\w$])")


def _translate_string(ctx: _Ctx, tok: Token) -> None:
    """A CUDA API name inside a string literal ("cudaMalloc failed") becomes the HIP name the
    code now calls, as HIPIFY does; other words, and raw strings, stay."""
    apis = mappings.load_table()["apis"]
    for m in _WORD.finditer(tok.text):
        name = m.group(0)
        entry = apis.get(name)
        if entry is None or not mappings.counts_as_api(name, entry):
            continue
        hip = _emitted_name(ctx, name)
        res = _resolve(ctx, name, entry)
        if hip and hip != name and res.supported:
            ctx.ed.replace(tok.start + m.start(), tok.start + m.end(), hip)


def _family(name: str) -> str:
    entry = mappings.load_table()["apis"].get(name)
    return entry.get("family", "") if entry else ""


def _perf_members(ctx: _Ctx) -> None:
    notes, missing = dnn.perf_members(ctx.site)
    ctx.result.rewrites.extend(Rewrite(line, what) for line, what in notes)
    ctx.result.uses.extend(ApiUse(what, line, "cudnn", None, False, why) for line, what, why in missing)


def _add_v1_prelude(ctx: _Ctx) -> None:
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


def _add_half_shuffles(ctx: _Ctx) -> None:
    nl = "\r\n" if "\r\n" in ctx.text[:4096] else "\n"
    at = fp16.insertion_point(ctx.text, ctx.toks)
    ctx.ed.insert(at or 0, fp16.prelude(nl, with_headers=at is None))
    if at is None:
        ctx.runtime_included = True
    ctx.result.rewrites.append(Rewrite(ctx.text.count("\n", 0, at or 0) + 1, "__half / __half2 warp shuffle "
                                       "overloads added (the target HIP has none before 5.6)"))


# Argument rewrites by mode (--roc or not); cuDNN goes to MIOpen in both.
REWRITES = {False: {**ARG_REWRITES, **dnn.DNN_REWRITES},
            True: {**ARG_REWRITES, **dnn.DNN_REWRITES, **ROC_ARG_REWRITES, **SPARSE_ROC_REWRITES}}
# Calls whose rename alone would compile into a wrong call (arguments moved or dropped):
# when the rewrite does not recognise the call, it keeps its CUDA name and is listed.
REQUIRED = (set(dnn.DNN_REWRITES) | {n for n in ROC_ARG_REWRITES if n.startswith("cusolver")} | {"cublasSgemmEx"}
            | set(SPARSE_ROC_REWRITES))
_CALL_NAMES = set(REWRITES[True]) | set(STATUS_STRINGS)
