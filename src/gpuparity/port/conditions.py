"""Which #if branches a build leaves out, for --skip-excluded (HIPIFY's option of that name).

By default every branch is translated: which one is live depends on the build. Asked to skip
the excluded ones, the port evaluates each condition with the macros it can know: the -D
defines given, the file's own #define / #undef, and the compiler's CUDA macros. A name the
CUDA toolkit's headers define (CUDA_VERSION, CUSPARSE_VER_MAJOR ...) is unknown here, and a
condition that depends on it keeps its branch: only branches that are surely out are skipped.
"""

from __future__ import annotations

import re

from gpuparity.port.tokens import Token, int_value

# Names that come from the toolchain or its headers: their values are unknown to a text port.
_TOOLCHAIN = re.compile(r"^(__)?(CUDA|CU|CUDART|CUBLAS|CUSPARSE|CUSOLVER|CURAND|CUFFT|CUDNN|NV|NVCC|THRUST|CUB|"
                        r"HIP|ROCM)|^__(CUDA|NVCC|HIP|clang|GNUC|cplusplus|STDC)", re.I)
_PREDEFINED = {"__CUDACC__": 1, "__CUDA__": 1, "__cplusplus": 201703}
_OPEN = {"#if", "#ifdef", "#ifndef"}
Unknown = None


class _Eval:
    """Three-valued #if expression evaluation over token texts (None: cannot tell)."""

    def __init__(self, words: list[str], macros: dict[str, int | None]):
        self.w, self.k, self.macros = words, 0, macros

    def peek(self) -> str:
        return self.w[self.k] if self.k < len(self.w) else ""

    def take(self) -> str:
        self.k += 1
        return self.w[self.k - 1] if self.k <= len(self.w) else ""

    def expr(self):
        left = self.conj()
        while self.peek() == "||":
            self.take()
            right = self.conj()
            left = True if left is True or right is True else (Unknown if Unknown in (left, right) else False)
        return left

    def conj(self):
        left = self.compare()
        while self.peek() == "&&":
            self.take()
            right = self.compare()
            left = False if left is False or right is False else (Unknown if Unknown in (left, right) else True)
        return left

    def compare(self):
        left = self.unary()
        ops = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
               ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
               "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
        while self.peek() in ops:
            op = ops[self.take()]
            right = self.unary()
            left = Unknown if Unknown in (left, right) else int(op(int(left), int(right)))
        return left

    def unary(self):
        word = self.take()
        if word == "!":
            v = self.unary()
            return Unknown if v is Unknown else not v
        if word == "(":
            v = self.expr()
            if self.peek() == ")":
                self.take()
            return v
        if word == "defined":
            paren = self.peek() == "("
            if paren:
                self.take()
            name = self.take()
            if paren and self.peek() == ")":
                self.take()
            return self.is_defined(name)
        value = int_value(word)
        if value is not None:
            return value
        if word in self.macros:
            return self.macros[word]
        return Unknown if _TOOLCHAIN.match(word) else 0

    def is_defined(self, name: str):
        if name in self.macros:
            return True
        return Unknown if _TOOLCHAIN.match(name) else False


def _directive_words(toks: list[Token], k: int) -> tuple[list[str], int]:
    """The words of the directive starting at toks[k] (after the #if...), and the next index."""
    words, j = [], k + 1
    while j < len(toks) and toks[j].directive == toks[k].directive and toks[j].kind != "pp":
        if toks[j].kind != "comment":
            words.append(toks[j].text)
        j += 1
    return words, j


def excluded(toks: list[Token], defines: tuple[str, ...] = ()) -> list[tuple[int, int]]:
    """(start, end) offsets of the branches surely left out of the build."""
    macros: dict[str, int | None] = dict(_PREDEFINED)
    for d in defines:
        name, _, value = d.partition("=")
        macros[name] = int_value(value) if value else 1
    out: list[tuple[int, int]] = []
    stack: list[list] = []  # [parent active, a branch surely taken, this branch active, start offset]
    active = True
    k = 0
    n = len(toks)
    while k < n:
        t = toks[k]
        if t.kind != "pp":
            k += 1
            continue
        words, nxt = _directive_words(toks, k)
        if t.text in _OPEN or t.text in ("#elif", "#else"):
            if t.text in ("#ifdef", "#ifndef"):
                v = _Eval(words[:1], macros).is_defined(words[0]) if words else Unknown
                if t.text == "#ifndef" and v is not Unknown:
                    v = not v
            elif t.text == "#else":
                v = True
            else:
                v = _Eval(words, macros).expr() if words else Unknown
            v = Unknown if v is Unknown else bool(v)
            if t.text in _OPEN:
                stack.append([active, False, True, 0])
            elif not stack:
                k = nxt
                continue
            frame = stack[-1]
            if not frame[2]:  # the previous branch was out: it ends here
                out.append((frame[3], t.start))
            branch = frame[0] and not frame[1] and v is not False
            frame[1] = frame[1] or (frame[0] and v is True)
            frame[2] = branch
            end = toks[nxt - 1].end if nxt > k + 1 else t.end
            frame[3] = end
            active = branch
        elif t.text == "#endif" and stack:
            frame = stack.pop()
            if not frame[2]:
                out.append((frame[3], t.start))
            active = frame[0]
        elif active and t.text == "#define" and words:
            body = words[1:]
            macros[words[0]] = int_value(body[0]) if len(body) == 1 and int_value(body[0]) is not None else \
                (1 if not body else Unknown)
        elif active and t.text == "#undef" and words:
            macros.pop(words[0], None)
        k = nxt
    return out


def in_ranges(ranges: list[tuple[int, int]], at: int) -> bool:
    return any(a <= at < b for a, b in ranges)
