"""Synthetic models: real architectures' shapes with random weights, no download.

Throughput does not depend on the weights' values, so the shapes that matter (Llama-3.1-8B,
70B, Mixtral-8x7B, Qwen2-72B, a DeepSeek-V3-like MoE) can be measured without gated weights.
Shapes are the published config.json values; RoPE scaling variants are left out (same cost).
Models are built on the meta device, then each parameter is allocated directly on the target
device in the target dtype and initialised there: an 8B model builds in seconds on a GPU.
"""

from __future__ import annotations

from gpuparity.errors import UserError

# name -> (config class name in transformers, keyword arguments)
ARCHS: dict[str, tuple[str, dict]] = {
    "llama-3.1-8b": ("LlamaConfig", dict(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5,
        rope_theta=500000.0, tie_word_embeddings=False)),
    "llama-3.1-70b": ("LlamaConfig", dict(
        hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64,
        num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5,
        rope_theta=500000.0, tie_word_embeddings=False)),
    "mixtral-8x7b": ("MixtralConfig", dict(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=32000, max_position_embeddings=32768, rms_norm_eps=1e-5,
        rope_theta=1e6, num_local_experts=8, num_experts_per_tok=2, tie_word_embeddings=False)),
    "qwen2-72b": ("Qwen2Config", dict(
        hidden_size=8192, intermediate_size=29568, num_hidden_layers=80, num_attention_heads=64,
        num_key_value_heads=8, vocab_size=152064, max_position_embeddings=32768, rms_norm_eps=1e-6,
        rope_theta=1e6, tie_word_embeddings=False)),
    # DeepseekV3Config's defaults are DeepSeek-V3's shapes (61 layers, MLA, 256 routed experts, 8 active).
    "deepseek-v3": ("DeepseekV3Config", dict()),
    # A small Llama for tests and CPU runs (same code path, seconds to build).
    "tiny-llama": ("LlamaConfig", dict(
        hidden_size=256, intermediate_size=768, num_hidden_layers=4, num_attention_heads=8,
        num_key_value_heads=4, vocab_size=8192, max_position_embeddings=4096, tie_word_embeddings=False)),
}
PREFIX = "synthetic:"


def make_config(arch: str, layers: int | None = None, **overrides):
    import transformers

    if arch not in ARCHS:
        raise UserError(f"unknown synthetic model '{arch}'; known: {', '.join(sorted(ARCHS))}")
    cls_name, kwargs = ARCHS[arch]
    kwargs = dict(kwargs, **overrides)
    if layers is not None:
        if layers < 1:
            raise UserError("layers must be >= 1")
        kwargs["num_hidden_layers"] = layers
    cfg = getattr(transformers, cls_name)(**kwargs)
    if arch == "deepseek-v3" and layers is not None:
        # Keep at least one MoE layer when the model is cut down to fit one device.
        cfg.first_k_dense_replace = min(cfg.first_k_dense_replace, layers - 1)
    return cfg


def param_count(config) -> int:
    """Parameters of the model a config describes, counted on the meta device (no memory)."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def build(config, device: str, dtype, seed: int = 0, std: float = 0.02):
    """A model from a config with random weights, allocated straight on `device` in `dtype`.

    Parameters start on the meta device (no memory); buffers such as RoPE frequencies are real
    from the start (include_buffers=False) and follow the model to the device afterwards.
    Init: matrices N(0, std), 1-D weights (norms) ones, biases zeros.
    """
    import torch
    from accelerate import init_empty_weights
    from transformers import AutoModelForCausalLM

    with init_empty_weights(include_buffers=False):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    for module in model.modules():
        for name, p in list(module.named_parameters(recurse=False)):
            if p.device.type != "meta":
                continue
            data = torch.empty(p.shape, device=device, dtype=dtype)
            if "bias" in name:
                data.zero_()
            elif p.ndim == 1:
                data.fill_(1.0)
            else:
                data.normal_(0.0, std, generator=gen)
            setattr(module, name, torch.nn.Parameter(data, requires_grad=p.requires_grad))
    model.to(device)  # buffers only: every parameter is already there
    if getattr(config, "tie_word_embeddings", False):
        model.tie_weights()
    return model.eval()
