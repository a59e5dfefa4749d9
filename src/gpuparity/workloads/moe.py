"""Mixture-of-experts layer: router, top-k, token permutation, grouped expert GEMMs, un-permute.

Experts are SwiGLU FFNs (gate+up fused: hidden -> 2*ffn, then down: ffn -> hidden). Expert
GEMMs go through torch._grouped_mm where this torch and device accept it (probed once), else a
per-expert loop; info["expert_gemm"] says which. A grouped GEMM is probed once more with host
syncs made errors (torch.cuda.set_sync_debug_mode("error")) and in a trial graph capture: where
it is a host-synchronising per-expert fallback (seen on AMD, and for non-bf16 dtypes on Hopper)
it is labelled so and never replayed from a graph. The grouped GEMMs multiply exactly the routed
rows (T*k: groups end where their tokens end); only where the device refuses unaligned group
starts is each group padded to ALIGN rows, and then the padding is recorded
(info["gemm_rows"] against info["routed_rows"]). The routing avoids host syncs (counts by
scatter-add), so the layer can be replayed from a CUDA/HIP graph.

Work per call: FLOP = router 2*T*H*E + routed experts T*k*6*H*F + shared experts T*6*H*F*S
(T tokens, H hidden, E experts, k top-k, F expert ffn, S shared experts); padding rows are not
counted. tokens = T.
"""

from __future__ import annotations

from contextlib import contextmanager

from gpuparity.results.work import moe_flop  # the work, one function (import checks it)
from gpuparity.workloads.base import Context, Prepared, Workload
from gpuparity.workloads.dtypes import TOLERANCE, compute_dtype, rel_error, torch_dtype

PRESETS = {
    "mixtral-8x7b": {"experts": 8, "top_k": 2, "hidden": 4096, "ffn": 14336, "shared": 0},
    "deepseek-v3": {"experts": 256, "top_k": 8, "hidden": 7168, "ffn": 2048, "shared": 1},
}
CPU_SHRINK = 32          # hidden and ffn divided by this on a CPU; top-k kept
CPU_MAX_EXPERTS = 64     # 256 tiny expert GEMMs cost more in dispatch than in arithmetic on a CPU
TOKENS = {"quick": (4096,), "standard": (256, 4096), "full": (256, 4096, 16384)}
CPU_TOKENS = {"quick": (64,), "standard": (512,), "full": (512, 2048)}
ALIGN = 16
CHECK_TOKENS = 16


class MoE(Workload):
    name = "moe"
    category = "kernel"
    description = ("MoE layer (router, top-k, permute, grouped expert GEMMs, un-permute) at Mixtral-8x7B "
                   "and DeepSeek-V3 shapes (shrunk on CPU); tokens/s and TFLOP/s of routed work")
    axes = {"preset": ", ".join(PRESETS), "tokens": "tokens per call",
            "experts,top_k,hidden,ffn,shared": "layer shape (on CPU: hidden, ffn / 32, at most 64 experts)",
            "dtype": "bf16 (fp32 on a CPU without bf16 units)"}
    choices = {"preset": tuple(PRESETS)}

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        return [c for dt in ctx.options.get("dtypes") or [compute_dtype(ctx)] for c in self._cases(suite, ctx, dt)]

    def _cases(self, suite: str, ctx: Context, dt: str) -> list[dict]:
        cpu = ctx.device == "cpu"
        out = []
        for name, shape in PRESETS.items():
            shape = dict(shape)
            if cpu:
                shape["hidden"] //= CPU_SHRINK
                shape["ffn"] //= CPU_SHRINK
                shape["experts"] = min(shape["experts"], CPU_MAX_EXPERTS)
            for t in (CPU_TOKENS if cpu else TOKENS)[suite]:
                out.append({"preset": name, "tokens": t, **shape, "dtype": dt})
        return out

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        if params["dtype"] not in ("fp32", "bf16", "fp16"):
            return False, f"MoE is measured in fp32, bf16 or fp16, not {params['dtype']}"
        if params["top_k"] > params["experts"]:
            return False, "top_k exceeds the number of experts"
        return True, ""

    def prepare(self, params: dict, ctx: Context) -> Prepared:
        return prepare_moe(params, ctx)


