"""Servers on loopback for the serving tests: the project's own (SmolLM2, or fault routes only)
and `transformers serve` (a real third-party server) on the same SmolLM2 weights, plus a way
to run a serving point in this process."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time

import httpx

# One compute thread per server: two servers and the client share a 2-core CI machine, and
# oversubscribed OpenMP threads spin against each other.
SERVER_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(proc: subprocess.Popen, base: str, log_path, limit_s: float = 240) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited {proc.returncode}: {open(log_path).read()[-3000:]}")
        try:
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    stop(proc)
    raise RuntimeError(f"server not healthy after {limit_s} s: {open(log_path).read()[-3000:]}")


def start_own(tmp_path, name: str, *args: str) -> tuple[subprocess.Popen, str]:
    """python -m gpuparity.demo.serving_server ARGS on a free port; returns (process, base URL of /v1)."""
    log = tmp_path / f"{name}.err"
    proc = subprocess.Popen([sys.executable, "-m", "gpuparity.demo.serving_server", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=open(log, "w"), text=True,
                            env=dict(os.environ, **SERVER_ENV))
    line = proc.stdout.readline()  # "serving MODEL at URL" once the model is loaded
    if not line.startswith("serving"):
        stop(proc)
        raise RuntimeError(f"server did not start: {line!r} {log.read_text()[-2000:]}")
    return proc, line.split()[-1]


def start_transformers(tmp_path, model_dir: str) -> tuple[subprocess.Popen, str]:
    """`transformers serve MODEL_DIR` (FastAPI + uvicorn) on a free loopback port, on the CPU."""
    port = free_port()
    log = tmp_path / "transformers-serve.err"
    exe = os.path.join(os.path.dirname(sys.executable), "transformers")
    proc = subprocess.Popen([exe, "serve", model_dir, "--host", "127.0.0.1", "--port", str(port), "--device", "cpu",
                             "--log-level", "warning"],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            env=dict(os.environ, **SERVER_ENV))
    base = f"http://127.0.0.1:{port}"
    wait_healthy(proc, base, log)
    return proc, base + "/v1"


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait(timeout=30)


def context(**options):
    """A Context as `gpuparity run` builds one, without telemetry (the server is a CPU process), and
    without the accuracy eval unless asked (accuracy=N): these points test the client."""
    from gpuparity.workloads.base import Context

    options.setdefault("accuracy", 0)
    ctx = Context(fingerprint={"backend": "cpu"}, device="cpu", options={k: str(v) for k, v in options.items()})
    ctx.said = []
    ctx.progress = ctx.said.append
    return ctx


def run_points(**options) -> list[dict]:
    """Every point of a serving sweep, measured in this process (one trial each)."""
    from gpuparity.workloads.serving.workload import Serving

    w = Serving()
    ctx = context(**options)
    return [w.merge_trials([w.execute(p, ctx)], ctx) for p in w.cases("quick", ctx)], ctx


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
