"""`--launch ggl`: kernel launches `k<<<g, b, s, st>>>(args)` as `hipLaunchKernelGGL(...)`.

Template kernels are named through HIP_KERNEL_NAME() (the macro's commas would otherwise split
the template arguments; a template launched with deduced arguments, or through a macro naming
an instance, too), launch sizes already written as dim3(...) are not wrapped again, a
global-scope `::k` keeps its qualifier inside the call, and launches inside a #define body
are converted when the whole launch sits in that body.
"""

from __future__ import annotations

from gpuparity.port import conditions
from gpuparity.port.edits import Editor
from gpuparity.port.tokens import Token, call_args, launch_config, tokenize


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
    if j >= 1 and toks[j - 1].text == "::" and (j < 2 or toks[j - 2].kind not in ("id",)):
        j -= 1  # ::kernel: the global-scope qualifier belongs to the name
    return j


def _is_dim3(toks: list[Token], first: int, last: int) -> bool:
    """The part is one dim3(...) or dim3{...} expression."""
    if last - first < 2 or toks[first].text != "dim3" or toks[first + 1].text not in ("(", "{"):
        return False
    parsed = call_args(toks, first + 1)
    return parsed is not None and parsed[1] == last


def _same_directive(toks: list[Token], first: int, last: int) -> bool:
    """All of first..last sit in code, or all in one #define body."""
    d = toks[first].directive
    if d not in ("", "define"):
        return False
    return all(t.directive == d and t.kind != "pp" for t in toks[first:last + 1])


def template_names(toks: list[Token]) -> set[str]:
    """Kernels declared as templates in this file, and macros that name a template instance
    (`#define K axpy<float>`): their launches go through HIP_KERNEL_NAME() too, as HIPIFY's do."""
    names = set()
    for i, t in enumerate(toks):
        if t.kind == "id" and t.text == "template" and t.directive == "":
            j = i + 1
            while j < len(toks) and toks[j].text not in ("(", ";", "{") and toks[j].directive == "":
                j += 1
            if j < len(toks) and toks[j].text == "(" and toks[j - 1].kind == "id" \
                    and any(x.text == "__global__" for x in toks[i:j]):
                names.add(toks[j - 1].text)
        elif t.kind == "pp" and t.text == "#define" and i + 3 < len(toks) and toks[i + 1].kind == "id":
            body = toks[i + 2:i + 4]
            if body[0].kind == "id" and body[1].text == "<" and body[0].directive == body[1].directive == "define":
                names.add(toks[i + 1].text)
    return names


def rewrite_launches_ggl(text: str, engine: str = "auto", skip_defines: tuple[str, ...] | None = None
                         ) -> tuple[str, list[int]]:
    """`k<<<g, b, s, st>>>(args)` -> `hipLaunchKernelGGL(k, dim3(g), dim3(b), s, st, args)`.
    skip_defines: leave launches in the #if branches these -D defines exclude (conditions.py)."""
    toks, _ = tokenize(text, engine)
    skipped = conditions.excluded(toks, skip_defines) if skip_defines is not None else []
    toks = [t for t in toks if t.kind != "comment"]
    templates = template_names(toks)
    ed = Editor(text)
    lines: list[int] = []
    for i, t in enumerate(toks):
        if t.text != "<<<" or t.kind != "punct" or t.directive not in ("", "define"):
            continue
        if skipped and conditions.in_ranges(skipped, t.start):
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
        if not _same_directive(toks, start, close):
            continue
        kernel = text[toks[start].start:toks[i - 1].end]
        if "<" in kernel or toks[i - 1].text in templates:
            kernel = f"HIP_KERNEL_NAME({kernel})"
        parts = []
        for k, (a, b) in enumerate(config):
            part = text[toks[a].start:toks[b].end]
            parts.append(part if k >= 2 or _is_dim3(toks, a, b) else f"dim3({part})")
        shared = parts[2] if len(parts) > 2 else "0"
        stream = parts[3] if len(parts) > 3 else "0"
        inner = text[toks[gt + 1].end:toks[close].start].strip()
        new = f"hipLaunchKernelGGL({kernel}, {parts[0]}, {parts[1]}, {shared}, {stream}"
        new += f", {inner})" if inner else ")"
        ed.replace(toks[start].start, toks[close].end, new)
        lines.append(t.line)
    return ed.apply(), lines