def grouped_mm_status(dtype, device: str, align: int = 1) -> tuple[bool, str]:
    """Whether torch._grouped_mm runs here at this dtype with groups starting at multiples of
    `align` rows, probed on a tiny problem (group sizes 5 and 27 when align is 1)."""
    import torch

    if not hasattr(torch, "_grouped_mm"):
        return False, f"torch {torch.__version__} has no torch._grouped_mm"
    first = 5 if align == 1 else align
    try:
        x = torch.ones(32, 16, dtype=dtype, device=device)
        w = torch.stack([torch.ones(32, 16), 2 * torch.ones(32, 16)]).to(dtype=dtype, device=device).transpose(-2, -1)
        offs = torch.tensor([first, 32], dtype=torch.int32, device=device)
        y = torch._grouped_mm(x, w, offs=offs)
        if float(y[first - 1, 0]) != 16.0 or float(y[first, 0]) != 32.0:
            return False, "torch._grouped_mm gave a wrong answer on a probe"
    except Exception as exc:  # noqa: BLE001 - any refusal means: use the loop
        return False, f"torch._grouped_mm refused: {str(exc).strip().splitlines()[0][:160]}"
    return True, ""


@contextmanager
def sync_checked(device: str):
    """Inside the block a host synchronisation raises (torch.cuda.set_sync_debug_mode("error")):
    a grouped GEMM that falls back to a per-expert loop syncs to learn the group sizes. Nothing
    to check on a CPU."""
    if device == "cpu":
        yield
        return
    import torch

    before = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode(before)


def trial_capture(fn, device: str) -> None:
    """Capture fn into a throw-away CUDA/HIP graph (raises if it cannot be captured); a CPU has none."""
    if device == "cpu":
        return
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()                                          # warm: handles and workspaces outside the capture
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()


def grouped_mm_path(dtype, device: str, align: int) -> tuple[bool, str]:
    """(capturable, label) of torch._grouped_mm at these settings: run once with host syncs made
    errors, then captured into a trial graph. On some platforms (AMD, non-bf16 dtypes on Hopper)
    the grouped GEMM is a per-expert fallback that syncs to read the group sizes: it still runs,
    but it is labelled so, and it is not replayed from a graph."""
    import torch

    first = 5 if align == 1 else align
    x = torch.ones(32, 16, dtype=dtype, device=device)
    w = torch.ones(2, 32, 16, dtype=dtype, device=device).transpose(-2, -1)    # as the layer passes them
    offs = torch.tensor([first, 32], dtype=torch.int32, device=device)
    try:
        with sync_checked(device):
            torch._grouped_mm(x, w, offs=offs)
    except Exception as exc:  # noqa: BLE001 - the sync-debug error, whatever its type
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        return False, f"torch._grouped_mm (host-synchronising fallback: {first_line})"
    try:
        trial_capture(lambda: torch._grouped_mm(x, w, offs=offs), device)
    except Exception as exc:  # noqa: BLE001
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        return False, f"torch._grouped_mm (not capturable into a graph: {first_line})"
    return True, "torch._grouped_mm"


def group_align(dtype, device: str) -> tuple[int, str]:
    """(rows each expert group is padded to, why not grouped): 1 (no padding) where the grouped
    GEMM takes unaligned group starts, ALIGN where it needs them; 0 when it does not run at all."""
    ok, why = grouped_mm_status(dtype, device, 1)
    if ok:
        return 1, ""
    ok, why_aligned = grouped_mm_status(dtype, device, ALIGN)
    return (ALIGN, "") if ok else (0, why_aligned or why)


def group_layout(counts, align: int):
    """Group ends of the grouped GEMM and where each expert's rows start, for per-expert row
    counts: groups padded to `align` rows; the last group ends at its own end (rows past it
    are never multiplied)."""
    import torch

    padded = (counts + align - 1) // align * align
    ends = torch.cumsum(padded, 0)
    return ends.to(torch.int32), ends - padded


