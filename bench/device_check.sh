#!/usr/bin/env bash
# Every GPU path in one prepared run on a borrowed GPU machine (run from the repo root there):
#   bash bench/device_check.sh            # at most ~6 minutes on one H100 / H200; a short table last
#   FULL=1 bash bench/device_check.sh     # + max-achievable GEMM vs a bare loop, the quick kernel suite (~9 min)
#   PYTHON=/path/to/python STEPS="fp8,tf32 proof" bash bench/device_check.sh
# Each step runs in its own process with its own timeout (bench/device_check.py); $OUT/device_check.json
# is rewritten after every step. On a CPU every row runs and the GPU-only ones say SKIP with the reason.
# Wheels the device image lacks (bench/device_wheels.sh puts them in .device-wheels/, which a caller
# carries) are installed into a private folder first. Nothing here changes clocks, power limits or modes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuparity-device}
mkdir -p "$OUT"
PY=${PYTHON:-${PY:-python3}}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 OUT
export GPUPARITY_DB="$OUT/device.db" GPUPARITY_SPOOL="$OUT/spool"
if compgen -G ".device-wheels/*.whl" >/dev/null; then
  SITE=${DEVICE_SITE:-/tmp/gpuparity-device-site}
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .device-wheels/*.whl \
    && export PYTHONPATH="$PYTHONPATH:$SITE"
fi

# The card as found, before and after (clocks, temperature, power, throttle reasons).
state() {
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit,clocks_event_reasons.active \
    --format=csv,noheader 2>/dev/null | sed "s/^/$1: /"
  command -v amd-smi >/dev/null && amd-smi metric --power --clock --temperature 2>/dev/null | head -20 | sed "s/^/$1: /"
  return 0
}
state before | tee "$OUT/state.txt"
"$PY" bench/device_check.py --out "$OUT" 2>&1 | tee "$OUT/device_check.log"
status=${PIPESTATUS[0]}
state after | tee -a "$OUT/state.txt"
echo "device_check.py exit status: $status"
exit "$status"
