#!/usr/bin/env bash
# Fresh machine -> installed gpuparity with test tools, system packages for the real-part tests, tests run.
set -euo pipefail
cd "$(dirname "$0")/.."
GPUPARITY_EXTRAS=llm,serving,postgres,nvidia,dev bash scripts/setup.sh
bash scripts/system-deps.sh
# shellcheck disable=SC1091
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
ruff check src tests bench
lint-imports --no-cache --no-logo   # the layers (pyproject.toml [tool.importlinter]): none imports upward, no loops
python -m pytest -q -p no:cacheprovider "$@"
