"""What a call rewrite works with: the call site (the source, its tokens, the editor, the
target) and the helpers every rewrite shares.

A rewrite gets the call's argument token ranges and edits the source through the call site; it
returns a one-line note for the report, None when the call does not have the shape it expects
(then only the name changes and the report says so), or Refused when it cannot be ported as it
stands. The rewrites: runtime_rewrites.py (HIP), roc_rewrites.py and sparse_roc.py (--roc),
blas_v1.py (legacy cuBLAS), dnn.py (cuDNN to MIOpen).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from gpuparity.port.edits import Editor
    from gpuparity.port.tokens import Token

Args = list[tuple[int, int]]


@dataclass
class CallSite:
    """What a rewrite may touch: the source, its tokens, the editor and the target."""
    text: str
    toks: list[Token]
    ed: Editor
    target: tuple[int, ...]
    roc: bool
    handled: dict[int, str] = field(default_factory=dict)  # token index -> name already emitted
    rename: Callable[[str], str] = str  # a CUDA name -> the name this translation emits
    c_only: bool = False  # a C file: no nullptr, lambdas or casts to C++ types
    known: Callable[[str], bool] = bool  # whether a name is a CUDA API (its use is counted)
    roc_elements: bool = False  # --roc: the file declares its elements in the ROCm types (roc_types.py)

    @property
    def null(self) -> str:
        return "0" if self.c_only else "nullptr"

    def consume(self, rng: tuple[int, int]) -> None:
        """The CUDA names in an argument a rewrite dropped count as ported by that rewrite."""
        for k in range(rng[0], rng[1] + 1):
            if self.toks[k].kind == "id" and self.known(self.toks[k].text):
                self.handled[k] = ""

    def rebuild(self, args: Args, new: list[str]) -> None:
        """Replace the argument list with `new` (argument texts), keeping the original
        separators (and so the line breaks) slot by slot."""
        seps = [self.text[self.toks[a[1]].end:self.toks[b[0]].start] for a, b in pairwise(args)]
        out = []
        for k, arg in enumerate(new):
            out.append(arg)
            if k < len(new) - 1:
                out.append(seps[k] if k < len(seps) else ", ")
        self.ed.replace(self.toks[args[0][0]].start, self.toks[args[-1][1]].end, "".join(out))

    def keep(self, args: Args) -> None:
        """Leave the call's arguments as written: a call that keeps its CUDA name keeps CUDA
        arguments too (one edit over them all, which the editor prefers to the renames inside)."""
        if args and args[0][0] <= args[-1][1]:
            start, end = self.toks[args[0][0]].start, self.toks[args[-1][1]].end
            self.ed.replace(start, end, self.text[start:end])

    def replace_call(self, i: int, close: int, text: str) -> None:
        """Replace the whole call (name to closing parenthesis) with an expression; one
        whose value the statement drops is cast to void (no unused-value warning)."""
        if self.is_statement(i, close):
            text = f"(void){text}"
        self.ed.replace(self.toks[i].start, self.toks[close].end, text)

    def is_statement(self, i: int, close: int) -> bool:
        """The call is a whole expression statement: `...; call(...);`."""
        toks = self.toks
        p, a = i - 1, close + 1
        while p >= 0 and toks[p].kind == "comment":
            p -= 1
        while a < len(toks) and toks[a].kind == "comment":
            a += 1
        return (p < 0 or toks[p].text in (";", "{", "}")) and a < len(toks) and toks[a].text == ";"

    def arg(self, rng: tuple[int, int]) -> str:
        first, last = rng
        return self.text[self.toks[first].start:self.toks[last].end] if first <= last else ""

    def translated_arg(self, rng: tuple[int, int]) -> str:
        """An argument's text with its names translated, for text a rewrite copies."""
        first, last = rng
        if first > last:
            return ""
        out, pos = [], self.toks[first].start
        for tok in self.toks[first:last + 1]:
            if tok.kind == "id":
                out.append(self.text[pos:tok.start] + self.rename(tok.text))
                pos = tok.end
        out.append(self.text[pos:self.toks[last].end])
        return "".join(out)


Rewrite = Callable[[CallSite, int, Args, int], "str | None"]


class Refused(str):
    """What a rewrite returns when the call cannot be ported as it stands: the reason,
    shown in "needs a human" (the call keeps its CUDA name)."""


def arg_texts(site: CallSite, args: Args) -> list[str] | None:
    """The translated text of each argument; None if one is empty."""
    if any(a > b for a, b in args):
        return None
    return [site.translated_arg(a) for a in args]


def token_of(site: CallSite, rng: tuple[int, int]) -> str:
    """The argument's text when it is one identifier, else ''."""
    first, last = rng
    return site.toks[first].text if first == last and site.toks[first].kind == "id" else ""