def prepare_moe(p: dict, ctx: Context) -> Prepared:
    import torch
    import torch.nn.functional as F

    dev, dt = ctx.device, p["dtype"]
    tdt = torch_dtype(dt)
    t, e, k, h, f, ns = p["tokens"], p["experts"], p["top_k"], p["hidden"], p["ffn"], p["shared"]
    gen = torch.Generator(device=dev).manual_seed(0)

    def rand(*shape, fan_in):  # generated on the device in its dtype: DeepSeek-V3 experts are 22 GB in bf16
        return torch.randn(*shape, generator=gen, device=dev, dtype=tdt).div_(fan_in ** 0.5)

    x = rand(t, h, fan_in=1)
    router = rand(e, h, fan_in=h)
    w13 = rand(e, 2 * f, h, fan_in=h)      # [E, out, in]: passed transposed, as nn.Linear stores it
    w2 = rand(e, h, f, fan_in=f)
    shared13 = rand(2 * f * ns, h, fan_in=h) if ns else None
    shared2 = rand(h, f * ns, fan_in=f * ns) if ns else None
    align, why = group_align(tdt, dev)
    grouped = align > 0
    capturable, label = grouped_mm_path(tdt, dev, align) if grouped else (True, f"per-expert loop ({why})")
    # Static upper bound of the padded rows: no host sync to learn the real size.
    rows_bound = t * k + e * (align - 1) if align > 1 else t * k

    def swiglu(z):
        gate, up = z.chunk(2, dim=-1)
        return F.silu(gate) * up

    def experts_grouped(xs_sorted, experts_sorted, counts):
        if align == 1:   # rows are already grouped by expert: the GEMMs take exactly the routed rows
            offs = torch.cumsum(counts, 0).to(torch.int32)
            mid = swiglu(torch._grouped_mm(xs_sorted, w13.transpose(-2, -1), offs=offs))
            return torch._grouped_mm(mid, w2.transpose(-2, -1), offs=offs)
        offs, starts = group_layout(counts, align)
        starts_in = torch.cumsum(counts, 0) - counts
        dest = starts[experts_sorted] + torch.arange(t * k, device=dev) - starts_in[experts_sorted]
        buf = torch.zeros(rows_bound, h, device=dev, dtype=tdt)
        buf[dest] = xs_sorted
        mid = swiglu(torch._grouped_mm(buf, w13.transpose(-2, -1), offs=offs))
        return torch._grouped_mm(mid, w2.transpose(-2, -1), offs=offs)[dest]

    def experts_loop(xs_sorted, experts_sorted, counts):
        outs, start = [], 0
        for i, n in enumerate(counts.tolist()):
            if n:
                outs.append(swiglu(xs_sorted[start:start + n] @ w13[i].T) @ w2[i].T)
            start += n
        return torch.cat(outs)

    experts = experts_grouped if grouped else experts_loop
    ones = torch.ones(t * k, dtype=torch.long, device=dev)

    def forward():
        logits = x @ router.T
        probs = torch.softmax(logits.float(), dim=-1)
        top_w, top_i = probs.topk(k, dim=-1)
        top_w = top_w / top_w.sum(-1, keepdim=True)
        flat = top_i.reshape(-1)
        order = torch.argsort(flat, stable=True)
        token_of = order // k
        counts = torch.zeros(e, dtype=torch.long, device=dev).scatter_add_(0, flat, ones)   # no host sync
        ys = experts(x[token_of], flat[order], counts)
        out = torch.zeros(t, h, device=dev, dtype=torch.float32)
        out.index_add_(0, token_of, ys.float() * top_w.reshape(-1)[order, None])
        if ns:
            out += (swiglu(x @ shared13.T) @ shared2.T).float()
        return out.to(tdt), logits, top_i, top_w, counts

    def fn():
        with torch.no_grad():
            forward()

    def check():
        with torch.no_grad():
            out, logits, top_i, top_w, counts = forward()
            n = min(CHECK_TOKENS, t)
            xr = x[:n].double()
            err_router = rel_error(logits[:n], xr @ router.double().T)
            ref = torch.zeros(n, h, dtype=torch.float64, device=dev)
            for ex in torch.unique(top_i[:n]).tolist():   # the routing taken, experts computed in fp64
                sel = (top_i[:n] == ex)
                rows = sel.any(-1).nonzero().flatten()
                wt = (top_w[:n].double() * sel).sum(-1)[rows, None]
                z = swiglu(xr[rows] @ w13[ex].double().T) @ w2[ex].double().T
                ref[rows] += wt * z
            if ns:
                ref += swiglu(xr @ shared13.double().T) @ shared2.double().T
            err = max(err_router, rel_error(out[:n], ref))
        tol = 2 * TOLERANCE[dt]   # two GEMMs with an activation rounded in between
        rows = int(group_layout(counts, max(align, 1))[0][-1])
        return err <= tol, (f"relative error {err:.2e} vs fp64 (router and layer output; tolerance {tol:.0e}); "
                            f"expert GEMM rows {rows} for {t * k} routed")

    info = {"expert_gemm": label, "group_align_rows": align if grouped else None, "routed_rows": t * k}
    # The per-expert loop reads the group sizes on the host (counts.tolist()): it cannot be captured.
    return Prepared(fn=fn, work={"flop": moe_flop(p), "tokens": float(t)}, peak=f"flop:{dt}", check=check,
                    info=info, capturable=grouped and capturable)


WORKLOADS = [MoE()]
