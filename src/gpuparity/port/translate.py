"""Translate one CUDA C/C++ source to HIP, token by token.

Only whole identifier tokens in code (and in macro bodies and #if conditions) are renamed, and
CUDA API names inside string literals (messages name the HIP call made); comments, raw strings,
character literals, and #pragma/#error lines are copied untouched.
#include lines are the one preprocessor line whose text changes. Where the HIP call takes
different arguments, the call is rewritten (library_calls.py). A file that used the CUDA runtime
without including it (nvcc includes it implicitly) gets `#include <hip/hip_runtime.h>`.
Code in inactive #if branches is translated like active code: which branch is live
depends on the build, not on this tool.
A call left for a human (its rewrite refused it or did not recognise its shape, or its name
has only a reason, mappings' "why") is left as written, arguments and all, so the original
call stands beside the reason; the CUDA names in its arguments count as not ported.
"""

from __future__ import annotations

import re
from functools import lru_cache
from heapq import heappop, heappush
from itertools import compress, islice

from gpuparity.port import conditions, dnn, fp16, half2, mappings, roc_types
from gpuparity.port.call_site import CallSite
from gpuparity.port.context import MEMBER_ACCESS, Context, next_code, prev_code
from gpuparity.port.edits import Editor, realign_continuations
from gpuparity.port.include_lines import translate_include
from gpuparity.port.launch import rewrite_launches_ggl
from gpuparity.port.library_calls import CALL_NAMES, leave_call, left_use, library_call
from gpuparity.port.model import ApiUse, Options, Rewrite, Translation
from gpuparity.port.preludes import add_half_shuffles, add_runtime_include, add_v1_prelude, needs_runtime
from gpuparity.port.resolve import emitted_name, family, resolve
from gpuparity.port.tokens import Token, scan
from gpuparity.port.warp_sync import warp_sync

__all__ = ["COMPILE_SUFFIXES", "SOURCE_SUFFIXES", "ApiUse", "Options", "Rewrite", "Translation", "translate_source"]


SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".inl")
COMPILE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx")
# Directives whose text is prose or compiler-specific: never rewritten.
_OPAQUE_DIRECTIVES = {"pragma", "error", "warning", "line", "ident", "sccs", "assert", "null", ""}
# Words that can stand before a global-scope `::name` (`typedef ::cub::X T;`): not a scope.
_NOT_SCOPES = {"typedef", "return", "using", "typename", "const", "static", "extern", "inline", "new", "delete",
               "case", "throw", "sizeof", "decltype", "co_return", "volatile", "constexpr", "else", "do"}


def _user_macros(toks: list[Token], defines: list[int]) -> set[str]:
    """The names the file's own #define lines (at the indices `defines`) define."""
    return {toks[i + 1].text for i in defines if i + 1 < len(toks) and toks[i + 1].kind == "id"}


