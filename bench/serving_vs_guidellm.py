"""gpuparity's serving client against guidellm on the same server, same run: the demo server
around SmolLM2 (`/v1/completions`, streaming), both clients in interleaved rounds (A B, then B A,
...) with matched settings: the same prompt and output lengths, ignore_eos on (guidellm's rule
for a fixed output), no warm-up (guidellm has none), a closed loop of c clients, the same number
of requests. Per figure and concurrency: gpuparity / guidellm of the round means with its 95%
interval from the spread over rounds of both tools (Welch's t on the rounds' logs: the interval of
a ratio of means, not one round's spread), each client's round-to-round spread (coefficient of
variation), and the judgement in the comparison's own terms (comparison/verdict.py, band +-5%):
"agree" (the interval inside the band), "differ" (outside it), "undecided" (more rounds needed).
Also, sampled while the server was busy: the server's CPU seconds per request (the work it did:
the same for both clients when they asked for the same work), each client's CPU seconds per
request (its process tree) and the share of that time the server got a CPU (1.0: it never
waited). Where the server's CPU per request agrees but the latencies do not, the server waited
for a CPU (the machine's load, the client's own among it), not a clock that reads differently;
--pin puts the server on CPU 0 and the clients on the others. Figures compared by matched definitions: TTFT (mean; gpuparity's from the send
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

FIGURES = ("TTFT ms", "TTFT@hdr ms", "TPOT ms", "E2EL ms", "output tok/s", "server CPU s/req", "client CPU s/req",
           "server CPU share")
LOAD = ("client CPU s/req", "server CPU share")       # what each client cost the machine: no judgement
TOLERANCE = 0.05


def pinned(cmd: list[str], cpus: str | None) -> list[str]:
    """cmd run on the CPUs listed (taskset), where --pin asks for it."""
    return (["taskset", "-c", cpus] + cmd) if cpus and shutil.which("taskset") else cmd


def _tree_cpu(proc) -> float:
    """CPU seconds so far of a process and all its descendants (psutil; gone ones count 0)."""
    import psutil

    total = 0.0
    try:
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def measured(cmd: list[str], server_pid: int | None, requests: int, **kwargs) -> tuple[subprocess.CompletedProcess, dict]:
    """Run a client, sampling every 50 ms its process tree's CPU time and the server's: within the
    window the server was busy (its CPU rising), the client's CPU seconds per request and the share
    of that window the server got a CPU (1.0: it never waited for one). On a small machine a busy
    client slows a CPU-bound server: a lower share is the server waiting, not the client misreading."""
    import threading

    import psutil

    samples: list[tuple[float, float, float]] = []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    client = psutil.Process(proc.pid)
    server = psutil.Process(server_pid) if server_pid else None
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append((time.monotonic(), _tree_cpu(client), _tree_cpu(server) if server else 0.0))
            stop.wait(0.05)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    out, err = proc.communicate(timeout=3600)
    stop.set()
    thread.join()
    busy = [i for i in range(1, len(samples))
            if samples[i][2] - samples[i - 1][2] > 0.2 * (samples[i][0] - samples[i - 1][0])]
    load = dict.fromkeys(LOAD, float("nan"))
    if busy:
        a, b = samples[busy[0] - 1], samples[busy[-1]]
        wall = b[0] - a[0]
        load = {"server CPU s/req": (b[2] - a[2]) / requests, "client CPU s/req": (b[1] - a[1]) / requests,
                "server CPU share": (b[2] - a[2]) / wall if wall else 0}
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), load


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
           # no accuracy eval: its problems would be the server's work too (guidellm asks none)
           "--set", "accuracy=0", "--no-store", "-f", "json", "-o", out]
    p, load = measured(pinned(cmd, args.client_cpus), args.server_pid, args.requests)
    if not os.path.exists(out):
        raise SystemExit(f"gpuparity failed: {p.stderr[-2000:]}")
    (r,) = json.load(open(out))["results"]
    s = r["info"]["serving"]
    return {"TTFT ms": s["ttft_ms"]["mean"], "TTFT@hdr ms": (s.get("ttft_from_headers_ms") or {}).get("mean"),
            "TPOT ms": s["tpot_ms"]["mean"], "E2EL ms": s["e2el_ms"]["mean"],
            "output tok/s": s["output_throughput"], "tokens": s["total_output_tokens"], **load}


def theirs(url: str, c: int, args, tmp: str, tokenizer: str) -> dict:
    out = os.path.join(tmp, f"gl-{c}-{time.monotonic_ns()}.json")
    target = url.rsplit("/v1", 1)[0]
    profile = "kind=synchronous" if c == 1 else f"kind=concurrent,streams={c}"
    cmd = [args.guidellm, "run", "--backend", f"kind=openai_http,target={target},model=smollm2,"
           "request_format=/v1/completions", "--profile", profile,
           "--data", f"kind=synthetic_text,prompt_tokens={args.input_len},output_tokens={args.output_len}",
           "--tokenizer", f"kind=hf_auto,model={tokenizer}", "--constraint", f"kind=max_requests,count={args.requests}",
           "--output", f"kind=json,path={out}", "--disable-console"]
    p, load = measured(pinned(cmd, args.client_cpus), args.server_pid, args.requests,
                       env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if not os.path.exists(out):
        raise SystemExit(f"guidellm failed: {(p.stdout + p.stderr)[-2000:]}")
    m = json.load(open(out))["benchmarks"][0]["metrics"]

    def mean(name):
        return m[name]["successful"]["mean"]

    return {"TTFT ms": mean("time_to_first_token_ms"), "TTFT@hdr ms": mean("time_to_first_token_ms"),
            "TPOT ms": mean("inter_token_latency_ms"),
            "E2EL ms": 1e3 * mean("request_latency"), "output tok/s": mean("output_tokens_per_second"),
            "tokens": m["output_token_count"]["successful"]["total_sum"], **load}


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
    args.server_pid = proc.pid if proc is not None else None
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
        judged = judgement(lo, hi) if f not in LOAD else "-"
        print(f"{f:<17}{statistics.mean(xa):>11.4g}{statistics.mean(xb):>11.4g}"
              f"{f'{ratio:.3f} [{lo:.3f}, {hi:.3f}]':>29}{100 * cv(xa):>10.1f}%{100 * cv(xb):>10.1f}%  {judged}")


if __name__ == "__main__":
    main()
