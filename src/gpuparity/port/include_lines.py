"""#include lines translated: each CUDA header to the HIP (or ROCm) header in the layout asked
for; one the file already includes on every path to it is dropped (includes.py decides that)."""

from __future__ import annotations

from gpuparity.port import mappings
from gpuparity.port.context import Context, prev_code
from gpuparity.port.model import ApiUse, Rewrite

RUNTIME_HEADER = "hip/hip_runtime.h"


def translate_include(ctx: Context, i: int) -> None:
    tok = ctx.toks[i]
    inner = tok.text[1:-1]
    if ctx.first_include < 0:
        ctx.first_include = ctx.text.rfind("\n", 0, tok.start) + 1
    if inner == "cublas.h" and ctx.cublas_include_end < 0:
        line_end = ctx.text.find("\n", tok.end)
        ctx.cublas_include_end = len(ctx.text) if line_end < 0 else line_end + 1
    target, roc = ctx.opts.hip_version, ctx.opts.roc
    is_cuda, hip = mappings.map_header(inner, target, roc, ctx.opts.headers)
    stack = ctx.conditions.stack
    if not is_cuda:
        if inner == RUNTIME_HEADER:
            ctx.runtime_included = True
        ctx.included.add(inner, stack)
        return
    if hip == "miopen/miopen.h" and ctx.opts.dnn == "hipdnn":
        hip = "hipDNN.h"
    if hip is None:
        ctx.result.uses.append(ApiUse(f"<{inner}>", tok.line, "header", None, False,
                                      mappings.header_note(inner, target, roc)))
        return
    ctx.result.uses.append(ApiUse(f"<{inner}>", tok.line, "header", hip, True))
    if ctx.included.already(hip, stack):  # the file has it on every path here: the line goes
        p = prev_code(ctx.toks, i)
        start = ctx.toks[p].start if p >= 0 and ctx.toks[p].kind == "pp" else tok.start
        ctx.ed.replace(start, tok.end, "")
        ctx.result.rewrites.append(Rewrite(tok.line, f"#include <{inner}> dropped: <{hip}> is already included"))
        return
    ctx.included.add(hip, stack)
    if hip.rpartition("/")[2] == "rocsparse.h" and ctx.sparse_include_end < 0:
        line_end = ctx.text.find("\n", tok.end)
        ctx.sparse_include_end = len(ctx.text) if line_end < 0 else line_end + 1
    if hip == RUNTIME_HEADER:
        ctx.runtime_included = True
    if hip != inner:
        ctx.ed.replace(tok.start + 1, tok.end - 1, hip)
