"""gpuparity's serving client against guidellm on the same server, same run: the demo server
around SmolLM2 (`/v1/completions`, streaming), both clients in interleaved rounds (A B, then B A,
...) with matched settings: the same prompt and output lengths, ignore_eos on (guidellm's rule
for a fixed output), no warm-up (guidellm has none), a closed loop of c clients, the same number
of requests. Per figure and concurrency: gpuparity / guidellm of the round means, each client's
round-to-round spread (coefficient of variation of its rounds), and whether the ratio is within
that spread or 5%. Figures compared by matched definitions: TTFT (mean; gpuparity's from the send
as vLLM's, and TTFT@hdr from the request's headers after any connect, where guidellm's clock
starts; both against guidellm's TTFT), TPOT vLLM's = guidellm's
ITL (mean; with a fixed output length guidellm's token weighting changes nothing), E2EL
(request latency, mean), output tokens/s (tokens over the benchmark's duration).

    python bench/serving_vs_guidellm.py [--guidellm PATH] [--rounds 3] [--requests 8]
        [--concurrency 1,4] [--input-len 128] [--output-len 32] [--url http://HOST:PORT/v1]

guidellm is not a dependency: install it in a separate venv (`pip install guidellm`) and pass its
executable (default: $GUIDELLM, else `guidellm` on PATH). Without --url the demo server is started
here (one compute thread). On a loaded machine the rounds' spread is wide; interleaving keeps the
load from favouring either client.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

FIGURES = ("TTFT ms", "TTFT@hdr ms", "TPOT ms", "E2EL ms", "output tok/s")


def start_server() -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "gpuparity.demo.serving_server", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    line = proc.stdout.readline()
    if not line.startswith("serving"):
        proc.kill()
        raise SystemExit(f"the demo server did not start: {line!r}")
    return proc, line.split()[-1]


def ours(url: str, c: int, args, tmp: str) -> dict:
    out = os.path.join(tmp, f"gp-{c}-{time.monotonic_ns()}.json")
    cmd = [sys.executable, "-m", "gpuparity", "run", "serving", "--set", f"url={url}", "--set", f"concurrency={c}",
           "--set", f"num_prompts={args.requests}", "--set", f"input_len={args.input_len}",
           "--set", f"output_len={args.output_len}", "--set", "ignore_eos=true", "--set", "warmup=0",
           "--no-store", "-f", "json", "-o", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if not os.path.exists(out):
        raise SystemExit(f"gpuparity failed: {p.stderr[-2000:]}")
    (r,) = json.load(open(out))["results"]
    s = r["info"]["serving"]
    return {"TTFT ms": s["ttft_ms"]["mean"], "TTFT@hdr ms": (s.get("ttft_from_headers_ms") or {}).get("mean"),
            "TPOT ms": s["tpot_ms"]["mean"], "E2EL ms": s["e2el_ms"]["mean"],
            "output tok/s": s["output_throughput"], "tokens": s["total_output_tokens"]}


def theirs(url: str, c: int, args, tmp: str, tokenizer: str) -> dict:
    out = os.path.join(tmp, f"gl-{c}-{time.monotonic_ns()}.json")
    target = url.rsplit("/v1", 1)[0]
    profile = "kind=synchronous" if c == 1 else f"kind=concurrent,streams={c}"
    cmd = [args.guidellm, "run", "--backend", f"kind=openai_http,target={target},model=smollm2,"
           "request_format=/v1/completions", "--profile", profile,
           "--data", f"kind=synthetic_text,prompt_tokens={args.input_len},output_tokens={args.output_len}",
           "--tokenizer", f"kind=hf_auto,model={tokenizer}", "--constraint", f"kind=max_requests,count={args.requests}",
           "--output", f"kind=json,path={out}", "--disable-console"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if not os.path.exists(out):
        raise SystemExit(f"guidellm failed: {(p.stdout + p.stderr)[-2000:]}")
    m = json.load(open(out))["benchmarks"][0]["metrics"]

    def mean(name):
        return m[name]["successful"]["mean"]

    return {"TTFT ms": mean("time_to_first_token_ms"), "TTFT@hdr ms": mean("time_to_first_token_ms"),
            "TPOT ms": mean("inter_token_latency_ms"),
            "E2EL ms": 1e3 * mean("request_latency"), "output tok/s": mean("output_tokens_per_second"),
            "tokens": m["output_token_count"]["successful"]["total_sum"]}


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--guidellm", default=os.environ.get("GUIDELLM") or shutil.which("guidellm"))
    p.add_argument("--url", help="a running server's /v1 URL serving smollm2 (default: start the demo server)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=8)
    p.add_argument("--concurrency", default="1,4")
    p.add_argument("--input-len", type=int, default=128)
    p.add_argument("--output-len", type=int, default=32)
    args = p.parse_args()
    if not args.guidellm or not os.path.exists(args.guidellm):
        raise SystemExit("guidellm not found: pip install guidellm (in its own venv) and pass --guidellm PATH")
    from gpuparity.models import gguf

    tokenizer = str(gguf.prepare(gguf.smollm2_gguf()))
    proc, url = (None, args.url) if args.url else start_server()
    load = os.getloadavg()[0]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for c in [int(x) for x in args.concurrency.split(",")]:
                a, b = [], []
                for i in range(args.rounds):     # A B, B A, ...: drift and load favour neither
                    order = (("gpuparity", ours), ("guidellm", theirs)) if i % 2 == 0 else (
                        ("guidellm", theirs), ("gpuparity", ours))
                    for name, fn in order:
                        got = fn(url, c, args, tmp) if fn is ours else fn(url, c, args, tmp, tokenizer)
                        (a if name == "gpuparity" else b).append(got)
                report(c, a, b)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"load average at start {load:.1f} on {os.cpu_count()} CPUs (other work on the machine widens the spread)")


def report(c: int, a: list[dict], b: list[dict]) -> None:
    print(f"\nconcurrency {c}: {len(a)} rounds each; output tokens per round: gpuparity "
          f"{[int(x['tokens']) for x in a]}, guidellm {[int(x['tokens']) for x in b]}")
    print(f"{'figure':<14}{'gpuparity':>12}{'guidellm':>12}{'ratio':>8}{'spread gp':>11}{'spread gl':>11}  within")
    for f in FIGURES:
        xa, xb = [r[f] for r in a], [r[f] for r in b]
        ratio = statistics.mean(xa) / statistics.mean(xb)
        spread = math.hypot(cv(xa), cv(xb)) if len(a) > 1 else 0.0
        ok = abs(math.log(ratio)) <= max(spread, 0.05)
        print(f"{f:<14}{statistics.mean(xa):>12.4g}{statistics.mean(xb):>12.4g}{ratio:>8.3f}"
              f"{100 * cv(xa):>10.1f}%{100 * cv(xb):>10.1f}%  {'yes' if ok else 'NO'}")


if __name__ == "__main__":
    main()