@lru_cache(maxsize=1)
def _visited_names() -> frozenset[str]:
    """The texts of the code tokens the loop acts on: table names, namespaces, `<<<`."""
    return frozenset(mappings.load_table()["apis"]) | set(mappings.NAMESPACES) | set(mappings.THRUST_SYSTEM) \
        | {"<<<"}


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
    ctx = Context(text, toks, ed, opts, result, site)
    site.rename = lambda cuda: emitted_name(ctx, cuda)
    if opts.roc:
        ctx.roc_elements = roc_types.element_map(toks, family)
        site.roc_elements = bool(ctx.roc_elements)
    # Only tokens the loop can act on are visited (the rest would be skipped one by one):
    # names the tables know, launches, and the texts of headers, literals and directives.
    unique = set(texts)  # its identifier-shaped texts are the file's identifiers
    names = _visited_names()
    wanted = {x for x in unique if x in names or x[:1] in "#<" or '"' in x}
    todo = list(compress(range(len(texts)), map(wanted.__contains__, texts)))
    own_macros = _user_macros(toks, [i for i in todo if texts[i] == "#define"])
    ctx.names = unique
    ctx.headers = {texts[i][1:-1] for i in todo if kinds[i] == "header"}
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
                left_use(ctx, i)
            continue
        if kind == "header":
            if tok.directive in ("include", "include_next", "import"):
                translate_include(ctx, i)
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
            p = prev_code(toks, i)
        prev = toks[p] if p >= 0 else None
        if prev is not None and prev.kind == "punct":
            if prev.text in MEMBER_ACCESS:
                continue
            if prev.text == "::":
                q = prev_code(toks, p)
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
            j = next_code(toks, i)
            if (j < n and toks[j].text == "::") or (prev is not None and prev.text == "namespace"):
                ed.replace(tok.start, tok.end, mappings.NAMESPACES[name])
                uses.append(ApiUse(f"{name}::", tok.line, "cub", mappings.NAMESPACES[name] + "::", True))
            continue
        entry = apis.get(name)
        if entry is None or (name in own_macros and name not in mappings.COMPILER_MACROS):
            continue
        res = resolve(ctx, name, entry)
        if name in mappings.OVERRIDES and res.family == "device" and warp_sync(ctx, i, res):
            uses.append(ApiUse(name, tok.line, res.family, res.legacy or res.hip, res.supported, res.reason))
            continue
        if name in CALL_NAMES or res.hip == "":
            res = library_call(ctx, i, name, res)
        if res.hip is None and "why" in entry and ctx.left_end < i:  # named for a human: left as written
            leave_call(ctx, i)
        left_end = ctx.left_end
        if mappings.counts_as_api(name, entry):
            uses.append(ApiUse(name, tok.line, res.family, res.legacy or res.hip, res.supported, res.reason))
        if res.hip and res.hip != name:
            ed.replace(tok.start, tok.end, res.hip)
    if ctx.uses_dnn:
        _perf_members(ctx)
    if ctx.v1_rewritten:
        add_v1_prelude(ctx)
    if ctx.roc_complex and ctx.sparse_include_end >= 0 and roc_types.uses_only_sparse(toks, family):
        nl = "\r\n" if "\r\n" in text[:4096] else "\n"
        ed.insert(ctx.sparse_include_end, roc_types.sparse_prelude(nl))
    if not c_only and not unique.isdisjoint(half2.TYPES):
        result.rewrites.extend(Rewrite(line, what) for line, what in half2.rewrite(text, toks, ed))
    if not c_only and fp16.needs_half_shuffles(toks, opts.hip_version):
        add_half_shuffles(ctx)
    out = realign_continuations(text, ed.apply()) if ed.edits else text
    if not c_only and not ctx.runtime_included and (cuda_source or needs_runtime(unique, uses)):
        out = realign_continuations(text, add_runtime_include(ctx, out))
    if opts.launch == "ggl" and any(u.family == "launch" for u in uses):
        out, lines = rewrite_launches_ggl(out, opts.engine, opts.defines if opts.skip_excluded else None)
        result.rewrites.extend(Rewrite(line, "kernel launch <<<...>>> -> hipLaunchKernelGGL") for line in lines)
    result.text = out
    site.rename = str  # the closure above ties site and ctx in a cycle: untie it, and the tokens go at once
    return result


_RAW = re.compile(r'(?:u8|[uUL])?R"')


_WORD = re.compile(r"(?<![\w$])[A-Za-z_]\w*(?![\w$])")


def _translate_string(ctx: Context, tok: Token) -> None:
    """A CUDA API name inside a string literal ("cudaMalloc failed") becomes the HIP name the
    code now calls, as HIPIFY does; other words, and raw strings, stay."""
    apis = mappings.load_table()["apis"]
    for m in _WORD.finditer(tok.text):
        name = m.group(0)
        entry = apis.get(name)
        if entry is None or not mappings.counts_as_api(name, entry):
            continue
        hip = emitted_name(ctx, name)
        res = resolve(ctx, name, entry)
        if hip and hip != name and res.supported:
            ctx.ed.replace(tok.start + m.start(), tok.start + m.end(), hip)


def _perf_members(ctx: Context) -> None:
    notes, missing = dnn.perf_members(ctx.site)
    ctx.result.rewrites.extend(Rewrite(line, what) for line, what in notes)
    ctx.result.uses.extend(ApiUse(what, line, "cudnn", None, False, why) for line, what, why in missing)
