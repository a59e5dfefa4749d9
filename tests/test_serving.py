"""Serving benchmark against a real OpenAI-compatible server on loopback (SmolLM2 behind
`python -m gpuparity.serving_server`), through the CLI as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import pytest


@pytest.fixture(scope="session")
def smollm2_dir():
    from gpuparity.models import gguf

    return gguf.prepare(gguf.smollm2_gguf())


def start_server(tmp_path, name: str) -> tuple[subprocess.Popen, str]:
    log = open(tmp_path / f"{name}.err", "w")
    proc = subprocess.Popen([sys.executable, "-m", "gpuparity.serving_server", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=log, text=True,
                            env=dict(os.environ, HF_HUB_OFFLINE="1"))
    line = proc.stdout.readline()  # "serving MODEL at URL" once the model is loaded
    if not line.startswith("serving"):
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r} {(tmp_path / f'{name}.err').read_text()[-2000:]}")
    return proc, line.split()[-1]


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server(tmp_path_factory, smollm2_dir):
    proc, url = start_server(tmp_path_factory.mktemp("server"), "shared")
    yield url
    stop(proc)


SMALL = ["--set", "input_len=8", "--set", "output_len=4"]


def test_sweep_1_4_16_is_stored_and_shown(cli, tmp_db, tmp_path, server):
    out = tmp_path / "run.json"
    p = cli("run", "serving", "--set", f"url={server}", "--set", "concurrency=1,4,16", "--set", "num_prompts=16",
            "--set", "gpus=2", *SMALL, "--json", str(out))
    assert p.returncode == 0, p.stderr
    results = json.loads(out.read_text())["results"]
    assert [r["params"]["concurrency"] for r in results] == [1, 4, 16]
    for r in results:
        assert r["status"] == "ok", r["reason"]
        assert r["params"]["model"] == "smollm2"  # discovered from /v1/models
        s = r["info"]["serving"]
        assert s["requests"] == s["completed"] == 16 and s["errors"] == s["timeouts"] == 0
        assert s["mean_output_tokens"] == 4 and not s["prompt_tokens_estimated"]
        assert s["ttft_p50_s"] <= s["ttft_p99_s"] and s["tpot_p50_s"] > 0 and s["itl_p50_s"] > 0
        assert s["interactivity"] > 0
        assert s["total_throughput_per_gpu"] > s["throughput_per_gpu"] > 0
        assert r["metric"]["value"] == pytest.approx(s["throughput_per_gpu"])
        assert r["derived"]["tokens_per_s"] == pytest.approx(2 * s["throughput_per_gpu"])  # gpus=2
        assert len(r["metric"]["samples"]) == 16
        assert sum(r["metric"]["samples"]) / 16 == pytest.approx(r["metric"]["value"])
        assert r["metric"]["ci_low"] <= r["metric"]["value"] <= r["metric"]["ci_high"]
        assert r["info"]["curve_key"] == "smollm2 in=8 out=4 completions"
    assert "table" not in results[0]["info"]
    assert [row[0] for row in results[-1]["info"]["table"]["rows"]] == ["c=1", "c=4", "c=16"]
    shown = cli("show")
    assert shown.returncode == 0
    assert "smollm2 in=8 out=4 completions" in shown.stdout
    for load in ("c=1", "c=4", "c=16"):
        assert load in shown.stdout


def test_rate_mode_chat_and_goodput(cli, tmp_db, tmp_path, server):
    out = tmp_path / "run.json"
    p = cli("run", "serving", "--set", f"url={server}", "--set", "model=smollm2", "--set", "endpoint=chat",
            "--set", "request_rate=inf,20", "--set", "num_prompts=4", "--set", "slo_ttft_ms=3600000",
            "--set", "slo_tpot_ms=0.001", *SMALL, "--no-store", "--json", str(out))
    assert p.returncode == 0, p.stderr
    results = json.loads(out.read_text())["results"]
    assert [r["params"]["request_rate"] for r in results] == ["inf", 20.0]
    for r in results:
        assert r["status"] == "ok", r["reason"]
        good = r["info"]["serving"]["goodput"]
        assert good["fraction"] == 0.0 and good["requests_per_s"] == 0.0  # nobody decodes in 1 us/token


def test_server_errors_are_counted_not_dropped(cli, tmp_db, tmp_path, server):
    out = tmp_path / "run.json"
    p = cli("run", "serving", "--set", f"url={server}", "--set", "concurrency=2", "--set", "num_prompts=3",
            "--set", "output_len=999999", "--no-store", "--json", str(out))  # over the server's max_tokens
    assert p.returncode == 0, p.stderr
    (r,) = json.loads(out.read_text())["results"]
    assert r["status"] == "failed" and "HTTP 400" in r["reason"]
    assert r["info"]["serving"]["errors"] == r["info"]["serving"]["requests"] == 3


def test_killed_server_mid_sweep_counts_errors(cli, tmp_db, tmp_path, smollm2_dir):
    proc, url = start_server(tmp_path, "killed")
    env = dict(os.environ, COLUMNS="200")
    out = tmp_path / "run.json"
    run = subprocess.Popen([sys.executable, "-m", "gpuparity", "run", "serving", "--set", f"url={url}",
                            "--set", "concurrency=1,4,16", "--set", "num_prompts=40", *SMALL,
                            "--json", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 300
        while time.time() < deadline:  # kill once the sweep is under way
            if httpx.get(url.rsplit("/v1", 1)[0] + "/health", timeout=30).json()["completed"] >= 3:
                break
            time.sleep(0.2)
        stop(proc)
        stdout, stderr = run.communicate(timeout=300)
    finally:
        stop(proc)
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, stderr
    results = json.loads(out.read_text())["results"]
    assert len(results) == 3
    stats = [r["info"]["serving"] for r in results]
    assert all(s["requests"] == 40 for s in stats)  # every request accounted for, none dropped
    assert sum(s["errors"] + s["timeouts"] for s in stats) > 0
    assert results[0]["info"]["serving"]["completed"] >= 3
    last = results[-1]
    assert last["status"] == "failed" and "all 40 requests failed" in last["reason"]
    assert cli("show").returncode == 0


def test_serving_without_url_is_a_user_error(cli, tmp_db):
    p = cli("run", "serving", "--no-store")
    assert p.returncode == 2 and "--set url=" in p.stderr
