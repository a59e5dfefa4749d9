"""Data-parallel training scaling: one DDP training step on 1, 2, 4, ... N ranks of a torchrun job.

Weak scaling: every rank keeps the same batch, so ideal throughput grows N-fold. Each case
trains on the first k ranks (a subgroup; the others wait at the line-up barrier), so the 1-rank
baseline is measured in the same job, on the same machines, just before the k-rank cases:

    weak-scaling efficiency(k) = (tokens/s of k ranks / k) / (tokens/s of 1 rank)

The 1-rank case trains the plain model (no DDP), so the efficiency includes DDP's own cost.
Without torchrun only the 1-rank case runs. Results of separate jobs with different world sizes
still compare by key (params hold ranks and nodes).

The model is a small self-contained causal transformer (torch.nn.TransformerEncoder layers with
a causal mask, AdamW, cross-entropy on random tokens): the training workload may replace it.
"""

from __future__ import annotations

from gpuparity import dist
from gpuparity.results.schema import canonical, mark, new_result
from gpuparity.workloads.base import Context, Workload, derive
from gpuparity.workloads.collectives import measure_into

# Per-rank model and batch: CPU sizes keep a 2-core CI box at a few steps per second.
SIZES = {
    "cpu": {"vocab": 1024, "d_model": 128, "layers": 2, "heads": 4, "seq": 64, "batch": 4, "dtype": "fp32"},
    "gpu": {"vocab": 32000, "d_model": 1024, "layers": 8, "heads": 16, "seq": 1024, "batch": 8, "dtype": "bf16"},
}
MODEL_KEYS = ("vocab", "d_model", "layers", "heads", "seq")


def rank_counts(world: int) -> list[int]:
    """1, 2, 4, ... below the world size, then the world size."""
    out, k = [], 1
    while k < world:
        out.append(k)
        k *= 2
    return out + [world]


def nodes_spanned(k: int) -> int:
    """Nodes that the first k ranks sit on (torchrun numbers ranks node by node)."""
    per_node = max(1, dist.local_world_size())
    return min(dist.nodes(), -(-k // per_node))


def build_model(cfg: dict, device: str):
    """A small causal language model (pre-norm transformer blocks)."""
    import torch
    from torch import nn

    class TinyLM(nn.Module):
        def __init__(self):
            super().__init__()
            d = cfg["d_model"]
            self.embed = nn.Embedding(cfg["vocab"], d)
            self.pos = nn.Parameter(torch.randn(cfg["seq"], d) * 0.02)
            block = nn.TransformerEncoderLayer(d, cfg["heads"], 4 * d, dropout=0.0, batch_first=True,
                                               norm_first=True)
            self.body = nn.TransformerEncoder(block, cfg["layers"], enable_nested_tensor=False)
            self.head = nn.Linear(d, cfg["vocab"])
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(cfg["seq"]))

        def forward(self, tokens):
            h = self.body(self.embed(tokens) + self.pos, mask=self.mask, is_causal=True)
            return self.head(h)

    return TinyLM().to(device)


def make_step(model, cfg: dict, device: str):
    """One training step on a fixed random batch: forward, loss, backward, AdamW."""
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(1234 + dist.rank())
    tokens = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"] + 1), generator=gen).to(device)
    x, y = tokens[:, :-1], tokens[:, 1:]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    amp = cfg["dtype"] != "fp32" and device != "cpu"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, cfg["vocab"]), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    return step


class Scaling(Workload):
    name = "scaling"
    category = "comm"
    description = "DDP training step on 1..N torchrun ranks; tokens/s and weak-scaling efficiency vs 1 rank"
    axes = {"ranks": "1, 2, 4, ... up to the world size", "nodes": "nodes those ranks span",
            "model": "small causal transformer (d_model, layers, seq, batch per rank)"}
    suites = ("comm",)

    def __init__(self):
        self._baseline: dict[str, float] = {}   # model key -> 1-rank tokens/s, measured in this job

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        size = dict(SIZES["cpu" if ctx.device == "cpu" else "gpu"])
        return [dict(size, ranks=k, nodes=nodes_spanned(k)) for k in rank_counts(dist.world_size())]

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        if params["ranks"] > 1 and not dist.initialized():
            return False, "needs 2 or more ranks: launch with `torchrun --nproc-per-node N -m gpuparity run --suite comm`"
        if params["ranks"] > dist.world_size():
            return False, f"planned for {params['ranks']} ranks, job has {dist.world_size()}"
        return True, ""

    def execute(self, params: dict, ctx: Context) -> dict:
        result = new_result(self.name, self.category, params, params["dtype"])
        ok, reason = self.supports(params, ctx)
        if not ok:
            return mark(result, "skipped", reason)
        k = params["ranks"]
        group = None
        if dist.initialized() and 1 < k < dist.world_size():
            import torch.distributed as tdist

            group = tdist.new_group(list(range(k)))  # every rank must call this, members or not
        active = dist.rank() < k
        step = None
        if active:
            model = build_model(params, ctx.device)
            if k > 1:
                import torch
                from torch.nn.parallel import DistributedDataParallel as DDP

                ids = [torch.cuda.current_device()] if ctx.device != "cpu" else None
                model = DDP(model, device_ids=ids, process_group=group)
            step = make_step(model, params, ctx.device)
        result["work"] = {"tokens": float(params["batch"] * params["seq"] * k)}
        result["info"].update(
            model="TinyLM (self-contained; nn.TransformerEncoder, causal)", ddp=k > 1,
            backend=dist.backend(), world_size=dist.world_size(),
            aggregation="slowest rank per sample (MAX over ranks)",
        )
        measure_into(result, step, ctx, active=active)
        derive(result, None, ctx.spec)
        per_rank = result["derived"]["tokens_per_s"] / k
        result["derived"]["tokens_per_s_per_rank"] = per_rank
        key = canonical({m: params[m] for m in (*MODEL_KEYS, "batch", "dtype")})
        if k == 1:
            self._baseline[key] = per_rank
        base = self._baseline.get(key)
        if base:
            result["derived"]["baseline_tokens_per_s"] = base
            result["derived"]["weak_scaling_efficiency"] = per_rank / base
        else:
            result["info"]["note"] = "no 1-rank baseline in this job: efficiency not computed"
        return result


WORKLOADS = [Scaling()]
