"""Translate one CUDA C/C++ source to HIP, token by token.

Only whole identifier tokens in code (and in macro bodies and #if conditions) are renamed;
comments, string and character literals, and #pragma/#error lines are copied untouched.
#include lines are the one preprocessor line whose text changes. Where the HIP call takes
different arguments, the call is rewritten (see _ARG_REWRITES).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuparity.port import mappings
from gpuparity.port.tokens import Token, launch_config, tokenize

SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".inl")
COMPILE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx")
# Directives whose text is prose or compiler-specific: never rewritten.
_OPAQUE_DIRECTIVES = {"pragma", "error", "warning", "line", "ident", "sccs", "assert", "null", ""}
_MEMBER_ACCESS = {".", "->", ".*", "->*"}
_FULL_MASK_32 = {0xFFFFFFFF}
WARP_SYNC_MASKED = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
                    "__ballot_sync", "__any_sync", "__all_sync", "__match_any_sync", "__match_all_sync",
                    "__syncwarp"}


@dataclass
class Options:
    hip_version: tuple[int, ...] = mappings.parse_version(mappings.NEWEST_HIP)
    launch: str = "chevron"  # or "ggl": emit hipLaunchKernelGGL(...)
    engine: str = "auto"  # tokenizer: auto | tree-sitter | lexer


@dataclass
class ApiUse:
    name: str
    line: int
    family: str
    hip: str | None
    supported: bool
    reason: str = ""


@dataclass
class Rewrite:
    line: int
    what: str  # e.g. "cudaMallocHost: added hipHostMallocDefault flags argument"


@dataclass
class Translation:
    text: str
    uses: list[ApiUse] = field(default_factory=list)
    rewrites: list[Rewrite] = field(default_factory=list)
    engine: str = ""
    tokens: list[Token] = field(default_factory=list)


# ---------------------------------------------------------------- token helpers

def call_args(tokens: list[Token], open_idx: int) -> tuple[list[tuple[int, int]], int] | None:
    """Arguments of the call whose '(' is tokens[open_idx]: [(first, last)] token index ranges
    (first > last for an empty argument) and the index of the closing ')'. None if unbalanced."""
    depth = 0
    args: list[tuple[int, int]] = []
    start = open_idx + 1
    for j in range(open_idx, len(tokens)):
        t = tokens[j]
        if t.kind != "punct":
            continue
        s = t.text
        if s in ("(", "[", "{"):
            depth += 1
        elif s in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                if j > start or args:
                    args.append((start, j - 1))
                return args, j
        elif s == "," and depth == 1:
            args.append((start, j - 1))
            start = j + 1
    return None


def int_value(text: str) -> int | None:
    """Value of an integer literal token (0x1f, 32u, 1'024), else None."""
    t = text.replace("'", "").rstrip("uUlLzZ")
    try:
        if t.lower().startswith("0x"):
            return int(t, 16)
        if t.lower().startswith("0b"):
            return int(t[2:], 2)
        if len(t) > 1 and t.startswith("0") and t.isdigit():
            return int(t, 8)
        return int(t)
    except ValueError:
        return None


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


class _Editor:
    """Collects (start, end, replacement) edits on the source and applies them once."""

    def __init__(self, text: str):
        self.text = text
        self.edits: list[tuple[int, int, str]] = []

    def replace(self, start: int, end: int, new: str) -> None:
        self.edits.append((start, end, new))

    def insert(self, at: int, new: str) -> None:
        self.edits.append((at, at, new))

    def apply(self) -> str:
        if not self.edits:
            return self.text
        out: list[str] = []
        pos = 0
        # At one offset: insertions first, then the widest replacement (it swallows the rest).
        for start, end, new in sorted(self.edits, key=lambda e: (e[0], e[0] != e[1], -e[1])):
            if start < pos:  # inside an earlier, wider edit: that one wins
                continue
            out.append(self.text[pos:start])
            out.append(new)
            pos = end
        out.append(self.text[pos:])
        return "".join(out)


# ---------------------------------------------------------------- argument rewrites

def _arg_text(text: str, tokens: list[Token], rng: tuple[int, int]) -> str:
    first, last = rng
    return text[tokens[first].start:tokens[last].end] if first <= last else ""


def _rw_host_malloc(ctx: "_Ctx", i: int, args, close: int) -> str | None:
    if len(args) == 2:
        ctx.ed.insert(ctx.toks[close].start, ", hipHostMallocDefault")
        return "added the hipHostMallocDefault flags argument"
    return None


def _cast_func_arg(index: int):
    def rewrite(ctx: "_Ctx", i: int, args, close: int) -> str | None:
        if len(args) <= index:
            return None
        first, last = args[index]
        if first > last:
            return None
        arg = _arg_text(ctx.text, ctx.toks, args[index])
        if "void" in arg or "cast" in arg:
            return None
        ctx.ed.insert(ctx.toks[first].start, "reinterpret_cast<const void*>(")
        ctx.ed.insert(ctx.toks[last].end, ")")
        return "kernel argument cast to const void* (HIP takes a function address)"
    return rewrite


def _symbol_arg(index: int):
    def rewrite(ctx: "_Ctx", i: int, args, close: int) -> str | None:
        if len(args) <= index:
            return None
        first, last = args[index]
        if first > last or "HIP_SYMBOL" in _arg_text(ctx.text, ctx.toks, args[index]):
            return None
        ctx.ed.insert(ctx.toks[first].start, "HIP_SYMBOL(")
        ctx.ed.insert(ctx.toks[last].end, ")")
        return "symbol wrapped in HIP_SYMBOL()"
    return rewrite


_ARG_REWRITES = {
    "cudaMallocHost": _rw_host_malloc,
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
}


# ---------------------------------------------------------------- the pass

@dataclass
class _Ctx:
    text: str
    toks: list[Token]
    ed: _Editor
    opts: Options
    result: Translation


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
    is_cuda, hip = mappings.map_header(inner)
    if not is_cuda:
        return
    if hip is None:
        ctx.result.uses.append(ApiUse(f"<{inner}>", tok.line, "header", None, False,
                                      "no HIP counterpart for this header"))
        return
    ctx.result.uses.append(ApiUse(f"<{inner}>", tok.line, "header", hip, True))
    if hip != inner:
        ctx.ed.replace(tok.start + 1, tok.end - 1, hip)


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


def _kernel_launch_use(ctx: _Ctx, tok: Token) -> None:
    ctx.result.uses.append(ApiUse("<<<...>>>", tok.line, "launch", "<<<...>>>", True))


def _user_macros(toks: list[Token]) -> set[str]:
    names = set()
    for i, t in enumerate(toks):
        if t.kind == "pp" and t.text == "#define" and i + 1 < len(toks) and toks[i + 1].kind == "id":
            names.add(toks[i + 1].text)
    return names


def translate_source(text: str, opts: Options | None = None) -> Translation:
    opts = opts or Options()
    toks, engine = tokenize(text, opts.engine)
    result = Translation(text=text, engine=engine, tokens=toks)
    ctx = _Ctx(text, toks, _Editor(text), opts, result)
    own_macros = _user_macros(toks)
    target = opts.hip_version
    apis = mappings.load_table()["apis"]
    uses = result.uses
    n = len(toks)
    for i in range(n):
        tok = toks[i]
        kind = tok.kind
        if kind == "header":
            if tok.directive in ("include", "include_next", "import"):
                _translate_include(ctx, i)
            continue
        if kind == "punct":
            if tok.text == "<<<" and tok.directive == "":
                _kernel_launch_use(ctx, tok)
            continue
        if kind != "id" or tok.directive in _OPAQUE_DIRECTIVES and tok.directive:
            continue
        name = tok.text
        p = _prev_code(toks, i)
        prev = toks[p] if p >= 0 else None
        if prev is not None and prev.kind == "punct":
            if prev.text in _MEMBER_ACCESS:
                continue
            if prev.text == "::":
                q = _prev_code(toks, p)
                qual = toks[q] if q >= 0 else None
                if qual is not None and qual.kind == "id":
                    if qual.text == "thrust" and name in mappings.THRUST_SYSTEM:
                        ctx.ed.replace(tok.start, tok.end, mappings.THRUST_SYSTEM[name])
                        uses.append(ApiUse(f"thrust::{name}", tok.line, "thrust",
                                           f"thrust::{mappings.THRUST_SYSTEM[name]}", True))
                    continue  # a member of some namespace or class: not ours to rename
        if prev is not None and prev.kind == "pp" and prev.text in ("#define", "#undef"):
            continue  # the name a user macro defines
        if name in mappings.NAMESPACES:
            j = _next_code(toks, i)
            if j < n and toks[j].text == "::":
                ctx.ed.replace(tok.start, tok.end, mappings.NAMESPACES[name])
                uses.append(ApiUse(f"{name}::", tok.line, "cub", mappings.NAMESPACES[name] + "::", True))
            continue
        entry = apis.get(name)
        if entry is None or name in own_macros:
            continue
        res = mappings.resolve(name, target)
        if mappings.counts_as_api(name, entry):
            uses.append(ApiUse(name, tok.line, res.family, res.legacy or res.hip, res.supported, res.reason))
        if name in mappings.OVERRIDES and res.family == "device" and _warp_sync(ctx, i, res):
            continue
        rewrite = _ARG_REWRITES.get(name)
        if rewrite is not None:
            k = _next_code(toks, i)
            if k < n and toks[k].text == "(":
                parsed = call_args(toks, k)
                if parsed is not None:
                    what = rewrite(ctx, i, *parsed)
                    if what:
                        result.rewrites.append(Rewrite(tok.line, f"{name}: {what}"))
        if res.hip and res.hip != name:
            ctx.ed.replace(tok.start, tok.end, res.hip)
    out = _realign_continuations(text, ctx.ed.apply()) if ctx.ed.edits else text
    if opts.launch == "ggl" and result.uses and any(u.family == "launch" for u in result.uses):
        out, lines = rewrite_launches_ggl(out, opts.engine)
        result.rewrites.extend(Rewrite(line, "kernel launch <<<...>>> -> hipLaunchKernelGGL") for line in lines)
    result.text = out
    return result


_CONTINUATION = re.compile(r"^(.*?\S)?([ \t]+)\\(\r?)$")


def _realign_continuations(before: str, after: str) -> str:
    """Keep the column of a macro's trailing backslashes after names changed length."""
    old_lines = before.split("\n")
    new_lines = after.split("\n")
    if len(old_lines) != len(new_lines):
        return after
    changed = False
    for k, (old, new) in enumerate(zip(old_lines, new_lines, strict=True)):
        if old == new or not new.endswith(("\\", "\\\r")):
            continue
        mo, mn = _CONTINUATION.match(old), _CONTINUATION.match(new)
        if not (mo and mn):
            continue
        column = len(old) - len(mo.group(3)) - 1
        body = mn.group(1) or ""
        if len(body) + 1 <= column:
            new_lines[k] = body + " " * (column - len(body)) + "\\" + mn.group(3)
            changed = True
    return "\n".join(new_lines) if changed else after


# ---------------------------------------------------------------- hipLaunchKernelGGL

def _kernel_name_start(toks: list[Token], lt: int) -> int | None:
    """Index of the first token of the kernel expression before `<<<` at lt."""
    j = lt - 1
    if j < 0:
        return None
    if toks[j].text == ">":  # template arguments: walk back to the matching '<'
        depth = 0
        while j >= 0:
            s = toks[j].text
            if s in (">", ">>"):
                depth += len(s)
            elif s == "<":
                depth -= 1
                if depth == 0:
                    break
            j -= 1
        j -= 1
    if j < 0 or toks[j].kind != "id":
        return None
    while j >= 2 and toks[j - 1].text == "::" and toks[j - 2].kind == "id":
        j -= 2
    return j


def rewrite_launches_ggl(text: str, engine: str = "auto") -> tuple[str, list[int]]:
    """`k<<<g, b, s, st>>>(args)` -> `hipLaunchKernelGGL(k, dim3(g), dim3(b), s, st, args)`."""
    toks, _ = tokenize(text, engine)
    toks = [t for t in toks if t.kind != "comment"]
    ed = _Editor(text)
    lines: list[int] = []
    for i, t in enumerate(toks):
        if t.text != "<<<" or t.kind != "punct" or t.directive:
            continue
        start = _kernel_name_start(toks, i)
        if start is None:
            continue
        config, gt = launch_config(toks, i)
        if gt is None or gt + 1 >= len(toks) or toks[gt + 1].text != "(":
            continue
        parsed = call_args(toks, gt + 1)
        if parsed is None or len(config) < 2:
            continue
        _, close = parsed
        kernel = text[toks[start].start:toks[i - 1].end]
        if "<" in kernel:
            kernel = f"({kernel})"
        parts = [text[toks[a].start:toks[b].end] for a, b in config]
        grid, block = parts[0], parts[1]
        shared = parts[2] if len(parts) > 2 else "0"
        stream = parts[3] if len(parts) > 3 else "0"
        inner = text[toks[gt + 1].end:toks[close].start]
        new = f"hipLaunchKernelGGL({kernel}, dim3({grid}), dim3({block}), {shared}, {stream}"
        new += f", {inner.strip()})" if inner.strip() else ")"
        ed.replace(toks[start].start, toks[close].end, new)
        lines.append(t.line)
    return ed.apply(), lines
