"""Correctness gates: whole outputs checked against fp64 before anything is timed.

- `freivalds`: a full-output check of C = A @ B in O(mn + mk + kn): C x against A (B x) in fp64
  for a few random +-1 vectors x. Every element of C enters every row residual, so one wrong
  element anywhere shows; the statistic is the worst row's residual over that row's norm, which
  for correct rounding stays at the dtype's relative error (+-1 vectors make the residual's
  spread exactly the row's rounding error, whatever x is drawn).
- `elementwise`: every element of a buffer against a reference computed apart (memory workloads:
  the whole buffer, not a head; exact where the operation is correctly rounded).
- `tokens_agree`: an LLM's greedy tokens against a reference run of the same model, teacher-forced
  so that one near-tie does not cascade.
- `GateSkip`: raised by a check that finds the case does not apply (e.g. TF32 not engaged):
  the result is skipped with the reason instead of failed.
"""

from __future__ import annotations

import math
from typing import Callable

CHUNK_ELEMS = 1 << 24           # fp64 working chunk (128 MiB)
VECTORS = 4
TOKEN_TOP_K = 5                 # every reference token within the device model's top 5 ...
TOKEN_AGREEMENT = 0.75          # ... and the device's argmax equal to it at >= 75% of positions

Rows = Callable[[int, int], "object"]   # (r0, r1) -> fp64 tensor of those rows


class GateSkip(Exception):
    """The gate found that this case does not apply here; the message is the reason."""


def rows_of(t, row_scale=None, col_scale=None) -> Rows:
    """Rows of a 2-D tensor in fp64, optionally scaled per row ((r, 1) or scalar) and per column."""
    def rows(r0: int, r1: int):
        block = t[r0:r1]
        block = block.float().double() if block.is_floating_point() and block.element_size() == 1 else \
            block.double()   # fp8 converts through fp32
        if row_scale is not None:
            block = block * (row_scale[r0:r1].double() if row_scale.dim() else row_scale.double())
        if col_scale is not None:
            block = block * col_scale.double()
        return block
    return rows


def _chunks(rows: int, cols: int):
    step = max(1, CHUNK_ELEMS // max(cols, 1))
    for r0 in range(0, rows, step):
        yield r0, min(rows, r0 + step)


def freivalds(c: Rows, a: Rows, b: Rows, m: int, n: int, k: int, device, vectors: int = VECTORS,
              seed: int = 0) -> dict:
    """Check C (m x n) = A (m x k) @ B (k x n), all given as fp64 row readers.

    Returns worst_row (max over rows of the rms over vectors of |C x - A (B x)| over ||C_i||),
    relative (||C x - A B x|| / ||A B x|| over all rows) and finite (no NaN/Inf anywhere in C)."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = (torch.randint(0, 2, (n, vectors), generator=gen, dtype=torch.float64) * 2 - 1).to(device)
    bx = torch.empty(k, vectors, dtype=torch.float64, device=device)
    for r0, r1 in _chunks(k, n):
        bx[r0:r1] = b(r0, r1) @ x
    worst, res2, ref2, finite = 0.0, 0.0, 0.0, True
    for r0, r1 in _chunks(m, max(n, k)):
        cr = c(r0, r1)
        finite = finite and bool(torch.isfinite(cr).all())
        ref = a(r0, r1) @ bx
        res = cr @ x - ref
        norms = cr.norm(dim=1)
        per_row = res.pow(2).mean(dim=1).sqrt()
        ratio = torch.where(norms > 0, per_row / norms, torch.where(per_row > 0, math.inf, 0.0))
        worst = max(worst, float(ratio.max()))
        res2 += float(res.pow(2).sum())
        ref2 += float(ref.pow(2).sum())
    relative = math.sqrt(res2 / ref2) if ref2 > 0 else (0.0 if res2 == 0 else math.inf)
    if not finite:
        worst = relative = math.inf
    return {"worst_row": worst, "relative": relative, "finite": finite}


def freivalds_gate(c: Rows, a: Rows, b: Rows, m: int, n: int, k: int, device, tol: float) -> tuple[bool, str, dict]:
    """(passed, detail, figures) of `freivalds` against a relative tolerance."""
    f = freivalds(c, a, b, m, n, k, device)
    if not f["finite"]:
        return False, "output holds NaN/Inf or unwritten elements (Freivalds, all rows)", f
    ok = f["worst_row"] <= tol
    return ok, (f"relative error {f['worst_row']:.2e} in the worst of {m} rows ({f['relative']:.2e} overall) "
                f"vs fp64, Freivalds with {VECTORS} +-1 vectors (tolerance {tol:.0e})"), f


def elementwise(out, ref, tol: float) -> tuple[bool, str]:
    """Every element of `out` within a relative `tol` of `ref` (same shape and dtype, computed
    apart from the timed call); NaN or Inf anywhere fails. tol = 0 asks for identical bits, right
    for correctly rounded IEEE operations (copy, one multiply, one add)."""
    import torch

    if tol == 0 and torch.equal(out, ref):          # one pass, no temporaries: the common case
        return True, f"all {out.numel()} elements identical to the reference"
    diff = (out - ref).abs_()
    good = diff <= ref.abs().mul_(tol)               # NaN compares false: never good
    if bool(good.all()):
        return True, f"all {out.numel()} elements within {tol:.0e} of the reference"
    bad = ~good
    worst = float((diff[bad] / ref[bad].abs().clamp_min(1e-30)).nan_to_num(math.inf).max())
    return False, (f"{int(bad.sum())} of {out.numel()} elements off the reference (worst relative error "
                   f"{worst:.1e}, tolerance {tol:.0e})")


def tokens_agree(model, prompt_ids, reference: list[int]) -> tuple[bool, str, dict]:
    """Teacher-forced: feed prompt + reference tokens once; at each position the reference token
    must be in the model's top TOKEN_TOP_K, and its argmax equal to it at TOKEN_AGREEMENT of them."""
    import torch

    ref = torch.tensor(reference, device=prompt_ids.device).unsqueeze(0)
    seq = torch.cat([prompt_ids, ref[:, :-1]], dim=1)
    with torch.inference_mode():
        logits = model(input_ids=seq, attention_mask=torch.ones_like(seq)).logits[0, prompt_ids.shape[1] - 1:]
    logits = logits.float()
    target = logits.gather(1, ref[0].unsqueeze(1))
    ranks = (logits > target).sum(dim=1)
    finite = bool(torch.isfinite(logits).all())
    agreement = float((ranks == 0).float().mean())
    worst = int(ranks.max())
    ok = finite and agreement >= TOKEN_AGREEMENT and worst < TOKEN_TOP_K
    detail = (f"greedy tokens vs the reference run: argmax equal at {agreement:.0%} of {len(reference)} "
              f"positions (need {TOKEN_AGREEMENT:.0%}), worst reference-token rank {worst + 1} "
              f"(need <= {TOKEN_TOP_K})" + ("" if finite else "; non-finite logits"))
    return ok, detail, {"agreement": agreement, "worst_rank": worst + 1, "positions": len(reference)}
