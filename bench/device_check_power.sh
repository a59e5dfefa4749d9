#!/usr/bin/env bash
# Power telemetry on a lent GPU (run by bench/device_check.sh, or alone from the repo root):
# bf16 GEMM for 8 s -> mean power, J per TFLOP, integrated energy vs the hardware counter (PASS
# within 5%); then the telemetry the foundation run stored with each result, if that file exists.
set -uo pipefail
OUT=${OUT:-/tmp/gpuparity-device}
PY=${PY:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
"$PY" bench/power_check.py --seconds 8
echo "power_check exit status: $?"
[ -f "$OUT/foundation.json" ] || exit 0
"$PY" - "$OUT/foundation.json" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1]))
print(f"telemetry: {doc['fingerprint'].get('telemetry')}")
print(f"{'workload':8s} {'dtype':5s} {'valid':5s} {'W':>6s} {'J/TFLOP':>8s} {'ctr%':>6s} {'n':>4s} {'thr':>5s} reasons")
for r in doc["results"]:
    t = r.get("telemetry") or {}
    num = lambda k, f: format(t[k], f) if isinstance(t.get(k), (int, float)) else "-"
    ctr = format(100 * t["counter_agreement"], "+.1f") if isinstance(t.get("counter_agreement"), float) else "-"
    print(f"{r['workload']:8s} {r.get('dtype') or '':5s} {str(t.get('valid')):5s} {num('mean_power_w', '6.0f')} "
          f"{num('j_per_tflop', '8.3f')} {ctr:>6s} {num('n_samples', '4d')} {num('throttled_share', '5.2f')} "
          f"{'; '.join(t.get('reasons') or [])[:80]}")
PYEOF
