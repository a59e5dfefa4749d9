"""Library calls whose AMD counterpart takes other arguments: the argument rewrite for the
mode (--roc or not), stand-ins for calls an older target lacks, and calls left as written for
a human (their arguments keep their CUDA text and count as not ported)."""

from __future__ import annotations

from gpuparity.port import blas_v1, dnn, mappings
from gpuparity.port.call_site import Refused
from gpuparity.port.context import MEMBER_ACCESS, Context, next_code, prev_code
from gpuparity.port.model import ApiUse, Rewrite
from gpuparity.port.roc_rewrites import ROC_ARG_REWRITES
from gpuparity.port.runtime_rewrites import ARG_REWRITES
from gpuparity.port.sparse_roc import SPARSE_ROC_REWRITES
from gpuparity.port.status_strings import STATUS_STRINGS, status_string_lambda
from gpuparity.port.tokens import call_args


def _call(ctx: Context, i: int, rewrite) -> str | None:
    """Run an argument rewrite on the call whose name is toks[i]."""
    k = next_code(ctx.toks, i)
    if k < len(ctx.toks) and ctx.toks[k].text == "(":
        parsed = call_args(ctx.toks, k)
        if parsed is not None:
            return rewrite(ctx.site, i, *parsed)
    return None


def leave_call(ctx: Context, i: int) -> None:
    """Leave the call whose name is toks[i] as written (a human ports it): its arguments keep
    their CUDA text, and the names in them count as not ported."""
    k = next_code(ctx.toks, i)
    if k < len(ctx.toks) and ctx.toks[k].text == "(":
        parsed = call_args(ctx.toks, k)
        if parsed is not None:
            args, close = parsed
            ctx.site.keep(args)
            if close > ctx.left_end:
                ctx.left_end, ctx.left_call = close, ctx.toks[i].text


def left_use(ctx: Context, i: int) -> None:
    """A name inside a call left for a human: a CUDA API use that is not ported."""
    toks = ctx.toks
    tok = toks[i]
    entry = mappings.load_table()["apis"].get(tok.text)
    if entry is None or not mappings.counts_as_api(tok.text, entry):
        return
    p = prev_code(toks, i)
    if p >= 0 and toks[p].kind == "punct" and (toks[p].text in MEMBER_ACCESS or toks[p].text == "::"):
        return  # a member, or a name in some namespace: not a CUDA name
    ctx.result.uses.append(ApiUse(tok.text, tok.line, entry.get("family", ""), None, False,
                                  f"in the arguments of {ctx.left_call}, which is left as written "
                                  "for a human to port"))


def library_call(ctx: Context, i: int, name: str, res: mappings.Resolution) -> mappings.Resolution:
    """Argument rewrites (and, for older targets, stand-ins for missing calls); the
    resolution a successful rewrite leaves."""
    tok = ctx.toks[i]
    opts = ctx.opts
    v1 = res.family == "cublas" and res.hip == "" and bool(ctx.cublas_v1 or name in blas_v1.V1_ONLY)
    rewrite = blas_v1.rewrite_for(name) if v1 else REWRITES[opts.roc].get(name)
    if res.family == "cudnn" and opts.dnn == "hipdnn":
        rewrite = None  # hipDNN keeps cuDNN's arguments
    if rewrite is not None and res.hip is not None:
        what = _call(ctx, i, rewrite)
        if what and not isinstance(what, Refused):
            ctx.result.rewrites.append(Rewrite(tok.line, f"{name}: {what}"))
            ctx.v1_rewritten |= v1
            if not res.hip:  # rewritten into an expression: nothing left to rename
                return mappings.Resolution(name, "", True, "", res.family)
        elif isinstance(what, Refused):
            leave_call(ctx, i)
            return mappings.Resolution(name, None, False, str(what), res.family)
        elif not res.hip or name in REQUIRED:  # a rename alone would leave a wrong call
            leave_call(ctx, i)
            return mappings.Resolution(name, None, False, "call shape not recognised for the rewrite "
                                       "(its arguments differ in the AMD library): port it by hand", res.family)
    if not res.supported and name in STATUS_STRINGS:
        stand_in = status_string_lambda(name, opts.hip_version, opts.roc)
        if stand_in:
            ctx.ed.replace(tok.start, tok.end, stand_in)
            ctx.result.rewrites.append(Rewrite(tok.line, f"{name}: the target lacks {res.hip}; "
                                                         "an inline switch over the status names stands in"))
            return mappings.Resolution(name, "", True, f"{res.reason}: inline stand-in", res.family)
    return res


# Argument rewrites by mode (--roc or not); cuDNN goes to MIOpen in both.
REWRITES = {False: {**ARG_REWRITES, **dnn.DNN_REWRITES},
            True: {**ARG_REWRITES, **dnn.DNN_REWRITES, **ROC_ARG_REWRITES, **SPARSE_ROC_REWRITES}}


# Calls whose rename alone would compile into a wrong call (arguments moved or dropped):
# when the rewrite does not recognise the call, it keeps its CUDA name and is listed.
REQUIRED = (set(dnn.DNN_REWRITES) | {n for n in ROC_ARG_REWRITES if n.startswith("cusolver")} | {"cublasSgemmEx"}
            | set(SPARSE_ROC_REWRITES))


CALL_NAMES = set(REWRITES[True]) | set(STATUS_STRINGS)
