"""Find CUDA code that compiles under HIP but misbehaves on AMD GPUs, or does not port at all.

Every rule works on tokens, never on raw text: `& 31` in a comment or string is not code.
Rules aim for no false alarms on clean code, so lane-math rules also require a thread/lane
/warp identifier in the same statement, and loop rules a warp intrinsic or lane index nearby.
The scan visits only the tokens some rule looks at (found with C-level passes over the token
texts); statements and brace depth are worked out where a rule asks for them.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from heapq import heappop, heappush
from itertools import compress
from operator import itemgetter

from gpuparity.port.const_eval import ConstEval, file_constants
from gpuparity.port.hazard_kinds import (
    BLOCKS_BUILD,
    KINDS,
    LDS_BYTES,
    PERFORMANCE,
    SEVERITIES,
    SEVERITY,
    WARP_SYNC_BUILTINS,
    WRONG_RESULTS,
    Hazard,
)
from gpuparity.port.tokens import Token, call_args, int_value, launch_config
from gpuparity.port.warp_sync import WARP_SYNC_MASKED, is_full_mask_32

__all__ = ["BLOCKS_BUILD", "KINDS", "PERFORMANCE", "SEVERITIES", "SEVERITY", "WRONG_RESULTS", "Hazard",
           "find_hazards"]

# hipcc defines none of these for AMD: code under them is NVIDIA-only and AMD builds the rest.
_NVIDIA_MACROS = {"__CUDA_ARCH__", "__NVCC__", "__HIP_PLATFORM_NVIDIA__", "__HIP_PLATFORM_NVCC__",
                  "__NVCOMPILER"}
_AMD_MACROS = {"__HIP_PLATFORM_AMD__", "__HIP_PLATFORM_HCC__", "__HIP__", "__HIPCC__", "__HIP_DEVICE_COMPILE__"}
_LANE_HINT = re.compile(r"lane|warp", re.I)
_THREAD_IDS = {"threadIdx", "tid", "ltid", "tidx", "thread_id", "threadId", "thread_idx", "local_tid"}
_WARP_CONST = re.compile(r"warp_?size|warp_?threads|threads_?per_?warp|^k?warp$|^WARP$|^WARP_SZ$", re.I)
_MASK_NAME = re.compile(r"mask", re.I)
_WARP_INTRINSIC = re.compile(r"^__(shfl|ballot|any|all|activemask|match|reduce_)")
_TYPES_32 = {"int", "unsigned", "uint32_t", "int32_t", "uint", "u32", "unsigned int"}
_BALLOT_FNS = {"__ballot_sync", "__ballot", "__activemask", "__match_any_sync", "__match_all_sync"}
_BIT_OPS_32 = {"__popc", "__ffs", "__clz", "__brev"}
_OPAQUE = {"pragma", "error", "warning", "line", "ident"}
_LANE_VALUES = (31, 32, 5)
_STATEMENT_ENDS = {";", "{", "}"}
_CONST_STARTS = {"#define", "const", "constexpr"}
_ID_START = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$")


@lru_cache(maxsize=8192)
def _is_thread_hint(name: str) -> bool:
    return name in _THREAD_IDS or bool(_LANE_HINT.search(name))


# Identifiers some rule looks at; every other identifier is skipped after one set lookup.
_RULE_NAMES = {
    "asm", "__asm__", "__asm", "__launch_bounds__", "texture", "this_grid", "this_multi_grid",
    "grid_group", "__cluster_dims__", "cluster_group", "this_cluster", "cudaLaunchAttributeClusterDimension",
    "cudaFuncAttributeRequiredClusterWidth", "cluster_shape", "cudaLaunchKernelEx", "cudaLaunchKernelExC",
    "cuLaunchKernelEx", "wmma", "nvcuda", "cudaFuncSetAttribute", "cuFuncSetAttribute", "for", "__shared__",
    "__syncwarp", "cutlass", "cute",
} | WARP_SYNC_MASKED | _BALLOT_FNS
_RULE_PREFIXES = ("__CUDA_ARCH", "cublasLt", "CUBLASLT_")
_kind, _text = itemgetter(0), itemgetter(1)


class _Scan:
    def __init__(self, text: str, tokens: list[Token], hip_version: tuple[int, ...],
                 columns: tuple[list[str], list[str]] | None):
        self.lines = text.splitlines()
        kinds, texts = columns or (list(map(_kind, tokens)), list(map(_text, tokens)))
        # the code tokens: no comments, nothing on a #pragma / #error ... line
        drop = list(compress(range(len(kinds)), map("comment".__eq__, kinds)))
        for p in compress(range(len(kinds)), map("pp".__eq__, kinds)):
            name = tokens[p].directive
            if name in _OPAQUE:
                k = p
                while k < len(tokens) and tokens[k].directive == name:
                    drop.append(k)
                    k += 1
        self.t, self.texts, self.kinds = (_without(col, drop) for col in (tokens, texts, kinds))
        self.all_tokens = tokens
        self.target = hip_version
        self.found: dict[tuple[str, int], Hazard] = {}
        self._index()
        self.consts = file_constants(self.t, self.texts, self.hits["const"])
        self.ints32 = self._int32_vars()
        self._nvidia_lines: set[int] | None = None
        self._bounds: list[int] | None = None
        self._hints: set[int] | None = None
        self._depth: list[int] | None = None

    # -- helpers
    def add(self, kind: str, line: int, detail: str = "", severity: str | None = None) -> None:
        key = (kind, line)
        if key in self.found:
            return
        why, fix = KINDS[kind]
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.found[key] = Hazard(kind, line, why, fix, code[:200], detail, severity or SEVERITY[kind])

    def where(self, names) -> list[int]:
        """Indices (in self.t) of the tokens whose text is one of names."""
        return list(compress(range(len(self.texts)), map(names.__contains__, self.texts)))

    def _index(self) -> None:
        """One pass over the texts for every rule's tokens: self.hits[purpose] -> indices."""
        unique = set(self.texts)
        # an identifier-shaped text is always an identifier token (a literal with a prefix holds a quote)
        self.ids = {x for x in unique if x[:1] in _ID_START and '"' not in x and "'" not in x}
        purposes: dict[str, set[str]] = {
            "rule": {x for x in self.ids if x in _RULE_NAMES or x.startswith(_RULE_PREFIXES)
                     or _WARP_CONST.search(x) or _MASK_NAME.search(x)} | {"<<<"},
            "lane": {x for x in unique if (x[:1].isdecimal() or x[:1] == ".") and int_value(x) in _LANE_VALUES},
            "hint": {x for x in self.ids if _is_thread_hint(x)},
            "int32": _TYPES_32 & unique,
            "const": _CONST_STARTS & unique,
            "end": _STATEMENT_ENDS & unique,
            "directive": {x for x in unique if x[:1] in "#<\"\""},  # directives, header names (and more)
        }
        owners: dict[str, list[str]] = {}
        for purpose, names in purposes.items():
            for name in names:
                owners.setdefault(name, []).append(purpose)
        self.hits: dict[str, list[int]] = {purpose: [] for purpose in purposes}
        for i in self.where(owners):
            for purpose in owners[self.texts[i]]:
                self.hits[purpose].append(i)

    def nvidia_only_lines(self) -> set[int]:
        """Lines inside #if branches that hipcc never compiles for AMD (__CUDA_ARCH__ ...)."""
        if self._nvidia_lines is not None:
            return self._nvidia_lines
        lines: set[int] = set()
        stack: list[tuple[str | None, bool]] = []  # (condition's platform, in its else branch)
        start = 0
        toks = self.all_tokens
        for i in compress(range(len(toks)), map("pp".__eq__, map(_kind, toks))):
            tok = toks[i]
            guarded = any(p == "nv" and not e or p == "amd" and e for p, e in stack)
            if guarded:
                lines.update(range(start, tok.line))
            name = tok.text
            if name in ("#if", "#ifdef", "#ifndef", "#elif"):
                cond = [t.text for t in toks[i + 1:i + 40] if t.directive == tok.text[1:]]
                platform = None
                if name == "#ifndef":
                    platform = "nv" if cond and cond[0] in _AMD_MACROS else None
                elif "!" not in cond:
                    platform = "nv" if _NVIDIA_MACROS & set(cond) else "amd" if _AMD_MACROS & set(cond) else None
                if name == "#elif" and stack:
                    stack[-1] = (platform, False)
                else:
                    stack.append((platform, False))
            elif name == "#else" and stack:
                stack[-1] = (stack[-1][0], True)
            elif name == "#endif" and stack:
                stack.pop()
            start = tok.line + 1
        self._nvidia_lines = lines
        return lines

    def statement(self, i: int) -> int:
        """A number that two tokens share when they sit in one statement: a new statement
        starts after `;`, `{` or `}`, at a directive, and where a directive's line ends."""
        if self._bounds is None:
            t, n = self.t, len(self.t)
            bounds = [j + 1 for j in self.hits["end"]]  # `{` `;` `}` are punctuation only
            for p in self.hits["directive"]:
                if t[p].kind == "pp":  # a directive's line: a statement of its own
                    bounds.append(p)
                    k = p + 1
                    while k < n and t[k].directive == t[p].directive:
                        k += 1
                    bounds.append(k)
            if t and t[0].directive:
                bounds.append(0)
            self._bounds = sorted(bounds)
            self._hints = {bisect_right(self._bounds, j) for j in self.hits["hint"]}
        return bisect_right(self._bounds, i)

    def in_hinted_statement(self, i: int) -> bool:
        """A thread, lane or warp name sits in token i's statement."""
        return self.statement(i) in self._hints

    def depth(self, k: int) -> int:
        """Brace depth after token k (braces on directive lines do not count)."""
        if self._depth is None:
            depth, out = 0, []
            for tok in self.t:
                if tok.text == "{" and not tok.directive:
                    depth += 1
                elif tok.text == "}" and not tok.directive:
                    depth = max(0, depth - 1)
                out.append(depth)
            self._depth = out
        return self._depth[k]

    def _int32_vars(self) -> set[str]:
        names = set()
        t = self.t
        for j in self.hits["int32"]:  # the type of `int x =`, `unsigned m;`
            i = j + 1
            if i < len(t) - 1 and t[i].kind == "id" and t[j].kind == "id" and t[i + 1].text in ("=", ";", ","):
                if i >= 2 and t[i - 2].text == "long":
                    continue
                names.add(t[i].text)
        return names

    # -- rules
    def run(self) -> list[Hazard]:
        t = self.t
        lib_first: dict[str, tuple[int, int]] = {}
        grid_vars: set[str] = set()
        hits = self.hits
        todo = sorted(set(hits["rule"] + hits["lane"] + [i for i in hits["directive"] if t[i].kind in
                                                         ("header", "pp")]), reverse=True)  # the next last
        later: list[int] = []  # a heap: uses of a grid variable found on the way
        visited = set(todo)
        while todo or later:
            i = heappop(later) if later and (not todo or later[0] < todo[-1]) else todo.pop()
            tok = t[i]
            kind, text = tok.kind, tok.text
            if kind == "header":
                self._header(tok, lib_first)
            elif kind == "num":
                self._lane_math(i)
            elif kind == "pp" and text == "#define":
                self._define(i)
            elif kind == "punct" and text == "<<<":
                self._launch_shared(i)
            elif kind == "id" and (text in _RULE_NAMES or text in grid_vars or text.startswith(_RULE_PREFIXES)
                                   or (i + 1 < len(t) and t[i + 1].text in ("=", "{"))):
                known = len(grid_vars)
                self._identifier(i, lib_first, grid_vars)
                if len(grid_vars) != known:  # a grid group's variable: its later uses are visited too
                    for j in self.where(grid_vars):
                        if j > i and j not in visited:
                            visited.add(j)
                            heappush(later, j)
        for lib, (line, count) in lib_first.items():
            self.add("no_dropin_library", line, f"{lib}: {count} use(s) in this file")
        return sorted(self.found.values(), key=lambda h: (h.line, h.kind))

    def _lane_math(self, i: int) -> None:
        t = self.t
        v = int_value(t[i].text)
        if v not in _LANE_VALUES or i == 0:
            return
        op = t[i - 1].text
        lane_math = (v == 31 and op in ("&", "&=")) or (v == 32 and op in ("%", "/", "%=", "/=")) \
            or (v == 5 and op in (">>", ">>="))
        if lane_math and self.in_hinted_statement(i):
            self.add("warp_size_32", t[i].line, f"lane math '{op} {t[i].text}'")

    def _syncwarp(self, i: int) -> None:
        t = self.t
        k = i - 1
        while k > 0 and self.depth(k) > 0:  # back to the start of the enclosing function body
            k -= 1
        for j in range(k, i):
            if t[j].text == "if" and t[j].kind == "id" and j + 1 < i and t[j + 1].text == "(":
                close = self._paren_end(j + 1)
                if close and any(x.kind == "id" and _is_thread_hint(x.text) for x in t[j + 1:close]):
                    self.add("independent_thread_scheduling", t[i].line)
                    return

    def _next(self, i: int, text: str) -> bool:
        return i + 1 < len(self.t) and self.t[i + 1].text == text

    def _paren_end(self, i: int) -> int | None:
        parsed = call_args(self.t, i)
        return parsed[1] if parsed else None

    def _header(self, tok: Token, lib_first: dict) -> None:
        inner = tok.text[1:-1]
        if inner == "mma.h":
            self.add("warp_matrix", tok.line, "<mma.h>")
        # cuDNN is not here: its calls are ported to MIOpen (dnn.py) and what is not, listed by name
        for lib, prefixes in (("CUTLASS", ("cutlass/", "cute/")), ("cuBLASLt", ("cublasLt",))):
            if inner.startswith(prefixes):
                line, count = lib_first.get(lib, (tok.line, 0))
                lib_first[lib] = (min(line, tok.line), count + 1)

    def _define(self, i: int) -> None:
        t = self.t
        if i + 2 >= len(t) or t[i + 1].kind != "id":
            return
        name = t[i + 1].text
        body = []
        j = i + 2
        while j < len(t) and t[j].directive == "define" and t[j].kind != "pp":
            body.append(t[j])
            j += 1
        core = [b for b in body if b.text not in ("(", ")")]
        if len(core) != 1 or core[0].kind != "num":
            return
        if _WARP_CONST.search(name) and int_value(core[0].text) == 32:
            self.add("warp_size_32", t[i].line, f"#define {name} 32")
        elif _MASK_NAME.search(name) and is_full_mask_32(core, 0, 0):
            self.add("lane_mask_32", t[i].line, f"#define {name} {core[0].text}")

    def _launch_shared(self, i: int) -> None:
        t = self.t
        config, _ = launch_config(t, i, limit=200)
        parts = [t[a:b + 1] for a, b in config]
        if len(parts) >= 3:
            v = ConstEval(self.consts).value(parts[2])
            if v is not None and v > LDS_BYTES:
                self.add("shared_memory_64k", t[i].line, f"launch asks for {v} bytes of dynamic shared memory")

    def _identifier(self, i: int, lib_first: dict, grid_vars: set[str]) -> None:
        t = self.t
        tok = t[i]
        name = tok.text
        line = tok.line
        nxt = t[i + 1].text if i + 1 < len(t) else ""
        if name in ("asm", "__asm__", "__asm"):
            j = i + 1
            while j < len(t) and t[j].text in ("volatile", "__volatile__", "goto", "inline"):
                j += 1
            if j < len(t) and t[j].text == "(":
                if line in self.nvidia_only_lines():
                    self.add("inline_asm", line, "in an NVIDIA-only #if branch: AMD builds the fallback",
                             PERFORMANCE)
                else:
                    self.add("inline_asm", line)
                end = self._paren_end(j) or j
                asm_text = " ".join(x.text for x in t[j:end] if x.kind == "str")
                if re.search(r"\b(w?gmma|mma|ldmatrix)\b", asm_text):
                    self.add("warp_matrix", line, "PTX mma/ldmatrix in inline asm")
        elif name == "__launch_bounds__" and nxt == "(":
            parsed = call_args(t, i + 1)
            if parsed and len(parsed[0]) >= 2:
                self.add("launch_bounds", line)
        elif name == "texture" and nxt == "<":
            self.add("texture_reference", line)
        elif name.startswith("__CUDA_ARCH"):
            self.add("cuda_arch_macro", line)
        elif name in ("this_grid", "this_multi_grid") and nxt == "(":
            self.add("grid_sync", line, f"{name}()")
            k = i
            while k >= 2 and t[k - 1].text == "::" and t[k - 2].kind == "id":  # cg::this_grid
                k -= 2
            if k >= 2 and t[k - 1].text == "=" and t[k - 2].kind == "id":
                grid_vars.add(t[k - 2].text)
        elif name == "grid_group" and nxt and t[i + 1].kind == "id":
            grid_vars.add(nxt)
        elif name in grid_vars and nxt == "." and i + 3 < len(t) and t[i + 2].text == "sync" \
                and t[i + 3].text == "(":
            self.add("grid_sync", line, f"{name}.sync()")
        elif name in ("__cluster_dims__", "cluster_group", "this_cluster", "cudaLaunchAttributeClusterDimension",
                      "cudaFuncAttributeRequiredClusterWidth", "cluster_shape"):
            self.add("thread_block_cluster", line, name)
        elif name in ("cudaLaunchKernelEx", "cudaLaunchKernelExC", "cuLaunchKernelEx"):
            self.add("launch_kernel_ex", line, name)
        elif (name == "wmma" and nxt == "::") or name == "nvcuda":
            self.add("warp_matrix", line, "nvcuda::wmma")
        elif name in ("cudaFuncSetAttribute", "cuFuncSetAttribute") and nxt == "(":
            parsed = call_args(t, i + 1)
            if parsed and len(parsed[0]) >= 3:
                a1, a2 = parsed[0][1], parsed[0][2]
                attr = " ".join(x.text for x in t[a1[0]:a1[1] + 1])
                if "MaxDynamicSharedMemorySize" in attr or "MAX_DYNAMIC_SHARED_SIZE" in attr:
                    v = ConstEval(self.consts).value(t[a2[0]:a2[1] + 1])
                    if v is not None and v > LDS_BYTES:
                        self.add("shared_memory_64k", line, f"requests {v} bytes of dynamic shared memory")
        elif name == "for" and nxt == "(":
            self._loop(i)
        elif name == "__shared__":
            self._shared_array(i)
        elif name == "__syncwarp" and nxt == "(":
            self._syncwarp(i)
        else:
            self._library_use(name, line, lib_first, nxt)
        if name in WARP_SYNC_MASKED and nxt == "(":
            self._sync_mask(i)
        if name in _BALLOT_FNS and nxt == "(":
            self._ballot_store(i)
        if _WARP_CONST.search(name) and nxt in ("=", "{") and i + 2 < len(t) and t[i + 2].kind == "num" \
                and int_value(t[i + 2].text) == 32 and (i + 3 >= len(t) or t[i + 3].text in (";", ",", "}")):
            self.add("warp_size_32", line, f"{name} = 32")
        if _MASK_NAME.search(name) and nxt == "=" and i + 2 < len(t) and is_full_mask_32(t, i + 2, i + 2) \
                and (i + 3 >= len(t) or t[i + 3].text in (";", ",")):
            self.add("lane_mask_32", line, f"{name} = {t[i + 2].text}")

    def _library_use(self, name: str, line: int, lib_first: dict, nxt: str) -> None:
        lib = None
        if name in ("cutlass", "cute") and nxt == "::":
            lib = "CUTLASS"
        elif name.startswith(("cublasLt", "CUBLASLT_")):
            lib = "cuBLASLt"
        if lib:
            first, count = lib_first.get(lib, (line, 0))
            lib_first[lib] = (min(first, line), count + 1)

    def _loop(self, i: int) -> None:
        t = self.t
        close = self._paren_end(i + 1)
        if close is None:
            return
        header = t[i + 2:close]
        texts = [x.text for x in header]
        to_32 = any(texts[k] in ("<", "<=", "!=") and header[k + 1].kind == "num"
                    and int_value(texts[k + 1]) in (32, 31) for k in range(len(texts) - 1))
        halving = any(texts[k] == "=" and header[k + 1].kind == "num" and int_value(texts[k + 1]) == 16
                      for k in range(len(texts) - 1)) and \
            any(texts[k] in ("/=", ">>=") for k in range(len(texts)))
        if not (to_32 or halving):
            return
        # body: a braced block or one statement
        j = close + 1
        if j < len(t) and t[j].text == "{":
            depth, k = 0, j
            while k < len(t):
                depth += t[k].text == "{"
                depth -= t[k].text == "}"
                if depth == 0:
                    break
                k += 1
        else:
            k = j
            while k < len(t) and t[k].text != ";":
                k += 1
        names = [x.text for x in t[i:k + 1] if x.kind == "id"]
        if any(_WARP_INTRINSIC.match(n) or _is_thread_hint(n) for n in names):
            self.add("warp_size_32", t[i].line, "loop over 32 lanes" if to_32 else "shuffle loop from offset 16")

    def _shared_array(self, i: int) -> None:
        t = self.t
        j = i + 1
        while j < len(t) and t[j].text not in (";", "=", "{"):
            if t[j].text == "[" and j + 2 < len(t) and t[j + 2].text == "]" and t[j + 1].kind == "num" \
                    and int_value(t[j + 1].text) == 32 and (j + 3 >= len(t) or t[j + 3].text != "[") \
                    and t[j - 1].kind == "id" and (j < 2 or t[j - 2].text != "]"):
                self.add("warp_size_32", t[i].line, f"per-warp shared array {t[j - 1].text}[32]")
                return
            j += 1

    def _sync_mask(self, i: int) -> None:
        t = self.t
        parsed = call_args(t, i + 1)
        if not parsed or not parsed[0]:
            return
        first, last = parsed[0][0]
        if first > last:
            return
        legacy = self.target < (6, 2, 0)
        if t[first].text == "__activemask":
            return  # the active lanes: dropping or widening this mask changes nothing
        if is_full_mask_32(t, first, last):
            self.add("lane_mask_32", t[i].line, f"{t[i].text}({t[first].text}, ...)"
                     + (" - mask dropped for HIP < 6.2" if legacy else " - widened to 64 bits"))
        elif first == last and self.consts.get(t[first].text) == 0xFFFFFFFF:
            self.add("lane_mask_32", t[i].line, f"mask {t[first].text} is the 32-bit constant 0xffffffff",
                     self._mask_severity())
        elif first == last and t[first].text in self.ints32:
            self.add("lane_mask_32", t[i].line, f"mask '{t[first].text}' is a 32-bit variable",
                     self._mask_severity())
        elif legacy:
            self.add("sync_mask_dropped", t[i].line, f"{t[i].text}: mask '{t[first].text}' ignored")

    def _mask_severity(self) -> str:
        return BLOCKS_BUILD if self.target >= WARP_SYNC_BUILTINS else WRONG_RESULTS

    def _ballot_store(self, i: int) -> None:
        t = self.t
        line = t[i].line
        if i >= 2 and t[i - 1].text == "(" and t[i - 2].text in _BIT_OPS_32:
            self.add("ballot_32bit", line, f"{t[i - 2].text}({t[i].text}(...)) counts 32 bits")
            return
        if i >= 2 and t[i - 1].text == "=" and t[i - 2].kind == "id":
            var = t[i - 2].text
            declared_32 = i >= 3 and t[i - 3].kind == "id" and t[i - 3].text in _TYPES_32 \
                and not (i >= 4 and t[i - 4].text == "long")
            if declared_32 or var in self.ints32:
                self.add("ballot_32bit", line, f"{var} holds a 32-bit {t[i].text} result")


def _without(items: list, drop: list[int]) -> list:
    """items less the (few) indices in drop."""
    out, at = [], 0
    for k in sorted(set(drop)):
        out += items[at:k]
        at = k + 1
    return out + items[at:]


def find_hazards(text: str, tokens: list[Token], hip_version: tuple[int, ...] = (99, 0, 0),
                 columns: tuple[list[str], list[str]] | None = None) -> list[Hazard]:
    """Hazards in one C/C++/CUDA source, sorted by line (columns: the tokens' kinds and texts,
    when the caller has them)."""
    return _Scan(text, tokens, hip_version, columns).run()
