#!/usr/bin/env bash
# The GPU paths in one short script, for a lent GPU machine (run from the repo root there):
#   bash bench/device_check.sh            # prints a short table last; logs and run files under $OUT
# The device image has torch, typer, rich, numpy, pandas, nvidia-ml-py; gpuparity runs from src/.
set -uo pipefail
OUT=${OUT:-/tmp/gpuparity-device}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 GPUPARITY_DB="$OUT/device.db"
PY=${PYTHON:-python3}
gp() { "$PY" -m gpuparity "$@"; }

section() { echo; echo "=== $* ==="; }

section "info"
gp info --json > "$OUT/info.json" && gp info | tail -25

section "foundation: GEMM bf16/fp16/tf32/fp32 at 8192^3, copy bandwidth"
gp run gemm memory --suite standard --dtype bf16,fp16,tf32,fp32 --json "$OUT/foundation.json" > "$OUT/foundation.log" 2>&1
tail -20 "$OUT/foundation.log"

for part in bench/device_check_*.sh; do
  [ -f "$part" ] || continue
  section "$part"
  OUT="$OUT" PY="$PY" bash "$part" 2>&1 | tail -40
done

section "summary"
"$PY" - "$OUT/foundation.json" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1]))
print(f"{'workload':10s} {'params':28s} {'dtype':6s} {'value':>12s} {'unit':9s} {'%peak':>6s} {'CI +-%':>7s} status")
for r in doc["results"]:
    m, s, d = r.get("metric") or {}, r.get("summary") or {}, r.get("derived") or {}
    ci = 100 * (s["ci_high"] - s["ci_low"]) / 2 / s["median"] if s.get("median") else float("nan")
    p = " ".join(f"{k}={v}" for k, v in r["params"].items() if k != "dtype")[:28]
    print(f"{r['workload']:10s} {p:28s} {r.get('dtype') or '':6s} {m.get('value', float('nan')):12.1f} "
          f"{m.get('unit', ''):9s} {d.get('pct_peak', float('nan')):6.1f} {ci:7.2f} {r['status']}")
print("targets on an H200: gemm bf16 >= 780 TFLOP/s, memory copy >= 4000 GB/s")
PYEOF
