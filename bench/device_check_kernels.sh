#!/usr/bin/env bash
# Kernel-suite device check (to be merged into bench/device_check.sh).
# On one GPU: the standard kernel suite, then bf16 max-achievable GEMM against a bare torch.mm loop
# in the same run (target >= 0.99x) and copy bandwidth against the spec (H200: 4.8 TB/s, target >= 85%).
# Budget: about 6-8 minutes on an H200. Prints the figures; exits non-zero only if a step crashes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${OUT:-/tmp/gpuparity-kernels}
mkdir -p "$OUT_DIR"
PY=${PYTHON:-python}

echo "== standard kernel suite"
timeout "${SUITE_TIMEOUT_S:-420}" "$PY" -m gpuparity run gemm gemm_search memory attention moe conv \
    --suite "${SUITE:-standard}" --set budget_s="${SEARCH_BUDGET_S:-30}" --no-store --json "$OUT_DIR/kernels-standard.json"
echo "suite exit code: $?"

echo "== statuses and copy bandwidth"
"$PY" - "$OUT_DIR/kernels-standard.json" <<'PYEOF'
import json, sys
from collections import Counter
doc = json.load(open(sys.argv[1]))
print("run status:", doc["status"], "duration_s:", doc.get("duration_s"))
print("statuses:", dict(Counter((r["workload"], r["status"]) for r in doc["results"])))
for r in doc["results"]:
    if r["status"] != "ok":
        print(f"  {r['workload']} {r.get('dtype')} {r['params']}: {r['status']}: {r['reason']}")
for r in doc["results"]:
    if r["workload"] in ("gemm_search", "attention") and r["status"] == "ok":
        extra = r["info"].get("best_shape") or r["info"].get("backend")
        print(f"  {r['workload']} {r['dtype']}: {r['derived']['tflops']:.1f} TFLOP/s "
              f"({r['derived'].get('pct_peak', float('nan')):.1f}% of spec) {extra}")
copy = [r for r in doc["results"] if r["workload"] == "memory" and r["params"]["op"] == "copy" and r["status"] == "ok"]
if copy:
    d = copy[0]["derived"]
    print(f"copy bandwidth: {d['gbs']:.0f} GB/s = {d.get('pct_peak', float('nan')):.1f}% of spec (target >= 85%)")
else:
    print("copy bandwidth: no ok result")
PYEOF

echo "== bf16 max-achievable vs bare torch.mm (ratio last; target >= 0.99)"
timeout "${BARE_TIMEOUT_S:-150}" "$PY" bench/gemm_vs_bare.py --dtype bf16 --budget "${SEARCH_BUDGET_S:-30}"
