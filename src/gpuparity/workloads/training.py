"""One training step of a Llama-style decoder: forward + backward + AdamW, tokens/s and MFU.

Synthetic data (random token ids, labels = inputs), fp32 master weights, bf16 autocast on GPUs
(fp32 on a CPU unless asked), optional activation checkpointing (`--set checkpointing=1`).

FLOPs per token (model FLOPs, the PaLM paper's appendix B formula, also nanoGPT's estimate_mfu):
    6 * N + 12 * L * d_attn * T
  N       parameters that take part in matrix multiplies: every nn.Linear weight, lm_head included;
          the input embedding is a lookup (no FLOPs) and is left out
  6       2 FLOP per multiply-add x (forward + backward for activations + backward for weights)
  L, T    layers, sequence length; d_attn = heads x head_dim
  12*L*d_attn*T  the QK^T and attention x V matmuls, 2 * 2 * T * d_attn per token per layer
          forward, x3 for training; counted for the full T x T square as PaLM does (a causal mask
          halves the useful work; kernels that skip it look better than this count credits)
Activation recomputation under checkpointing is not counted: MFU counts the model's FLOPs.
MFU = achieved FLOP/s / spec dense peak (bf16 on GPUs; on CPUs the estimated fp32 peak, marked
estimated). Memory: torch.cuda.max_memory_allocated on GPUs; the process's ru_maxrss on CPUs
(a process-wide high-water mark, so it includes whatever the process held before).

Reusable pieces (data-parallel scaling builds on them):
    cfg = TrainConfig(hidden=..., layers=..., seq=..., batch=...)
    model = build_model(cfg, device); opt = make_optimizer(model, cfg)
    batch = synthetic_batch(cfg, device); loss = train_step(model, opt, batch, "bf16")
    flops = flops_per_token(model, cfg) * cfg.batch * cfg.seq
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from gpuparity.errors import UserError
from gpuparity.results.work import train_ffn, train_flops_per_token, train_matmul_params
from gpuparity.workloads.base import Context, Prepared, Workload


@dataclass
class TrainConfig:
    hidden: int = 256
    layers: int = 4
    heads: int = 8
    kv_heads: int = 0          # 0: same as heads (no grouped-query attention)
    ffn: int = 0               # 0: about 8/3 x hidden rounded up to a multiple of 64 (Llama's SwiGLU rule)
    vocab: int = 8192
    seq: int = 256
    batch: int = 4
    checkpointing: bool = False
    lr: float = 3e-4

    def llama_config(self):
        from transformers import LlamaConfig

        if self.hidden % self.heads:
            raise UserError(f"hidden {self.hidden} is not a multiple of heads {self.heads}")
        kv = self.kv_heads or self.heads
        if self.heads % kv:
            raise UserError(f"heads {self.heads} is not a multiple of kv_heads {kv}")
        ffn = train_ffn(self.hidden, self.ffn)
        return LlamaConfig(hidden_size=self.hidden, intermediate_size=ffn, num_hidden_layers=self.layers,
                           num_attention_heads=self.heads, num_key_value_heads=kv, vocab_size=self.vocab,
                           max_position_embeddings=max(self.seq, 2048), tie_word_embeddings=False,
                           use_cache=False)


# Sizes per suite: a CPU step in tens of milliseconds for quick; about a 1B-parameter model on a GPU.
SUITE_CONFIGS = {
    ("quick", "cpu"): TrainConfig(hidden=128, layers=2, heads=4, vocab=4096, seq=128, batch=2),
    ("standard", "cpu"): TrainConfig(hidden=512, layers=4, heads=8, vocab=8192, seq=256, batch=4),
    ("full", "cpu"): TrainConfig(hidden=512, layers=8, heads=8, vocab=8192, seq=512, batch=4),
    ("quick", "gpu"): TrainConfig(hidden=1024, layers=8, heads=16, vocab=32000, seq=1024, batch=4),
    ("standard", "gpu"): TrainConfig(hidden=2048, layers=16, heads=16, kv_heads=8, vocab=32000, seq=2048,
                                     batch=4),
    ("full", "gpu"): TrainConfig(hidden=4096, layers=8, heads=32, kv_heads=8, vocab=128256, seq=4096,
                                 batch=2),
}
PARAM_FIELDS = ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab", "seq", "batch", "checkpointing")


def build_model(cfg: TrainConfig, device: str = "cpu", seed: int = 0):
    """A Llama-style decoder with fp32 weights on `device`, in training mode."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg.llama_config(), dtype=torch.float32)
    if cfg.checkpointing:  # transformers 5 renamed gradient_checkpointing_enable
        (getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable)()
    return model.train()


