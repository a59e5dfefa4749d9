"""A serving result's server identity (info.server_identity): which engine served which model at
which precision and parallelism, as the server said it, as its launch command gave it, or as the
user declared it, and what two identities differ in.

The identity (workloads/serving/server_info.py builds it) is a flat dict of IDENTITY_FIELDS plus
"sources" (where each field came from), "declared", "launch" and "machine". Two results are the
same configuration when no field of CONFIG_FIELDS is known on both sides with different values; a
field unknown on a side is named as unknown, never taken as a match or a mismatch. The engine and
its version may differ: that is what a comparison of engines compares.
"""

from __future__ import annotations

import os
import re

# what a configuration is: these differing (known on both sides) make a cross-configuration comparison
CONFIG_FIELDS = ("model", "dtype", "quantization", "kv_cache_dtype", "tensor_parallel", "pipeline_parallel",
                 "data_parallel", "expert_parallel")
IDENTITY_FIELDS = ("engine", "engine_version", *CONFIG_FIELDS, "model_revision", "max_model_len", "gpus")
FIELD_WORDS = {"model": "model", "dtype": "precision", "quantization": "quantisation",
               "kv_cache_dtype": "KV-cache dtype", "tensor_parallel": "TP", "pipeline_parallel": "PP",
               "data_parallel": "DP", "expert_parallel": "EP", "engine": "engine", "engine_version": "version",
               "model_revision": "revision", "max_model_len": "max length", "gpus": "GPUs"}
DTYPES = {"fp32": ("float32", "fp32", "f32", "float", "torch.float32"),
          "bf16": ("bfloat16", "bf16", "torch.bfloat16"),
          "fp16": ("float16", "fp16", "half", "f16", "torch.float16"),
          "fp8": ("fp8", "float8", "fp8_e4m3", "float8_e4m3fn", "fp8_e5m2", "float8_e5m2"),
          "fp4": ("fp4", "nvfp4", "mxfp4")}
UNKNOWN_WORDS = ("", "auto", "default", "null")
SAID_BY_USER = ("declared", "launch command", "recipe")     # sources that are not the server's own word


def norm_dtype(value) -> str | None:
    """'bfloat16' -> 'bf16', 'torch.float32' -> 'fp32'; 'auto' and nothing -> None (not known)."""
    text = str(value or "").strip().lower()
    if text in UNKNOWN_WORDS or text == "none":
        return None
    for short, names in DTYPES.items():
        if text in names:
            return short
    return text[:40]


def norm_quant(value) -> str | None:
    """A quantisation method; 'none' (unquantised) is a value, 'auto' and nothing are unknown."""
    text = str(value if value is not None else "").strip().lower()
    if text in UNKNOWN_WORDS:
        return None
    return "none" if text in ("none", "no", "false") else text[:40]


def norm_model(value) -> str | None:
    """The model a server loaded, comparable across engines: the last part of a path or hub id,
    lower case ('/models/Llama-3.1-8B-Instruct/' and 'meta-llama/Llama-3.1-8B-Instruct' match)."""
    text = str(value or "").strip().rstrip("/\\")
    if not text:
        return None
    return re.split(r"[/\\]", text)[-1].lower()[:200] or None


def norm_int(value) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        n = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return n if 1 <= n <= 1_000_000 else None


def comparable(ident: dict | None, field: str):
    """A field of an identity as it is compared (normalised), None where unknown."""
    value = (ident or {}).get(field)
    if field == "model":
        return norm_model(value)
    if field in ("dtype", "kv_cache_dtype"):
        return norm_dtype(value)
    if field == "quantization":
        return norm_quant(value)
    if field in ("tensor_parallel", "pipeline_parallel", "data_parallel", "expert_parallel", "gpus"):
        return norm_int(value)
    return value if value not in (None, "") else None


def differences(a: dict | None, b: dict | None, fields=CONFIG_FIELDS) -> dict:
    """{"differ": [field, ...] known on both sides with other values, "unknown": [fields known on
    one side or neither], "values": {field: [a, b]}}."""
    differ, unknown, values = [], [], {}
    for f in fields:
        va, vb = comparable(a, f), comparable(b, f)
        if va is None or vb is None:
            if not (f in ("pipeline_parallel", "data_parallel", "expert_parallel", "kv_cache_dtype")
                    and va is None and vb is None):      # rarely said anywhere: unknown on both, not worth a word
                unknown.append(f)
        elif va != vb:
            differ.append(f)
            values[f] = [va, vb]
    return {"differ": differ, "unknown": unknown, "values": values}


