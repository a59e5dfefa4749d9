#!/usr/bin/env bash
# Wheels the lent GPU machine's image lacks, for bench/device_check.sh to install there (run here,
# where pip reaches the index; nothing is committed: .device-wheels/ is ignored):
#   bash bench/device_wheels.sh            # then carry .device-wheels with the device run
# The image (Python 3.12, x86-64; see /work/.library/device/KINDS.md) has torch, transformers,
# numpy, pandas, scipy, rich, typer, jinja2, httpx, nvidia-ml-py; gpuparity also needs these. The
# versions are this project's tested ones; --no-deps: every dependency is named here.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${DEST:-.device-wheels}
PY=${PYTHON:-python3}
mkdir -p "$DEST"
WHEELS=(
  orjson==3.13.0 platformdirs==4.14.9 plotly==7.1.0 narwhals==2.29.0 gguf==0.19.0
  tree-sitter==0.26.1 tree-sitter-cuda==0.21.2 psycopg==3.3.9 psycopg-binary==3.3.9
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
)
PLATFORMS=()
for n in 17 24 27 28 31 34 35; do PLATFORMS+=(--platform "manylinux_2_${n}_x86_64"); done
PLATFORMS+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)
for w in "${WHEELS[@]}"; do
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${PLATFORMS[@]}" -d "$DEST" "$w"
done
ls -la "$DEST"
du -sh "$DEST"