def make_optimizer(model, cfg: TrainConfig):
    import torch

    on_gpu = next(model.parameters()).device.type == "cuda"
    return torch.optim.AdamW(model.parameters(), lr=cfg.lr, fused=on_gpu or None)


def synthetic_batch(cfg: TrainConfig, device: str, seed: int = 0):
    """Random token ids; labels = inputs (the model shifts them for next-token prediction)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq), generator=gen).to(device)
    return ids, ids


def train_step(model, optimizer, batch, dtype: str = "bf16"):
    """forward + backward + AdamW step; returns the loss (a detached tensor, not synchronised)."""
    import torch

    ids, labels = batch
    device_type = ids.device.type
    optimizer.zero_grad(set_to_none=True)
    half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype)
    with torch.autocast(device_type=device_type, dtype=half or torch.float32, enabled=half is not None):
        loss = model(input_ids=ids, labels=labels, use_cache=False).loss
    loss.backward()
    optimizer.step()
    return loss.detach()


def matmul_params(model) -> int:
    """N of the FLOPs formula: weights of every nn.Linear (works through a DDP wrapper too)."""
    import torch

    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def flops_per_token(model, cfg: TrainConfig) -> float:
    """6 * N_matmul + 12 * L * d_attn * T (see the module docstring) from the shape, by the one
    function import checks the work with (results/work.py); the model built must have the
    linear weights that function counts (a transformers release that builds another decoder
    would otherwise state work the step does not do)."""
    shape = asdict(cfg)
    n_model, n_shape = matmul_params(model), train_matmul_params(shape)
    if n_model != n_shape:
        raise RuntimeError(f"the decoder built has {n_model} linear weights, the work formula counts {n_shape}")
    return train_flops_per_token(shape)


def config_from_options(base: TrainConfig, options: dict) -> TrainConfig:
    """Overrides from --set key=value for any TrainConfig field. A listed value (hidden=128,256) is
    left to the runner's apply_sets, which makes one case per value (each checked there)."""
    values = asdict(base)
    for f in fields(TrainConfig):
        raw = options.get(f.name)
        if raw in (None, "") or "," in str(raw):
            continue
        try:
            if f.type in ("bool", bool):
                values[f.name] = str(raw).lower() in ("1", "true", "yes", "on")
            elif f.type in ("float", float):
                values[f.name] = float(raw)
            else:
                values[f.name] = int(raw)
        except ValueError:
            raise UserError(f"--set {f.name}= takes a number, got '{raw}'") from None
        if f.name in ("hidden", "layers", "heads", "vocab", "seq", "batch") and values[f.name] < 1:
            raise UserError(f"--set {f.name}= must be >= 1")
    return TrainConfig(**values)


