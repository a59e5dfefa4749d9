"""Data-parallel training scaling: one DDP training step on 1, 2, 4, ... N ranks of a torchrun job.

Weak scaling: every rank keeps the same batch, so ideal throughput grows N-fold. Each case
trains on the first k ranks (a subgroup; the others wait at the line-up barrier), so the 1-rank
baseline is measured in the same job, on the same machines, just before the k-rank cases:

    weak-scaling efficiency(k) = (tokens/s of k ranks / k) / (tokens/s of 1 rank)

The 1-rank case trains the plain model (no DDP), so the efficiency includes DDP's own cost.
Without torchrun only the 1-rank case runs. Results of separate jobs with different world sizes
still compare by key (params hold ranks and nodes).

The model and step are the training workload's (a Llama-style decoder, AdamW, synthetic tokens;
bf16 autocast on GPUs), at sizes that keep a whole-job sweep short; `--set hidden=...` etc.
override them as for `training`.
"""

from __future__ import annotations

from gpuparity.platform import dist
from gpuparity.results.figure import derive, fill_workload_figures, weak_scaling
from gpuparity.results.work import train_flops_per_token, work_of
from gpuparity.workloads.base import Context, Workload
from gpuparity.workloads.collectives import measure_into

# Per rank. CPU: a step in tens of milliseconds on one core; GPU: about 0.2B parameters.
SIZES = {
    "cpu": {"hidden": 128, "layers": 2, "heads": 4, "vocab": 1024, "seq": 64, "batch": 4},
    "gpu": {"hidden": 1024, "layers": 8, "heads": 16, "vocab": 32000, "seq": 1024, "batch": 8},
}


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


class Scaling(Workload):
    name = "scaling"
    category = "comm"
    description = "DDP training step on 1..N torchrun ranks; tokens/s and weak-scaling efficiency vs 1 rank"
    axes = {"ranks": "1, 2, 4, ... up to the world size", "nodes": "nodes those ranks span",
            "hidden,layers,heads,kv_heads,ffn,vocab,seq,batch,checkpointing":
                "the training workload's decoder (per rank)"}
    suites = ("comm",)

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        from dataclasses import asdict

        from gpuparity.workloads.training import PARAM_FIELDS, TrainConfig, config_from_options

        kind = "cpu" if ctx.device == "cpu" else "gpu"
        cfg = asdict(config_from_options(TrainConfig(**SIZES[kind]), ctx.options or {}))
        model = {f: cfg[f] for f in PARAM_FIELDS}
        dtype = "fp32" if kind == "cpu" else "bf16"
        return [dict(model, ranks=k, nodes=nodes_spanned(k), dtype=dtype) for k in rank_counts(dist.world_size())]

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        if params["ranks"] > 1 and not dist.initialized():
            return False, "needs 2 or more ranks: launch with `torchrun --nproc-per-node N -m gpuparity run --suite comm`"
        if params["ranks"] > dist.world_size():
            return False, f"planned for {params['ranks']} ranks, job has {dist.world_size()}"
        if ctx.planned:
            return True, ""
        try:
            import transformers  # noqa: F401  (the training workload's model)
        except ImportError:
            return False, "needs transformers for the model: pip install 'gpuparity[llm]'"
        return True, ""

    def execute(self, params: dict, ctx: Context) -> dict:
        result, ok = self.begin(params, ctx)
        if not ok:
            return result
        from gpuparity.workloads import training as tr

        k = params["ranks"]
        cfg = tr.TrainConfig(**{f: params[f] for f in tr.PARAM_FIELDS})
        group = None
        if dist.initialized() and 1 < k < dist.world_size():
            import torch.distributed as tdist

            group = tdist.new_group(list(range(k)))  # every rank must call this, members or not
        active = dist.rank() < k
        step = None
        fpt = train_flops_per_token(params)          # from the shape, on every rank (results/work.py)
        if active:
            model = tr.build_model(cfg, ctx.device)   # same seed on every rank (DDP also syncs at start)
            tr.flops_per_token(model, cfg)            # the model built is the one the formula counts
            if k > 1:
                import torch
                from torch.nn.parallel import DistributedDataParallel as DDP

                ids = [torch.cuda.current_device()] if ctx.device != "cpu" else None
                model = DDP(model, device_ids=ids, process_group=group)
            opt = tr.make_optimizer(model, cfg)
            batch = tr.synthetic_batch(cfg, ctx.device, seed=dist.rank())  # each rank its own data

            def step():
                tr.train_step(model, opt, batch, params["dtype"])

        result["work"] = work_of(self.name, params)   # the work import checks it against
        result["info"].update(
            model="Llama-style decoder (workloads.training)", ddp=k > 1, flops_per_token=fpt,
            backend=dist.backend(), world_size=dist.world_size(),
            aggregation="slowest rank per sample (MAX over ranks)",
        )
        measure_into(result, step, ctx, active=active)
        derive(result, None, ctx.spec)
        fill_workload_figures(result)                 # tokens/s per rank (results.figure)
        return result

    def finalize(self, results: list[dict]) -> None:
        """Weak-scaling efficiency of every rank count against the 1-rank result of the same model
        in this run, whatever order the cases ran in (the runner shuffles them)."""
        for r in results:      # per rank from the result's figure (merged over trials)
            if r["status"] == "ok":
                fill_workload_figures(r)
        for r, found in zip(results, weak_scaling(results), strict=True):
            if found:
                r["derived"]["baseline_tokens_per_s"], r["derived"]["weak_scaling_efficiency"] = found
            elif r["status"] == "ok" and "tokens_per_s_per_rank" in r["derived"]:
                r["info"]["note"] = "no 1-rank baseline in this run: efficiency not computed"


WORKLOADS = [Scaling()]
