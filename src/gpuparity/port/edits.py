"""Edits on a source text, collected while walking its tokens and applied in one pass."""

from __future__ import annotations

import re


class Editor:
    """Collects (start, end, replacement) edits on the source and applies them once."""

    def __init__(self, text: str):
        self.text = text
        # each edit as its sort key: at one offset insertions first, then the widest
        # replacement (it swallows the rest); among equal edits the first one made wins
        self.edits: list[tuple[int, bool, int, int, str]] = []

    def replace(self, start: int, end: int, new: str) -> None:
        self.edits.append((start, start != end, -end, len(self.edits), new))

    def insert(self, at: int, new: str) -> None:
        self.edits.append((at, False, -at, len(self.edits), new))

    def apply(self) -> str:
        if not self.edits:
            return self.text
        out: list[str] = []
        pos = 0
        for start, _, neg_end, _, new in sorted(self.edits):
            if start < pos:  # inside an earlier, wider (or equal, earlier made) edit: that one wins
                continue
            out.append(self.text[pos:start])
            out.append(new)
            pos = -neg_end
        out.append(self.text[pos:])
        return "".join(out)


_CONTINUATION = re.compile(r"^(.*?\S)?([ \t]+)\\(\r?)$")


def realign_continuations(before: str, after: str) -> str:
    """Keep the column of a macro's trailing backslashes after names changed length."""
    if "\\\n" not in after and "\\\r\n" not in after and not after.endswith(("\\", "\\\r")):
        return after  # no line continues
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
