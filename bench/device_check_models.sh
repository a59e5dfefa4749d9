#!/usr/bin/env bash
# Model-level device check (to be merged into bench/device_check.sh).
# On one GPU: synthetic Llama-3.1-8B (random weights, real shapes) decode tokens/s at batch 1 and 32
# in bf16, against the weight-streaming roofline (bf16 weight bytes / spec memory bandwidth), and the
# standard training step's tokens/s and MFU against the spec bf16 peak.
# Budget: about 3-5 minutes on an H200. Prints the figures; exits non-zero only if a step crashes.
# Needs transformers + accelerate (in the H200 image). On a CPU the 8B case is skipped with a reason.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${OUT:-/tmp/gpuparity-models}
mkdir -p "$OUT_DIR"
PY=${PYTHON:-${PY:-python3}}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1

echo "== llm: synthetic:llama-3.1-8b bf16, batch 1 and 32, 512 in / 64 out"
timeout "${LLM_TIMEOUT_S:-300}" "$PY" -m gpuparity run llm --suite standard --set model=synthetic:llama-3.1-8b \
    --set batch=1,32 --set input_len=512 --set output_len="${OUTPUT_LEN:-64}" --dtype bf16 \
    --no-store --json "$OUT_DIR/models-llm.json"
echo "llm exit code: $?"

echo "== training: standard Llama-style step (bf16 autocast, AdamW)"
timeout "${TRAIN_TIMEOUT_S:-180}" "$PY" -m gpuparity run training --suite standard --no-store \
    --json "$OUT_DIR/models-training.json"
echo "training exit code: $?"

echo "== figures"
"$PY" - "$OUT_DIR/models-llm.json" "$OUT_DIR/models-training.json" <<'PYEOF'
import json, os, sys
for path in sys.argv[1:]:
    if not os.path.exists(path):
        print(f"{path}: missing (the step crashed or timed out)")
        continue
    doc = json.load(open(path))
    spec = doc["fingerprint"].get("spec") or {}
    bw = (spec.get("memory_bw_tbs") or 0) * 1e12
    for r in doc["results"]:
        p, d, i = r["params"], r.get("derived") or {}, r.get("info") or {}
        if r["status"] != "ok":
            print(f"{r['workload']} {p}: {r['status']}: {r['reason']}")
            continue
        if r["workload"] == "llm":
            weights = i["params"] * 2  # bf16 bytes streamed per decode step
            roof = bw / weights * p["batch"] if bw else float("nan")
            print(f"llm batch={p['batch']}: decode {d['decode_tokens_per_s']:.1f} tok/s "
                  f"({100 * d['decode_tokens_per_s'] / roof:.1f}% of the {roof:.0f} tok/s weight-streaming roofline), "
                  f"prefill {d['prefill_tokens_per_s']:.0f} tok/s, TTFT {1e3 * d['ttft_s']:.1f} ms, "
                  f"TPOT {1e3 * d['tpot_s']:.2f} ms, load {i.get('load_s')} s, greedy {i.get('greedy_output', '')[:40]!r}")
        else:
            print(f"training {p}: {d['tokens_per_s']:.0f} tok/s, {d.get('tflops', 0):.1f} TFLOP/s, "
                  f"MFU {100 * d.get('mfu', float('nan')):.1f}% of {d.get('peak', {}).get('value')} TFLOP/s, "
                  f"memory high-water {d.get('memory_high_water_bytes', 0) / 2**30:.1f} GiB")
PYEOF
