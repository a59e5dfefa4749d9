"""#include lines: where the HIP runtime header goes, and includes the port made redundant.

nvcc gives every .cu file the CUDA runtime without an #include; hipcc's C++ front end needs
`#include <hip/hip_runtime.h>`. It goes after a leading `#pragma once` or include-guard
`#ifndef`, else before the first unconditional #include, else at the top (where HIPIFY puts it).
Two CUDA headers often become one HIP header (cuda.h and cuda_runtime.h, cublas.h and
cublas_v2.h, every curand_*.h): a later include of a HIP header the file already includes on
every path to it is dropped (its line stays, empty), as HIPIFY does.
"""

from __future__ import annotations

from gpuparity.port.tokens import Token

_OPEN = {"#if", "#ifdef", "#ifndef"}
_ALTERNATIVE = {"#elif", "#else", "#elifdef", "#elifndef"}


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end + 1


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def runtime_insertion_point(text: str, toks: list[Token]) -> int:
    """Offset of the line the runtime #include goes before."""
    code = [t for t in toks if t.kind != "comment"]
    if not code:
        return 0
    first = code[0]
    if first.kind == "pp" and first.text == "#pragma" and len(code) > 1 and code[1].text == "once":
        return _line_end(text, code[1].end)
    if first.kind == "pp" and first.text == "#ifndef" and len(code) > 1 and code[1].kind == "id":
        guard = code[1].text
        k = 2
        if k + 1 < len(code) and code[k].text == "#pragma" and code[k + 1].text == "once":
            k += 2
        if k + 1 < len(code) and code[k].text == "#define" and code[k + 1].text == guard:
            return _line_end(text, code[1].end)
    depth = 0
    for t in code:
        if t.kind != "pp":
            continue
        if t.text in _OPEN:
            depth += 1
        elif t.text == "#endif":
            depth -= 1
        elif t.text in ("#include", "#include_next", "#import") and depth == 0:
            return _line_start(text, t.start)
    return 0


class Conditions:
    """The #if groups open at a point: a stack of group ids, one per nesting level."""

    def __init__(self) -> None:
        self.stack: tuple[int, ...] = ()
        self._next = 0

    def directive(self, text: str) -> None:
        if text in _OPEN:
            self._next += 1
            self.stack += (self._next,)
        elif text in _ALTERNATIVE and self.stack:
            self._next += 1
            self.stack = self.stack[:-1] + (self._next,)
        elif text == "#endif" and self.stack:
            self.stack = self.stack[:-1]


class Included:
    """HIP headers included so far, each with the #if groups it sat in."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[int, ...]]] = {}

    def already(self, header: str, stack: tuple[int, ...]) -> bool:
        """An earlier include of header reaches every path to this point (its groups enclose it)."""
        return any(stack[:len(s)] == s for s in self.seen.get(header, ()))

    def add(self, header: str, stack: tuple[int, ...]) -> None:
        self.seen.setdefault(header, []).append(stack)
