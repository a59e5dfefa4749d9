"""Edits on a source text, collected while walking its tokens and applied in one pass."""

from __future__ import annotations


class Editor:
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
        # At one offset: insertions first, then the widest replacement (it swallows the rest);
        # among equal edits the first one made wins (a call rewrite before a plain rename).
        for start, end, new in sorted(self.edits, key=lambda e: (e[0], e[0] != e[1], -e[1])):
            if start < pos:  # inside an earlier, wider (or equal, earlier made) edit: that one wins
                continue
            out.append(self.text[pos:start])
            out.append(new)
            pos = end
        out.append(self.text[pos:])
        return "".join(out)
