"""Serving benchmark against the project's own OpenAI-compatible server (SmolLM2 behind
`python -m gpuparity.demo.serving_server`) on loopback, mostly through the CLI as a user runs it."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest
from conftest import run_cli
from serving_fixtures import run_points, start_own, stop


@pytest.fixture(scope="session")
def smollm2_dir():
    from gpuparity.models import gguf

    return gguf.prepare(gguf.smollm2_gguf())


@pytest.fixture(scope="module")
def server(tmp_path_factory, smollm2_dir):
    proc, url = start_own(tmp_path_factory.mktemp("server"), "shared")
    yield url
    stop(proc)


SMALL = ["--set", "input_len=8", "--set", "output_len=4", "--set", "accuracy=0"]   # the eval: test_serving_servers


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, server):
    """One stored sweep (concurrency 1,4) shared by the tests that read it."""
    tmp = tmp_path_factory.mktemp("sweep")
    env = {"GPUPARITY_DB": str(tmp / "store.db"), "GPUPARITY_SPOOL": str(tmp / "spool")}
    out = tmp / "run.json"
    p = run_cli("run", "serving", "--set", f"url={server}", "--set", "concurrency=1,4", "--set", "num_prompts=8",
                "--set", "gpus=2", "--set", "ignore_eos=true", "--set", "percentiles=50,90,99",
                "--set", "slo_ttft_ms=60000", "--set", "slo_tpot_ms=0.001", *SMALL, "--json", str(out), env=env)
    assert p.returncode == 0, p.stderr
    return {"env": env, "tmp": tmp, "results": json.loads(out.read_text())["results"]}


def test_sweep_stores_the_full_summary(sweep):
    results = sweep["results"]
    assert [r["params"]["concurrency"] for r in results] == [1, 4]
    for r in results:
        assert r["status"] == "ok", r["reason"]
        assert "model" not in r["params"] and "gpus" not in r["params"]   # the key is the workload, not the alias
        assert r["params"]["dataset"] == "random" and r["params"]["ignore_eos"] is True
        assert r["info"]["served_model"] == "smollm2" and r["info"]["models"][0]["id"] == "smollm2"
        assert "BaseHTTP" in r["info"]["server"]["server"]
        s = r["info"]["serving"]
        assert s["requests"] == s["completed"] == 8 and s["failed"] == s["errors"] == s["timeouts"] == 0
        assert s["total_output_tokens"] == 32 and s["mean_output_tokens"] == 4    # ignore_eos: all 4 tokens
        u = s["usage"]   # exact token prompts from the served model's tokenizer: both counts agree
        assert u["server_input_tokens"] == u["client_input_tokens"] == 64 and u["tokenizer"] == "smollm2"
        assert u["server_output_tokens"] == 32 and u["requests_with_server_usage"] == 8
        for lat in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"):
            d = s[lat]
            assert set(d) == {"mean", "median", "std", "p50", "p90", "p99"}
            assert 0 < d["p50"] <= d["p90"] <= d["p99"] and d["median"] == d["p50"]
        assert s["interactivity"] == pytest.approx(1000 / s["tpot_ms"]["median"])
        assert s["total_throughput_per_gpu"] > s["throughput_per_gpu"] > 0
        assert s["output_throughput"] == pytest.approx(2 * s["output_throughput_per_gpu"])
        assert s["goodput"]["slos"] == {"ttft_ms": 60000.0, "tpot_ms": 0.001}
        assert s["goodput"]["good_requests"] == 0        # nobody decodes at 1 us per token
        assert s["warmup"] == {"requests": 2, "completed": 2}
        assert len(s["trials"]) == 1
        m = r["metric"]
        assert m["value"] == pytest.approx(s["throughput_per_gpu"]) and m["unit"] == "tokens/s/GPU"
        assert m["log_se"] > 0 and m["ci_low"] < m["value"] < m["ci_high"]
        assert r["derived"]["tokens_per_s"] == pytest.approx(2 * m["value"])
        assert len(r["samples"]) == 8 and r["summary"]["of"] == "E2E latency (s)"
        assert r["info"]["curve_key"] == "random in=8 out=4 completions ignore_eos"
        assert len(r["info"]["requests"]) == 8
    assert results[0]["key"] != results[1]["key"]


def test_show_prints_the_vllm_style_summary(sweep):
    shown = run_cli("show", env=sweep["env"])
    assert shown.returncode == 0, shown.stderr
    for text in ("random in=8 out=4 completions ignore_eos c=1", "c=4", "Successful requests", "Failed requests",
                 "Benchmark duration (s)", "Request throughput (req/s)", "Output token throughput per GPU",
                 "Total token throughput", "Median TTFT (ms)", "P90 TPOT (ms)", "P99 ITL (ms)", "Std E2EL (ms)",
                 "Request goodput (req/s) [TTFT <= 60000 ms, TPOT <= 0.001 ms]", "server usage / client count"):
        assert text in shown.stdout, text


def recompute(rows: list[dict], gpus: int) -> dict:
    """Every stored figure, redone from the exported per-request records alone (numpy, no gpuparity)."""
    good = [r for r in rows if r["ok"]]
    duration = (max(r["end_us"] for r in rows) - min(r["start_us"] for r in rows)) / 1e6
    out_tok = sum(r["output_tokens"] for r in good)
    in_tok = sum(r["input_tokens"] for r in good)
    ttft = np.array([r["ttft_us"] for r in good]) / 1e3
    e2el = np.array([r["end_us"] - r["start_us"] for r in good]) / 1e3
    tpot = np.array([(e - t) / (r["output_tokens"] - 1) for e, t, r in zip(e2el, ttft, good, strict=True) if r["output_tokens"] > 1])
    itl = np.array([g for r in good for g in r["itl_us"]]) / 1e3
    figures = {"duration_s": duration, "completed": len(good), "request_throughput": len(good) / duration,
               "output_throughput": out_tok / duration, "output_throughput_per_gpu": out_tok / duration / gpus,
               "total_throughput_per_gpu": (in_tok + out_tok) / duration / gpus, "interactivity": 1000 / np.median(tpot)}
    for name, x in (("ttft_ms", ttft), ("tpot_ms", tpot), ("itl_ms", itl), ("e2el_ms", e2el)):
        figures[name] = {"mean": x.mean(), "median": np.median(x), "std": x.std(),
                         **{f"p{q}": np.percentile(x, q) for q in (50, 90, 99)}}
    return figures


def test_per_request_export_reproduces_every_statistic(sweep):
    reqs = sweep["tmp"] / "reqs.json"
    p = run_cli("export", "latest", "--requests", "-o", str(reqs), env=sweep["env"])
    assert p.returncode == 0, p.stderr
    rows = json.loads(reqs.read_text())
    assert len(rows) == 16 and {r["load"] for r in rows} == {"c=1", "c=4"}
    for r in sweep["results"]:
        mine = [x for x in rows if x["key"] == r["key"]]
        assert len(mine) == 8 and all(len(x["itl_us"]) == 3 for x in mine)
        s, again = r["info"]["serving"], recompute(mine, gpus=2)
        for name, value in again.items():
            if isinstance(value, dict):
                for k, v in value.items():
                    assert s[name][k] == pytest.approx(v, rel=1e-9), (name, k)
            else:
                assert s[name] == pytest.approx(value, rel=1e-9), name
        assert r["metric"]["value"] == pytest.approx(again["output_throughput_per_gpu"], rel=1e-9)
    table = sweep["tmp"] / "reqs.csv"
    assert run_cli("export", "latest", "--requests", "-o", str(table), env=sweep["env"]).returncode == 0
    with open(table) as fh:
        lines = list(csv.DictReader(fh))
    assert len(lines) == 16 and [int(v) for v in lines[0]["itl_us"].split()] == rows[0]["itl_us"]
    bad = run_cli("export", "latest", "--requests", "-o", str(sweep["tmp"] / "no" / "dir.csv"), env=sweep["env"])
    assert bad.returncode == 2 and "does not exist" in bad.stderr and "Traceback" not in bad.stderr


def test_input_len_sweep_runs_every_value_with_live_progress(server):
    results, ctx = run_points(url=server, concurrency="2", input_len="4,12", output_len="2", num_prompts=4,
                              warmup=0)
    assert [(r["params"]["input_len"], r["params"]["output_len"]) for r in results] == [(4, 2), (12, 2)]
    for r in results:
        s = r["info"]["serving"]
        assert r["status"] == "ok" and s["completed"] == 4
        assert s["usage"]["client_input_tokens"] == s["usage"]["server_input_tokens"] == 4 * r["params"]["input_len"]
    assert any("4/4 done, 0 failed" in t and "tok/s" in t and "ETA" in t for t in ctx.said)


def test_rate_mode_chat_prefix_and_sharegpt(server, tmp_path):
    results, _ = run_points(url=server, endpoint="chat", request_rate="inf,20", max_concurrency=2, num_prompts=3,
                            input_len=12, output_len=2, dataset="prefix", prefix_len=8, num_prefixes=1, warmup=0)
    assert [r["params"]["request_rate"] for r in results] == ["inf", 20.0]
    for r in results:
        assert r["status"] == "ok", r["reason"]
        assert r["params"]["prefix_len"] == 8 and r["params"]["max_concurrency"] == 2
        assert r["info"]["serving"]["peak_concurrency"] <= 2
        assert r["info"]["curve_key"] == "prefix in=12 out=2 prefix=8x1 chat rate cap=2"
    data = tmp_path / "share.json"
    data.write_text(json.dumps([{"conversations": [{"from": "human", "value": f"Tell me about the number {i}."},
                                                   {"from": "gpt", "value": " ".join(["It is a number."] * (1 + i % 3))}]}
                                for i in range(6)]))
    (r,), _ = run_points(url=server, dataset="sharegpt", dataset_path=str(data), concurrency="2", num_prompts=4,
                         warmup=0)
    assert r["status"] == "ok", r["reason"]
    assert r["params"]["dataset_file"] == "share.json" and len(r["params"]["dataset_sha"]) == 12
    assert "output_len" not in r["params"]           # max_tokens from each reply's length
    assert {x["max_tokens"] for x in r["info"]["requests"]} <= {5, 10, 15}


def test_trials_merge_into_one_point_with_fresh_prompts(server):
    from serving_fixtures import context

    from gpuparity.workloads.serving.workload import Serving, Settings

    w = Serving()
    ctx = context(url=server, concurrency="2", num_prompts=4, input_len=6, output_len=3, warmup=0)
    (params,) = w.cases("quick", ctx)
    settings = Settings.from_options(ctx.options)
    srv = w.server(settings)

    def prompts(trial: int) -> list:
        return [p.body for p in w.plan(params, settings, srv, trial).prompts]

    assert prompts(1) != prompts(2) and prompts(1) == prompts(1)   # fresh per trial, reproducible
    trials = [w.execute(params, ctx) for _ in range(3)]
    merged = w.merge_trials(trials, ctx)
    s = merged["info"]["serving"]
    assert merged["status"] == "ok" and merged["metric"]["trials"] == 3 and merged["metric"]["ci_basis"] == "trials"
    assert len(s["trials"]) == 3 and s["completed"] == 12 and len(merged["info"]["requests"]) == 12
    values = [t["info"]["serving"]["throughput_per_gpu"] for t in trials]
    assert s["throughput_per_gpu"] == pytest.approx(np.exp(np.mean(np.log(values))))
    assert merged["metric"]["value"] == pytest.approx(s["throughput_per_gpu"])
    assert {x["trial"] for x in merged["info"]["requests"]} == {1, 2, 3}
    assert "Rounds (fresh connections, interleaved)" in [row[0] for row in merged["info"]["table"]["rows"]]


def test_server_errors_are_counted_not_dropped(cli, tmp_db, tmp_path, server):
    out = tmp_path / "run.json"
    p = cli("run", "serving", "--set", f"url={server}", "--set", "accuracy=0", "--set", "concurrency=2", "--set", "num_prompts=3",
            "--set", "output_len=999999", "--set", "warmup=0", "--no-store", "--json", str(out))
    assert p.returncode != 0 or "failed" in p.stdout
    (r,) = json.loads(out.read_text())["results"]
    assert r["status"] == "failed" and "all 3 requests failed" in r["reason"] and "HTTP 400" in r["reason"]
    assert r["info"]["serving"]["errors"] == r["info"]["serving"]["requests"] == 3


def test_killed_server_mid_sweep_counts_errors(cli, tmp_db, tmp_path, smollm2_dir):
    proc, url = start_own(tmp_path, "killed")
    env = dict(os.environ, COLUMNS="200")
    out = tmp_path / "run.json"
    run = subprocess.Popen([sys.executable, "-m", "gpuparity", "run", "serving", "--set", f"url={url}",
                            "--set", "concurrency=1,4", "--set", "num_prompts=30", "--set", "warmup=0", *SMALL,
                            "--json", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 300
        while time.time() < deadline:  # kill once the sweep is under way
            if httpx.get(url.rsplit("/v1", 1)[0] + "/health", timeout=30).json()["completed"] >= 3:
                break
            time.sleep(0.2)
        stop(proc)
        run.communicate(timeout=300)
    finally:
        stop(proc)
        if run.poll() is None:
            run.kill()
    results = json.loads(out.read_text())["results"]
    assert len(results) == 2
    assert all(r["info"]["serving"]["requests"] == 30 for r in results)  # every request accounted for
    # the runner shuffles the case order: the point that ran first was cut short, the other found no server
    first, second = sorted(results, key=lambda r: -r["info"]["serving"]["completed"])
    assert first["info"]["serving"]["completed"] >= 3 and first["info"]["serving"]["errors"] > 0
    assert second["status"] == "failed" and "all 30 requests failed" in second["reason"]
    assert cli("show").returncode == 0


def test_bad_settings_are_one_line_errors(cli, tmp_db, server):
    p = cli("run", "serving", "--no-store")
    assert p.returncode == 2 and "--set url=" in p.stderr
    for args, expect in ((["--set", "concurrency=1", "--set", "request_rate=2"], "exclude each other"),
                         (["--set", "dataset=nope"], "serving takes dataset in random, sharegpt, prefix"),
                         (["--set", "ignore_eos=maybe"], "true or false"),
                         (["--set", "input_lenn=5"], "input_len"),
                         (["--set", "dataset=sharegpt"], "dataset_path"),
                         (["--set", "percentiles=200"], "percentiles")):
        p = cli("run", "serving", "--set", f"url={server}", *args, "--no-store")
        assert p.returncode == 2 and expect in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
