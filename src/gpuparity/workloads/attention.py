"""Attention: torch scaled_dot_product_attention forward and backward.

FLOP (H = query heads, S = sequence, D = head dim, B = batch):
  forward  = 4*B*H*S*S*D   (Q@K^T and P@V, 2*S*S*D each), halved when causal (half the scores);
  backward = 2.5 x forward: five S*S*D products (the recomputed Q@K^T, dV = P^T dO, dP = dO V^T,
             dQ = dS K, dK = dS^T Q) against the forward's two (the FlashAttention convention).
Grouped-query heads: kv_heads < heads, through enable_gqa where the fused kernels take it, else
with K/V heads repeated once outside the timed region (recorded in info["gqa"]).

Which backend ran is found, not assumed: each SDPA backend is tried alone under
torch.nn.attention.sdpa_kernel in the dispatcher's own priority order; the first that accepts the
inputs is the one the default dispatch would take, and the measurement runs pinned to it.
"""

from __future__ import annotations

import math
import warnings

from gpuparity.results.work import attention_flop  # the work, one function (import checks it)
from gpuparity.workloads.base import Context, Prepared, Workload
from gpuparity.workloads.dtypes import TOLERANCE, compute_dtype, rel_error, torch_dtype

CHECK_ROWS = 32   # query rows checked at the start and the end of the sequence, head 0 and last head
BACKEND_NAMES = {
    "FLASH_ATTENTION": "flash", "EFFICIENT_ATTENTION": "memory-efficient", "CUDNN_ATTENTION": "cuDNN",
    "MATH": "math", "OVERRIDEABLE": "overrideable",
}


def _case(seq, causal, pas, dt, batch=1, heads=32, kv_heads=8, head_dim=128) -> dict:
    return {"batch": batch, "heads": heads, "kv_heads": kv_heads, "seq": seq, "head_dim": head_dim,
            "causal": causal, "pass": pas, "dtype": dt}


