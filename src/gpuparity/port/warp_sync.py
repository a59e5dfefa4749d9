"""The *_sync warp intrinsics: a 32-bit full mask widened to HIP's 64 bits; for a HIP before
6.2 (no *_sync intrinsics) the mask dropped and the unsynchronised form called."""

from __future__ import annotations

from gpuparity.port import mappings
from gpuparity.port.context import Context, next_code
from gpuparity.port.model import Rewrite
from gpuparity.port.tokens import Token, call_args, int_value

_FULL_MASK_32 = {0xFFFFFFFF}


WARP_SYNC_MASKED = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
                    "__ballot_sync", "__any_sync", "__all_sync", "__match_any_sync", "__match_all_sync",
                    "__syncwarp"}


def is_full_mask_32(tokens: list[Token], first: int, last: int) -> bool:
    """A 32-bit all-lanes mask literal: 0xffffffff, 0xFFFFFFFFu, 4294967295, ~0u."""
    span = tokens[first:last + 1]
    span = [t for t in span if t.kind != "comment"]
    if len(span) == 1 and span[0].kind == "num":
        v = int_value(span[0].text)
        return v in _FULL_MASK_32 and not span[0].text.lower().rstrip("u").endswith("l")
    if len(span) == 2 and span[0].text == "~" and span[1].kind == "num":
        return span[1].text.lower() in ("0u", "0x0u")
    return False


def warp_sync(ctx: Context, i: int, res: mappings.Resolution) -> bool:
    """Rewrite a *_sync warp intrinsic call. Returns True when it handled the call."""
    toks = ctx.toks
    k = next_code(toks, i)
    if k >= len(toks) or toks[k].text != "(":
        return False
    parsed = call_args(toks, k)
    if parsed is None:
        return False
    args, close = parsed
    tok = toks[i]
    if res.legacy:  # target older than HIP 6.2
        if res.cuda == "__activemask":
            ctx.ed.replace(tok.start, toks[close].end, "__ballot(1)")
            ctx.result.rewrites.append(Rewrite(tok.line, "__activemask() -> __ballot(1) (HIP < 6.2)"))
            return True
        if len(args) < 2:
            return False
        ctx.ed.replace(tok.start, tok.end, res.legacy)
        ctx.ed.replace(toks[args[0][0]].start, toks[args[1][0]].start, "")
        ctx.result.rewrites.append(Rewrite(tok.line, f"{res.cuda}(mask, ...) -> {res.legacy}(...): "
                                                     "mask dropped (HIP < 6.2)"))
        return True
    if res.cuda in WARP_SYNC_MASKED and args and is_full_mask_32(toks, *args[0]):
        first, last = args[0]
        ctx.ed.replace(toks[first].start, toks[last].end, "0xffffffffffffffffull")
        ctx.result.rewrites.append(Rewrite(tok.line, f"{res.cuda}: 32-bit full mask widened to 64 bits "
                                                     "(HIP masks are 64-bit)"))
    return False
