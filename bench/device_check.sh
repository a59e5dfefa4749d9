#!/usr/bin/env bash
# The GPU paths in one short prepared run on a lent GPU machine (run from the repo root there):
#   bash bench/device_check.sh            # ~4-5 minutes on an H200; a short table last
#   FULL=1 bash bench/device_check.sh     # then the longer parts (standard kernel suite, models, power)
# Logs and device_check.json under $OUT. The device image has torch, transformers, numpy, pandas,
# rich, typer and nvidia-ml-py; gpuparity runs from src/ (nothing is installed). The card's settings
# are left alone: nothing here changes clocks, power limits or modes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuparity-device}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 GPUPARITY_DB="$OUT/device.db" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}

# The card as found, before and after (clocks, temperature, power, throttle reasons).
state() {
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit,clocks_event_reasons.active \
    --format=csv,noheader 2>/dev/null | sed "s/^/$1: /"
}
state before | tee "$OUT/state.txt"
timeout "${CHECK_TIMEOUT_S:-420}" "$PY" bench/device_check.py --out "$OUT" 2>&1 | tee "$OUT/device_check.log"
status=${PIPESTATUS[0]}
state after | tee -a "$OUT/state.txt"

if [ "${FULL:-0}" = 1 ]; then
  for part in bench/device_check_*.sh; do
    echo; echo "=== $part ==="
    OUT="$OUT" PY="$PY" bash "$part" 2>&1 | tail -40
  done
fi
echo "device_check.py exit status: $status"
exit "$status"