class Attention(Workload):
    name = "attention"
    category = "kernel"
    description = ("scaled_dot_product_attention forward/backward, causal or not, GQA; TFLOP/s and the "
                   "backend that ran (flash, memory-efficient, cuDNN, math)")
    axes = {"seq": "1k..16k on GPU (256..1k on CPU)", "head_dim": "64, 128", "causal": "true, false",
            "pass": "fwd, bwd", "heads,kv_heads": "query and key/value heads (GQA when kv < q)",
            "dtype": "bf16 (fp32 on a CPU without bf16 units)"}
    choices = {"pass": ("fwd", "bwd")}

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        return [c for dt in ctx.options.get("dtypes") or [compute_dtype(ctx)] for c in self._cases(suite, ctx, dt)]

    def _cases(self, suite: str, ctx: Context, dt: str) -> list[dict]:
        if ctx.device == "cpu":
            small = dict(batch=1, heads=8, kv_heads=2, head_dim=64)
            seqs = (256, 1024) if suite == "quick" else (256, 1024, 2048)
            out = [_case(s, True, "fwd", dt, **small) for s in seqs]
            out += [_case(512, True, "bwd", dt, **small), _case(seqs[0], False, "fwd", dt, **{
                **small, "head_dim": 128})]
            return out
        seqs = {"quick": (1024, 4096), "standard": (1024, 4096, 16384),
                "full": (1024, 2048, 4096, 8192, 16384)}[suite]
        out = []
        for s in seqs:
            batch = max(1, 16384 // s)        # 16k tokens per call at every length
            for causal in (True, False):
                for pas in ("fwd", "bwd"):
                    out.append(_case(s, causal, pas, dt, batch=batch))
        mid = seqs[len(seqs) // 2]
        for pas in ("fwd", "bwd"):
            out.append(_case(mid, True, pas, dt, batch=max(1, 16384 // mid), heads=16, kv_heads=16, head_dim=64))
        if suite == "full":
            out += [_case(s, True, p, dt, batch=max(1, 16384 // s), kv_heads=32) for s in seqs
                    for p in ("fwd", "bwd")]
        return out

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        if params["heads"] % params["kv_heads"]:
            return False, "heads must be a multiple of kv_heads"
        if params["dtype"] not in ("fp32", "bf16", "fp16"):
            return False, f"attention is measured in fp32, bf16 or fp16, not {params['dtype']}"
        return True, ""

    def prepare(self, params: dict, ctx: Context) -> Prepared:
        return prepare_attention(params, ctx)


def priority_order():
    """The SDPA backends in the order the dispatcher tries them."""
    import torch
    from torch.nn.attention import SDPBackend

    try:
        return [SDPBackend(int(i)) for i in torch._C._get_sdp_priority_order()]
    except Exception:  # older torch: the documented default order
        return [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def find_backend(q, k, v, causal: bool, gqa: bool):
    """The first backend, in priority order, that runs these inputs alone; None if none does."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    for be in priority_order():
        if be in (SDPBackend.ERROR, SDPBackend.OVERRIDEABLE):
            continue
        try:
            with warnings.catch_warnings(), sdpa_kernel([be]):
                warnings.simplefilter("ignore")
                F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
            return be
        except RuntimeError:
            continue
    return None


def backend_label(be, ctx: Context) -> str:
    import torch

    name = BACKEND_NAMES.get(be.name, be.name.lower())
    if ctx.backend == "rocm" and name == "flash":
        try:
            name += f" ({torch.backends.cuda.preferred_rocm_fa_library().name.lower()})"  # CK or aotriton
        except Exception:
            name += " (aotriton/CK)"
    if ctx.device == "cpu" and name == "flash":
        name += " (CPU kernel)"
    return name


def prepare_attention(p: dict, ctx: Context) -> Prepared:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dev, dt = ctx.device, p["dtype"]
    tdt = torch_dtype(dt)
    b, h, hkv, s, d, causal = p["batch"], p["heads"], p["kv_heads"], p["seq"], p["head_dim"], p["causal"]
    gen = torch.Generator(device=dev).manual_seed(0)

    def rand(heads):  # on the device: 16k x 32 heads x 128 is seconds on a CPU generator
        return torch.randn(b, heads, s, d, generator=gen, device=dev, dtype=tdt)

    q, k, v = rand(h), rand(hkv), rand(hkv)
    gqa = hkv < h
    mode = "enable_gqa" if gqa else "none"
    be = find_backend(q, k, v, causal, gqa)
    if gqa and be in (None, SDPBackend.MATH):
        # A fused kernel may take repeated heads where it does not take enable_gqa.
        k_rep, v_rep = (t.repeat_interleave(h // hkv, dim=1) for t in (k, v))
        be_rep = find_backend(q, k_rep, v_rep, causal, False)
        if be_rep is not None and be_rep != SDPBackend.MATH:
            k, v, gqa, be, mode = k_rep, v_rep, False, be_rep, "repeated kv heads"
    if be is None:
        raise RuntimeError("no SDPA backend accepts these inputs")
    for t in (q, k, v):
        t.requires_grad_(p["pass"] == "bwd")
    grad = None

    def forward():
        with sdpa_kernel([be]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

    if p["pass"] == "fwd":
        def fn():
            with torch.no_grad():
                return forward()
    else:
        out = forward()
        grad = torch.randn(out.shape, generator=gen, device=dev, dtype=tdt)

        def fn():
            return torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)

    def check():
        rows = _check_rows(s)
        if p["pass"] == "fwd":
            with torch.no_grad():
                got = forward()
        else:
            got = fn()[0]                 # dQ
        errs = []
        for head in (0, h - 1):
            kv = head // (h // hkv) if k.shape[1] < h else head
            ref = _reference(q[0, head], k[0, kv], v[0, kv], rows, causal,
                             grad[0, head] if p["pass"] == "bwd" else None)
            errs.append(rel_error(got[0, head, rows.to(got.device)], ref))
        err = max(errs)
        tol = TOLERANCE[dt] * (2.5 if p["pass"] == "bwd" else 1.0)
        return err <= tol, f"relative error {err:.2e} vs fp64 ({'dQ' if p['pass'] == 'bwd' else 'output'} rows; " \
                           f"tolerance {tol:.0e})"

    info = {"backend": backend_label(be, ctx), "gqa": mode, "flop_formula": "4*B*H*S*S*D (/2 causal; x2.5 bwd)"}
    return Prepared(fn=fn, work={"flop": attention_flop(p)}, peak=f"flop:{dt}", check=check, info=info)


def _check_rows(s: int):
    import torch

    n = min(CHECK_ROWS, s // 2)
    return torch.cat([torch.arange(n), torch.arange(s - n, s)])


def _reference(q, k, v, rows, causal: bool, grad_out=None):
    """fp64 attention output rows, or dQ rows when grad_out is given:
    dQ_i = scale * sum_j P_ij (dP_ij - D_i) K_j with dP_ij = dO_i . V_j and D_i = sum_j P_ij dP_ij."""
    import torch

    dev = q.device
    rows = rows.to(dev)
    q, k, v = q.detach()[rows].double(), k.detach().double(), v.detach().double()
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = q @ k.T * scale
    if causal:
        cols = torch.arange(k.shape[0], device=dev)
        scores = scores.masked_fill(cols[None, :] > rows[:, None], float("-inf"))
    prob = torch.softmax(scores, dim=-1)
    if grad_out is None:
        return prob @ v
    do = grad_out[rows].double()
    dp = do @ v.T
    ds = prob * (dp - (prob * dp).sum(-1, keepdim=True))
    return ds @ k * scale


WORKLOADS = [Attention()]
