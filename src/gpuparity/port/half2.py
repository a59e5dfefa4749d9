"""__half2 members and braced assignments, which mean other things in HIP.

CUDA's __half2 has __half members x and y; HIP's (amd_hip_fp16.h) are unsigned shorts, the raw
bits: `(float)v.x` compiles and gives the bit pattern, not the value. Each `v.x` / `p[i].y` /
`p->x` of a variable the file declares half2 becomes `reinterpret_cast<half&>(v.x)` (HIPIFY's
form; a reference, so it also assigns). And `v = {a, b}` matches two of HIP's __half2::operator=
overloads (ambiguous): it becomes `v = half2{a, b}`.
"""

from __future__ import annotations

from gpuparity.port.edits import Editor
from gpuparity.port.tokens import Token

TYPES = {"half2": "half", "__half2": "__half"}
_DECL_END = {"=", ",", ";", "[", ")"}


def declared(toks: list[Token]) -> dict[str, tuple[str, bool, bool]]:
    """Names declared with a half2 type -> (the half2 type's spelling, whether it is a pointer or
    array, whether it is const)."""
    out: dict[str, tuple[str, bool, bool]] = {}
    n = len(toks)
    for i, t in enumerate(toks):
        if t.kind != "id" or t.text not in TYPES or (i and toks[i - 1].text in (".", "->", "::", "<")):
            continue
        j, depth = i + 1, 0
        while j < n:
            text = toks[j].text
            if text in ("(", "[", "{"):
                depth += 1
            elif text in (")", "]", "}"):
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and text == ";":
                break
            if depth == 0 and toks[j].kind == "id" and j + 1 < n and toks[j + 1].text in _DECL_END \
                    and toks[j - 1].text in (t.text, ",", "*", "&", "const", "__restrict__", "__restrict"):
                first = j - 1
                while toks[first].text in ("*", "&", "const", "__restrict__", "__restrict"):
                    first -= 1
                if toks[first].text in (t.text, ","):  # a declarator, not a parameter's own type
                    pointer = any(x.text == "*" for x in toks[first + 1:j]) or toks[j + 1].text == "["
                    const = (i > 0 and toks[i - 1].text == "const") or any(x.text == "const" for x in toks[i:j])
                    out.setdefault(toks[j].text, (t.text, pointer, const))
            if depth == 0 and text == "," and j + 1 < n and toks[j + 1].kind == "id" and toks[j + 1].text not in out \
                    and j + 2 < n and toks[j + 2].kind == "id":
                break  # `, float b`: a parameter list goes on with other types
            j += 1
    return out


def _already_cast(toks: list[Token], i: int) -> bool:
    """toks[i] is the operand of `reinterpret_cast<half&>(`."""
    k = i - 1
    if k < 0 or toks[k].text != "(":
        return False
    while k > 0 and toks[k].text != "<":
        k -= 1
    return k > 0 and toks[k - 1].text == "reinterpret_cast" and i - k <= 6


def _member_end(toks: list[Token], i: int, pointer: bool) -> int | None:
    """Index of the x / y token of `name.x`, `name[..].x` or `name->x` starting at i."""
    j = i + 1
    if pointer:
        if j < len(toks) and toks[j].text == "->":
            return j + 1 if j + 1 < len(toks) and toks[j + 1].text in ("x", "y") else None
        if j >= len(toks) or toks[j].text != "[":
            return None
        depth = 0
        while j < len(toks):
            depth += toks[j].text == "["
            depth -= toks[j].text == "]"
            if depth == 0:
                break
            j += 1
        j += 1
    if j + 1 < len(toks) and toks[j].text == "." and toks[j + 1].text in ("x", "y"):
        return j + 1
    return None


def rewrite(text: str, toks: list[Token], ed: Editor) -> list[tuple[int, str]]:
    """Edits for the file's half2 members and braced assignments; (line, note) of each."""
    code = [t for t in toks if t.kind != "comment"]
    names = declared(code)
    notes: list[tuple[int, str]] = []
    if not names:
        return notes
    for i, t in enumerate(code):
        if t.kind != "id" or t.text not in names or (i and code[i - 1].text in (".", "->", "::")):
            continue
        spelling, pointer, const = names[t.text]
        end = _member_end(code, i, pointer)
        if end is not None and not _already_cast(code, i):
            ed.insert(t.start, f"reinterpret_cast<{'const ' if const else ''}{TYPES[spelling]}&>(")
            ed.insert(code[end].end, ")")
            notes.append((t.line, f"{t.text}'s half2 member read as {TYPES[spelling]} (HIP's are raw unsigned shorts)"))
        elif not pointer and i + 2 < len(code) and code[i + 1].text == "=" and code[i + 2].text == "{":
            ed.insert(code[i + 2].start, spelling)
            notes.append((t.line, f"{t.text} = {{...}} -> {t.text} = {spelling}{{...}} (HIP's operator= is ambiguous)"))
    return notes