def same_server(a: dict | None, b: dict | None) -> bool:
    """Whether two identities describe one server configuration (for A/A): every identity field
    and the launch command equal where either side knows them."""
    return server_key(a) == server_key(b)


def server_key(ident: dict | None) -> tuple:
    """What makes two identities one server configuration (same_server compares these): every
    identity field as compared (None: unknown) and the launch command and environment, ports aside."""
    return tuple(comparable(ident, f) for f in IDENTITY_FIELDS), _launch_key(ident)


def config_name(ident: dict | None) -> str | None:
    """A configuration's short name for a chart point or a table cell, as InferenceX labels its
    points: 'vllm 0.11.0 bf16 TP8 EP8 8 GPUs' (engine, precision, quantisation, KV-cache dtype,
    parallelism, GPUs), the model where nothing else is said; None where nothing is."""
    ident = ident or {}
    parts = [f"{ident.get('engine')} {ident.get('engine_version') or ''}".strip()] if ident.get("engine") else []
    quant, kv = comparable(ident, "quantization"), comparable(ident, "kv_cache_dtype")
    parts += [v for v in (comparable(ident, "dtype"), quant if quant != "none" else None) if v]
    parts += [f"KV {kv}"] if kv else []
    parts += [f"{word}{comparable(ident, f)}" for f, word in (("tensor_parallel", "TP"), ("pipeline_parallel", "PP"),
              ("data_parallel", "DP"), ("expert_parallel", "EP")) if comparable(ident, f)]
    gpus = norm_int(ident.get("gpus"))
    parts += [f"{gpus} GPU{'s' if gpus > 1 else ''}"] if gpus else []
    if not parts and comparable(ident, "model"):
        parts.append(comparable(ident, "model"))
    return " ".join(parts)[:120] or None


def run_config(ident: dict | None, label: str | None = None) -> tuple[tuple, str | None]:
    """(what makes a run's serving point one configuration, its name): the server identity where
    it says anything (runs of one identity are repeats of one configuration), else the run's label
    (the user's name for a configuration), else one unnamed configuration (None: repeats)."""
    key = server_key(ident)
    if any(v is not None for v in key[0]) or key[1] != ((), ()):
        return ("server", key), config_name(ident) or identity_text(ident)[:120]
    return ("label", label or None), label or None


def _launch_key(ident: dict | None):
    launch = (ident or {}).get("launch") or {}
    command = [c for c in launch.get("command") or [] if not re.fullmatch(r"\d{2,5}", str(c))]  # ports aside
    return (tuple(command), tuple(sorted((launch.get("env") or {}).items())))


def identity_text(ident: dict | None) -> str:
    """One line: 'vllm 0.11.0; model llama-3.1-8b-instruct; precision bf16; quantisation none; TP 8;
    GPUs 8 (declared)'; fields nobody said are left out, 'unknown' when nothing is known."""
    if not ident:
        return "server not identified (a run from before identities were recorded)"
    parts = []
    engine = ident.get("engine")
    if engine:
        parts.append(f"{engine} {ident.get('engine_version') or ''}".strip())
    for f in ("model", "model_revision", "dtype", "quantization", "kv_cache_dtype", "tensor_parallel",
              "pipeline_parallel", "data_parallel", "expert_parallel", "max_model_len", "gpus"):
        v = ident.get(f)
        if v in (None, ""):
            continue
        shown = os.path.basename(str(v).rstrip("/")) if f == "model" else v
        src = (ident.get("sources") or {}).get(f)
        parts.append(f"{FIELD_WORDS[f]} {shown}" + (f" ({src})" if src in SAID_BY_USER else ""))
    launched = " (launched by gpuparity)" if ident.get("launch") else ""
    return ("; ".join(parts) or "nothing said: declare it with --set engine=... --set server_flags=...") + launched
