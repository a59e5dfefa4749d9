"""Integer constant expressions in source: literals, sizeof(T) of basic types and the file's own
constants (`#define N 1024`, `constexpr int N = 1024;`), for the rules that compare a size or a
mask with what AMD GPUs allow. A tiny recursive-descent parser: input code is never executed."""

from __future__ import annotations

from itertools import compress

from gpuparity.port.tokens import Token, int_value

_SIZEOF = {"char": 1, "bool": 1, "short": 2, "half": 2, "__half": 2, "__nv_bfloat16": 2, "int": 4,
           "unsigned": 4, "float": 4, "uint32_t": 4, "int32_t": 4, "double": 8, "long": 8,
           "int64_t": 8, "uint64_t": 8, "float2": 8, "float4": 16, "double2": 16, "int4": 16}


class ConstEval:
    """Integer constant expressions over literals, sizeof(T) and the file's own constants.
    A tiny recursive-descent parser: input code is never executed or eval()'d."""

    def __init__(self, consts: dict[str, int]):
        self.consts = consts

    def value(self, toks: list[Token]) -> int | None:
        self.toks, self.i = [t for t in toks if t.kind != "comment"], 0
        try:
            v = self._sum()
        except (IndexError, ValueError, ZeroDivisionError):
            return None
        return v if self.i == len(self.toks) else None

    def _peek(self) -> str:
        return self.toks[self.i].text if self.i < len(self.toks) else ""

    def _sum(self) -> int:
        v = self._product()
        while self._peek() in ("+", "-", "<<"):
            op = self.toks[self.i].text
            self.i += 1
            r = self._product()
            v = v + r if op == "+" else v - r if op == "-" else v << min(r, 64)
        return v

    def _product(self) -> int:
        v = self._atom()
        while self._peek() in ("*", "/"):
            op = self.toks[self.i].text
            self.i += 1
            r = self._atom()
            v = v * r if op == "*" else v // r
        return v

    def _atom(self) -> int:
        t = self.toks[self.i]
        self.i += 1
        if t.text == "(":
            v = self._sum()
            if self._peek() != ")":
                raise ValueError
            self.i += 1
            return v
        if t.kind == "num":
            v = int_value(t.text)
            if v is None:
                raise ValueError
            return v
        if t.text == "sizeof" and self._peek() == "(":
            name = self.toks[self.i + 1].text
            if name not in _SIZEOF or self.toks[self.i + 2].text != ")":
                raise ValueError
            self.i += 3
            return _SIZEOF[name]
        if t.kind == "id" and t.text in self.consts:
            return self.consts[t.text]
        raise ValueError


def file_constants(t: list[Token], texts: list[str], starts: list[int] | None = None) -> dict[str, int]:
    """`#define N 1024`, `constexpr int N = 1024;`, `const int N = 4 * 1024;` (t: code tokens,
    texts: their texts; starts: the indices of the texts `#define`, `const`, `constexpr`, when
    known), each evaluated with the constants defined before it."""
    consts: dict[str, int] = {}
    ev = ConstEval(consts)
    if starts is None:
        starts = list(compress(range(len(texts)), map(_CONST_STARTS.__contains__, texts)))
    for i in starts:
        tok = t[i]
        if tok.kind == "pp" and tok.text == "#define" and i + 1 < len(t) and t[i + 1].kind == "id":
            body = []
            j = i + 2
            while j < len(t) and t[j].directive == "define" and t[j].kind != "pp":
                body.append(t[j])
                j += 1
            function_like = body and body[0].text == "(" and body[0].start == t[i + 1].end
            if body and not function_like:
                v = ev.value(body)
                if v is not None:
                    consts[t[i + 1].text] = v
        elif tok.kind == "id" and tok.text in ("const", "constexpr"):
            j = i + 1
            while j < len(t) and t[j].kind == "id" and j < i + 4:
                j += 1
            if j < len(t) and t[j].text == "=" and t[j - 1].kind == "id":
                k = j + 1
                while k < len(t) and t[k].text not in (";", ","):
                    k += 1
                v = ev.value(t[j + 1:k])
                if v is not None:
                    consts[t[j - 1].text] = v
    return consts


_CONST_STARTS = {"#define", "const", "constexpr"}