class Training(Workload):
    name = "training"
    category = "model"
    description = "Llama-style decoder training step (fwd+bwd+AdamW): tokens/s, MFU, memory high-water"
    axes = {f: "--set " + f for f in PARAM_FIELDS} | {"dtype": "bf16 (GPU), fp32 (CPU), fp16"}
    suites = ("quick", "standard", "full")

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        kind = "cpu" if ctx.device == "cpu" else "gpu"
        cfg = config_from_options(SUITE_CONFIGS.get((suite, kind), SUITE_CONFIGS[("quick", kind)]), ctx.options)
        dtypes = ctx.options.get("dtypes") or (["fp32"] if kind == "cpu" else ["bf16"])
        out = []
        for dt in dtypes:
            params = {f: getattr(cfg, f) for f in PARAM_FIELDS}
            out.append(dict(params, dtype=dt))
            if suite == "full" and kind == "gpu" and not ctx.options.get("checkpointing"):
                out.append(dict(params, checkpointing=True, dtype=dt))
        return out

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        if params["dtype"] not in ("fp32", "bf16", "fp16"):
            return False, f"training runs fp32, bf16 or fp16 autocast, not {params['dtype']}"
        if ctx.device == "cpu" and params["dtype"] == "fp16":
            return False, "fp16 autocast training needs a GPU"
        if ctx.planned:           # a plan from the spec table: this machine's packages do not decide
            return True, ""
        import importlib.util

        if importlib.util.find_spec("transformers") is None:
            return False, "needs transformers for the model: pip install 'gpuparity[llm]'"
        return True, ""

    def prepare(self, params: dict, ctx: Context) -> Prepared:
        import torch

        cfg = TrainConfig(**{f: params[f] for f in PARAM_FIELDS})
        dev, dt = ctx.device, params["dtype"]
        if dev != "cpu":
            torch.cuda.reset_peak_memory_stats()
        model = build_model(cfg, dev)
        opt = make_optimizer(model, cfg)
        batch = synthetic_batch(cfg, dev)
        tokens = cfg.batch * cfg.seq
        fpt = flops_per_token(model, cfg)

        def fn():
            train_step(model, opt, batch, dt)

        def check():
            loss = float(train_step(model, opt, batch, dt))
            ok = loss == loss and abs(loss) != float("inf")
            return ok, f"loss {loss:.3f} after one step (finite)" if ok else f"loss is {loss}"

        def teardown():
            nonlocal model, opt
            model = opt = None
            if dev != "cpu":
                torch.cuda.empty_cache()

        # MFU is measured against the bf16 peak on GPUs (the dtype the matmuls run in under autocast).
        peak = "flop:fp32" if dt == "fp32" else f"flop:{dt}"
        info = {"flops_per_token": fpt, "flops_formula": "6*N_matmul + 12*L*d_attn*T (PaLM)",
                "params": sum(p.numel() for p in model.parameters()),
                "params_matmul": matmul_params(model)}
        # Not capturable: the optimizer keeps its step count on the host, so a graph would replay
        # one frozen step (and a step is milliseconds: launch gaps do not matter).
        return Prepared(fn=fn, work={"tokens": tokens, "flop": fpt * tokens}, peak=peak, check=check,
                        info=info, teardown=teardown, capturable=False)

    def execute(self, params: dict, ctx: Context) -> dict:
        from gpuparity.results.figure import fill_workload_figures

        result = super().execute(params, ctx)
        if result["status"] != "ok":
            return result
        fill_workload_figures(result)               # MFU from % of peak (results.figure, as import checks it)
        d = result["derived"]
        d["memory_high_water_bytes"], d["memory_source"] = memory_high_water(ctx.device)
        return result

    def merge_trials(self, trials: list[dict], ctx: Context) -> dict:
        """The base merge, then MFU from the merged figure (the first trial's would be its own)."""
        from gpuparity.results.figure import fill_workload_figures

        merged = super().merge_trials(trials, ctx)
        if merged["status"] == "ok":
            fill_workload_figures(merged)
        return merged


def memory_high_water(device: str) -> tuple[int, str]:
    if device != "cpu":
        import torch

        return int(torch.cuda.max_memory_allocated()), "torch.cuda.max_memory_allocated"
    import resource
    import sys

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024), "ru_maxrss (process high-water)"


WORKLOADS = [Training()]
