"""gpuparity's serving client against guidellm on the same server, same run: the demo server
around SmolLM2 (`/v1/completions`, streaming), both clients in interleaved rounds (A B, then B A,
...) with matched settings: the same prompt and output lengths, ignore_eos on (guidellm's rule
for a fixed output), no warm-up (guidellm has none), a closed loop of c clients, the same number
of requests. Per figure and concurrency: gpuparity / guidellm of the round means with its 95%
interval from the spread over rounds of both tools (Welch's t on the rounds' logs: the interval of
a ratio of means, not one round's spread), each client's round-to-round spread (coefficient of
variation), and the judgement in the comparison's own terms (comparison/verdict.py, band +-5%):
"agree" (the interval inside the band), "differ" (outside it), "undecided" (more rounds needed).
Also each client's CPU time per request (its process tree): on a small machine the client's own
load slows a CPU-bound server, which is what a gap at c=1 comes from (--pin puts the server on
CPU 0 and the clients on the others to take that out). Figures compared by matched definitions: TTFT (mean; gpuparity's from the send
as vLLM's, and TTFT@hdr from the request's headers after any connect, where guidellm's clock
starts; both against guidellm's TTFT), TPOT vLLM's = guidellm's
ITL (mean; with a fixed output length guidellm's token weighting changes nothing), E2EL
(request latency, mean), output tokens/s (tokens over the benchmark's duration).

    python bench/serving_vs_guidellm.py [--guidellm PATH] [--rounds 3] [--requests 8]
        [--concurrency 1,4] [--input-len 128] [--output-len 32] [--url http://HOST:PORT/v1] [--pin]

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

FIGURES = ("TTFT ms", "TTFT@hdr ms", "TPOT ms", "E2EL ms", "output tok/s", "client CPU s/req")
TOLERANCE = 0.05


def pinned(cmd: list[str], cpus: str | None) -> list[str]:
    """cmd run on the CPUs listed (taskset), where --pin asks for it."""
    return (["taskset", "-c", cpus] + cmd) if cpus and shutil.which("taskset") else cmd


def children_cpu_s() -> float:
    """CPU seconds of every child process waited for so far (a client's whole tree, once it exits)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def start_server(cpus: str | None = None) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    proc = subprocess.Popen(pinned([sys.executable, "-m", "gpuparity.demo.serving_server", "--port", "0"], cpus),
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
    cpu = children_cpu_s()
    p = subprocess.run(pinned(cmd, args.client_cpus), capture_output=True, text=True, timeout=3600)
    cpu = children_cpu_s() - cpu
    if not os.path.exists(out):
        raise SystemExit(f"gpuparity failed: {p.stderr[-2000:]}")
    (r,) = json.load(open(out))["results"]
    s = r["info"]["serving"]
    return {"TTFT ms": s["ttft_ms"]["mean"], "TTFT@hdr ms": (s.get("ttft_from_headers_ms") or {}).get("mean"),
            "TPOT ms": s["tpot_ms"]["mean"], "E2EL ms": s["e2el_ms"]["mean"],
            "output tok/s": s["output_throughput"], "tokens": s["total_output_tokens"],
            "client CPU s/req": cpu / args.requests}


def theirs(url: str, c: int, args, tmp: str, tokenizer: str) -> dict:
    out = os.path.join(tmp, f"gl-{c}-{time.monotonic_ns()}.json")
    target = url.rsplit("/v1", 1)[0]
    profile = "kind=synchronous" if c == 1 else f"kind=concurrent,streams={c}"
    cmd = [args.guidellm, "run", "--backend", f"kind=openai_http,target={target},model=smollm2,"
           "request_format=/v1/completions", "--profile", profile,
           "--data", f"kind=synthetic_text,prompt_tokens={args.input_len},output_tokens={args.output_len}",
           "--tokenizer", f"kind=hf_auto,model={tokenizer}", "--constraint", f"kind=max_requests,count={args.requests}",
           "--output", f"kind=json,path={out}", "--disable-console"]
    cpu = children_cpu_s()
    p = subprocess.run(pinned(cmd, args.client_cpus), capture_output=True, text=True, timeout=3600,
                       env=dict(os.environ, HF_HUB_OFFLINE="1"))
    cpu = children_cpu_s() - cpu
    if not os.path.exists(out):
        raise SystemExit(f"guidellm failed: {(p.stdout + p.stderr)[-2000:]}")
    m = json.load(open(out))["benchmarks"][0]["metrics"]

    def mean(name):
        return m[name]["successful"]["mean"]

    return {"TTFT ms": mean("time_to_first_token_ms"), "TTFT@hdr ms": mean("time_to_first_token_ms"),
            "TPOT ms": mean("inter_token_latency_ms"),
            "E2EL ms": 1e3 * mean("request_latency"), "output tok/s": mean("output_tokens_per_second"),
            "tokens": m["output_token_count"]["successful"]["total_sum"], "client CPU s/req": cpu / args.requests}


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else float("nan")


def ratio_interval(xa: list[float], xb: list[float]) -> tuple[float, float, float]:
    """(ratio of the geometric means, 95% low, high) of a's rounds over b's: Welch's t on the logs,
    the spread over rounds of both tools (no interval with one round a side)."""
    from scipy import stats

    la, lb = [math.log(x) for x in xa], [math.log(x) for x in xb]
    d = statistics.mean(la) - statistics.mean(lb)
    if len(la) < 2 or len(lb) < 2:
        return math.exp(d), float("nan"), float("nan")
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    se = math.sqrt(va + vb)
    if se == 0:
        return math.exp(d), math.exp(d), math.exp(d)
    df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    t = stats.t.ppf(0.975, df)
    return math.exp(d), math.exp(d - t * se), math.exp(d + t * se)


def judgement(lo: float, hi: float) -> str:
    """agree / differ / undecided: the comparison's verdict on the interval (band +-5%)."""
    from gpuparity.comparison.verdict import verdict

    v = verdict(lo, hi, TOLERANCE)
    return {"parity": "agree", "faster": "differ", "slower": "differ"}.get(v, "undecided")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--guidellm", default=os.environ.get("GUIDELLM") or shutil.which("guidellm"))
    p.add_argument("--url", help="a running server's /v1 URL serving smollm2 (default: start the demo server)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=8)
    p.add_argument("--concurrency", default="1,4")
    p.add_argument("--input-len", type=int, default=128)
    p.add_argument("--output-len", type=int, default=32)
    p.add_argument("--pin", action="store_true", help="the demo server on CPU 0, both clients on the others "
                                                      "(taskset): the clients' own CPU load then cannot slow the server")
    args = p.parse_args()
    ncpu = os.cpu_count() or 1
    args.client_cpus = f"1-{ncpu - 1}" if args.pin and ncpu > 1 else None
    if not args.guidellm or not os.path.exists(args.guidellm):
        raise SystemExit("guidellm not found: pip install guidellm (in its own venv) and pass --guidellm PATH")
    from gpuparity.models import gguf

    tokenizer = str(gguf.prepare(gguf.smollm2_gguf()))
    proc, url = (None, args.url) if args.url else start_server("0" if args.pin else None)
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
    print(f"{'figure':<17}{'gpuparity':>11}{'guidellm':>11}{'ratio [95% CI over rounds]':>29}{'spread gp':>11}"
          f"{'spread gl':>11}  judged (band +-{100 * TOLERANCE:g}%)")
    for f in FIGURES:
        xa, xb = [r[f] for r in a], [r[f] for r in b]
        ratio, lo, hi = ratio_interval(xa, xb)
        judged = judgement(lo, hi) if f != "client CPU s/req" else "-"
        print(f"{f:<17}{statistics.mean(xa):>11.4g}{statistics.mean(xb):>11.4g}"
              f"{f'{ratio:.3f} [{lo:.3f}, {hi:.3f}]':>29}{100 * cv(xa):>10.1f}%{100 * cv(xb):>10.1f}%  {judged}")


if __name__ == "__main__":
    main()
