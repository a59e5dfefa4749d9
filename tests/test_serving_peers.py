"""Result files of the serving clients people already run, imported: guidellm's JSON report and
aiperf's profile export made by those tools (0.8.1 and 0.13.0, against the demo server around
SmolLM2: tests/data/peers), and `vllm bench serve` result files written here to its format
(vllm/benchmarks/serve.py: save_result, --save-detailed), its summaries computed as vLLM does.
The imported figures are redone by gpuparity from the per-request data and must equal the
file's own where those follow from the same data; imported points line up with gpuparity's own
and with each other by the key's params."""

from __future__ import annotations

import copy
import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuparity.errors import UserError
from gpuparity.results.peers import load_import_file

DATA = Path(__file__).parent / "data" / "peers"
GUIDELLM = DATA / "guidellm_concurrent4.json.gz"
AIPERF = DATA / "aiperf"
# the key both peers' files and the vLLM file below share: 6 requests, 2 clients, 32 in, 8 out
KEY_PARAMS = {"dataset": "random", "endpoint": "completions", "ignore_eos": True, "seed": 0, "input_len": 32,
              "output_len": 8, "concurrency": 2, "num_prompts": 6}


def only_result(doc: dict) -> dict:
    (r,) = doc["results"]
    assert r["status"] == "ok", r.get("reason")
    return r


def close(a, b, rel=1e-6, abs_ms=0.002):
    """Equal but for gpuparity's integer microseconds (a figure in ms moves by at most ~1 us)."""
    return abs(a - b) <= abs_ms + rel * abs(b)


# -- guidellm ------------------------------------------------------------------------------------------
def test_a_guidellm_report_imports_with_its_figures_redone_from_its_requests():
    g = json.loads(gzip.decompress(GUIDELLM.read_bytes()))
    b = g["benchmarks"][0]
    m = b["metrics"]
    doc = load_import_file(str(GUIDELLM))
    r = only_result(doc)
    assert doc["imported"]["tool"] == "guidellm" and doc["imported"]["version"] == g["metadata"]["guidellm_version"]
    assert r["params"] == {"dataset": "random", "endpoint": "completions", "ignore_eos": True, "seed": 0,
                           "input_len": 32, "output_len": 8, "concurrency": 4, "num_prompts": 8}
    s, info = r["info"]["serving"], r["info"]["imported"]
    assert info["per_request"] and not r["flags"] and r["metric"]["unit"] == "tokens/s"
    assert r["info"]["served_model"] == "smollm2" and r["info"]["url"] == "http://127.0.0.1:8765"
    ok = lambda name, stat: m[name]["successful"][stat]     # noqa: E731 - guidellm's own figure
    assert s["completed"] == m["request_totals"]["successful"] == 8 and s["failed"] == 0
    assert s["total_output_tokens"] == ok("output_token_count", "total_sum")
    assert s["total_input_tokens"] == ok("prompt_token_count", "total_sum")
    assert close(s["ttft_ms"]["mean"], ok("time_to_first_token_ms", "mean"))
    assert close(s["e2el_ms"]["mean"], 1e3 * ok("request_latency", "mean"))
    assert close(s["duration_s"] * 1e3, b["duration"] * 1e3)
    assert s["output_throughput"] == pytest.approx(ok("output_tokens_per_second", "mean"), rel=1e-5)
    assert s["itl_ms"]["mean"] is None          # guidellm keeps no per-gap latencies: no ITL is made up
    # guidellm's "ITL" is per request (first to last token), gpuparity's TPOT to the stream's end
    assert s["tpot_ms"]["mean"] == pytest.approx(ok("inter_token_latency_ms", "mean"), rel=0.05)
    assert info["stated"]["time_to_first_token_ms.mean"] == ok("time_to_first_token_ms", "mean")


def test_a_synchronous_guidellm_run_is_concurrency_one():
    r = only_result(load_import_file(str(DATA / "guidellm_synchronous.json.gz")))
    assert r["params"]["concurrency"] == 1 and r["params"]["input_len"] == 128 and r["params"]["output_len"] == 32


def test_a_sampled_guidellm_report_is_imported_as_its_summary_unverified(tmp_path):
    g = json.loads(gzip.decompress(GUIDELLM.read_bytes()))
    g["benchmarks"][0]["requests"]["successful"] = g["benchmarks"][0]["requests"]["successful"][:3]   # sampled
    path = tmp_path / "sampled.json"
    path.write_text(json.dumps(g))
    r = only_result(load_import_file(str(path)))
    assert r["flags"] == ["unverified_tokens"] and not r["info"]["imported"]["per_request"]
    assert r["metric"]["value"] == g["benchmarks"][0]["metrics"]["output_tokens_per_second"]["successful"]["mean"]
    assert r["params"]["num_prompts"] == 8 and "requests" not in r["info"]


# -- aiperf --------------------------------------------------------------------------------------------
def test_an_aiperf_export_imports_from_either_file_as_one_run():
    agg = json.loads((AIPERF / "profile_export_aiperf.json").read_text())
    a = load_import_file(str(AIPERF / "profile_export_aiperf.json"))
    b = load_import_file(str(AIPERF / "profile_export.jsonl"))
    assert a["run_id"] == b["run_id"] and a["run_id"].startswith("aiperf-")
    r = only_result(a)
    assert r["params"] == KEY_PARAMS and a["imported"]["version"] == agg["aiperf_version"]
    s = r["info"]["serving"]
    assert s["completed"] == agg["request_count"]["avg"] and s["total_output_tokens"] == agg["total_osl"]["avg"]
    for ours, theirs in (("ttft_ms", "time_to_first_token"), ("itl_ms", "inter_chunk_latency")):
        for stat, key in (("mean", "avg"), ("std", "std"), ("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p5", "p5")):
            assert close(s[ours][stat], agg[theirs][key]), (ours, stat)
    # aiperf's latency and its ITL end at the last response, gpuparity's at the stream's end
    assert s["tpot_ms"]["mean"] == pytest.approx(agg["inter_token_latency"]["avg"], rel=0.02)
    assert s["duration_s"] == pytest.approx(agg["benchmark_duration"]["avg"], rel=1e-3)
    assert s["output_throughput"] == pytest.approx(agg["output_token_throughput"]["avg"], rel=2e-3)


def test_an_aiperf_aggregate_alone_is_its_summary_unverified(tmp_path):
    shutil.copy(AIPERF / "profile_export_aiperf.json", tmp_path / "profile_export_aiperf.json")
    r = only_result(load_import_file(str(tmp_path / "profile_export_aiperf.json")))
    agg = json.loads((AIPERF / "profile_export_aiperf.json").read_text())
    assert r["flags"] == ["unverified_tokens"] and r["metric"]["value"] == agg["output_token_throughput"]["avg"]
    assert r["params"] == KEY_PARAMS


# -- vllm bench serve ---------------------------------------------------------------------------------
def vllm_file(n=6, concurrency=2, in_len=32, out_len=8, seed=0, detailed=True, metadata=True) -> dict:
    """A `vllm bench serve --save-result --save-detailed` result: closed loop of `concurrency`
    clients, its summaries computed as vllm/benchmarks/serve.py's calculate_metrics does."""
    rng = np.random.default_rng(seed)
    free, starts, lat, ttft, itls = [0.0] * concurrency, [], [], [], []
    for _ in range(n):
        w = int(np.argmin(free))
        t = free[w] + 0.001
        first = 0.05 + 0.02 * rng.random()
        gaps = list(0.01 + 0.005 * rng.random(out_len - 1))
        e2e = first + sum(gaps) + 0.0007
        starts.append(1000.0 + t)
        ttft.append(first)
        itls.append(gaps)
        lat.append(e2e)
        free[w] = t + e2e
    duration = max(s + e for s, e in zip(starts, lat, strict=True)) - min(starts) + 0.004   # setup before the first send
    tpot = [(e - f) / (out_len - 1) for e, f in zip(lat, ttft, strict=True)]
    out = {"date": "20260105-101500", "endpoint_type": "openai", "backend": "openai", "label": None,
           "model_id": "HuggingFaceTB/SmolLM2-135M-Instruct", "tokenizer_id": "HuggingFaceTB/SmolLM2-135M-Instruct",
           "num_prompts": n, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": concurrency,
           "duration": duration, "completed": n, "failed": 0, "total_input_tokens": n * in_len,
           "total_output_tokens": n * out_len, "request_throughput": n / duration, "request_goodput": None,
           "output_throughput": n * out_len / duration, "total_token_throughput": n * (in_len + out_len) / duration,
           "max_output_tokens_per_s": 0.0, "max_concurrent_requests": concurrency}
    if metadata:
        out.update(input_len=str(in_len), output_len=str(out_len), ignore_eos="true")
    if detailed:
        out.update(input_lens=[in_len] * n, output_lens=[out_len] * n, ttfts=ttft, itls=itls, latencies=lat,
                   start_times=starts, queue_times=[0.0] * n, errors=[""] * n,
                   generated_texts=[" word" * out_len] * n)
    for name, x in (("ttft", ttft), ("tpot", tpot), ("itl", [g for gs in itls for g in gs]), ("e2el", lat)):
        x = np.asarray(x)
        out.update({f"mean_{name}_ms": x.mean() * 1e3, f"median_{name}_ms": np.median(x) * 1e3,
                    f"std_{name}_ms": x.std() * 1e3, **{f"p{q}_{name}_ms": np.percentile(x, q) * 1e3
                                                        for q in (50, 90, 99)}})
    return json.loads(json.dumps(out))


def write(tmp_path, obj, name="vllm.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(obj))
    return str(path)


def test_a_vllm_result_imports_with_every_latency_figure_its_own(tmp_path):
    f = vllm_file()
    r = only_result(load_import_file(write(tmp_path, f)))
    assert r["params"] == KEY_PARAMS and r["info"]["served_model"] == f["model_id"]
    s = r["info"]["serving"]
    assert s["percentiles"] == [50.0, 90.0, 99.0] and not r["flags"]
    for name in ("ttft", "tpot", "itl", "e2el"):
        for stat in ("mean", "median", "std", "p50", "p90", "p99"):
            assert close(s[f"{name}_ms"][stat], f[f"{stat}_{name}_ms"], rel=1e-5), (name, stat)
    assert s["completed"] == f["completed"] and s["total_output_tokens"] == f["total_output_tokens"]
    # gpuparity's duration is first send to last end; vLLM's also holds its set-up before the first send
    span = max(a + b for a, b in zip(f["start_times"], f["latencies"], strict=True)) - min(f["start_times"])
    assert s["output_throughput"] == pytest.approx(f["total_output_tokens"] / span, rel=1e-5)
    assert s["output_throughput"] == pytest.approx(f["output_throughput"], rel=0.02)
    assert r["info"]["imported"]["stated"]["mean_ttft_ms"] == f["mean_ttft_ms"]


def test_a_vllm_result_without_metadata_takes_the_lengths_every_request_shares(tmp_path):
    r = only_result(load_import_file(write(tmp_path, vllm_file(metadata=False))))
    assert r["params"] == KEY_PARAMS          # one output length for all: generation ran to its cap
    rated = vllm_file()
    rated.update(request_rate=4.0, burstiness=0.5)
    assert only_result(load_import_file(write(tmp_path, rated)))["params"] == {
        **{k: v for k, v in KEY_PARAMS.items() if k != "concurrency"}, "request_rate": 4.0, "burstiness": 0.5,
        "max_concurrency": 2}


def test_a_vllm_result_without_save_detailed_is_its_summary_unverified(tmp_path):
    f = vllm_file(detailed=False)
    r = only_result(load_import_file(write(tmp_path, f)))
    assert r["flags"] == ["unverified_tokens"] and r["metric"]["value"] == f["output_throughput"]


def test_a_count_the_file_s_own_text_cannot_hold_is_invalid(tmp_path):
    f = vllm_file()
    f["output_lens"][0] = 8                  # the key's length, but one chunk of 2 bytes: no 8 tokens in it
    f["generated_texts"][0], f["itls"][0] = "hi", []
    r = only_result(load_import_file(write(tmp_path, f)))
    s = r["info"]["serving"]
    assert s["invalid"] == 1 and s["completed"] == 5 and "invalid_requests" in r["flags"]
    assert s["rate_duration_s"] < s["duration_s"]


# -- lining up ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def degenerate_base(tmp_path_factory):
    from serving_fixtures import start_own, stop

    proc, url = start_own(tmp_path_factory.mktemp("peers"), "peers", "--model", "none", "--faults")
    yield url.rsplit("/v1", 1)[0] + "/fault/degenerate/v1"
    stop(proc)


def test_compare_lines_imported_points_up_with_gpuparity_s_and_each_other(tmp_path, degenerate_base):
    from serving_fixtures import run_points
    from test_compare import make_run

    from gpuparity.comparison.compare import compare_runs
    from gpuparity.models import gguf

    (own,), _ = run_points(url=degenerate_base, model="fault", tokenizer=str(gguf.prepare(gguf.smollm2_gguf())),
                           warmup=0, **{k: v for k, v in KEY_PARAMS.items()
                                        if k in ("concurrency", "num_prompts", "input_len", "output_len")},
                           ignore_eos="true")
    assert own["params"] == KEY_PARAMS and own["status"] == "ok"
    ours = make_run([own], spec_id="cpu", run_id="own")
    aiperf = load_import_file(str(AIPERF / "profile_export.jsonl"))
    vllm = load_import_file(write(tmp_path, vllm_file()))
    for a, b in ((ours, aiperf), (ours, vllm), (vllm, aiperf)):
        out = compare_runs([a], [b])
        (row,) = out["rows"]
        assert row["key"] == own["key"] and row["ratio"] is not None and not out["only_a"] and not out["only_b"]
        assert row["ratio"] == pytest.approx(b["results"][0]["metric"]["value"] / a["results"][0]["metric"]["value"])


def test_import_through_the_cli_stores_shows_and_refuses_bad_files(tmp_path):
    env = {"GPUPARITY_DB": str(tmp_path / "store.db"), "COLUMNS": "160"}
    good = write(tmp_path, vllm_file())
    p = run_cli("import", good, str(GUIDELLM), str(AIPERF / "profile_export.jsonl"), env=env)
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("imported: ") == 3
    again = run_cli("import", good, env=env)
    assert again.returncode == 0 and "already stored" in again.stderr
    run_id = load_import_file(str(GUIDELLM))["run_id"]
    shown = run_cli("show", run_id, "--names", "guidellm", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "imported from guidellm 0.8.1" in shown.stdout and "time_to_first_token_ms mean" in shown.stdout
    assert "GPU" not in shown.stdout.replace("gpuparity", "")
    bad = vllm_file()
    bad["ttfts"] = "soon"
    for obj, what in ((bad, "ttfts"), ({"benchmarks": [{"type_": "generative_benchmark"}]}, "config")):
        p = run_cli("import", write(tmp_path, obj, "bad.json"), env=env)
        assert p.returncode == 2 and what in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert run_cli("show", run_id, "--names", "nope", env=env).returncode == 2


LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=False),
                   st.text(max_size=8), st.lists(st.integers(-5, 5), max_size=3))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow,
                                                                                    HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_mutated_peer_file_is_a_document_or_a_one_line_error(tmp_path, data):
    """Any field of a peer's file replaced by any value: stored whole or refused with one line."""
    base = data.draw(st.sampled_from(["vllm", "guidellm", "aiperf"]))
    if base == "vllm":
        obj, name = vllm_file(), "v.json"
    elif base == "guidellm":
        obj, name = json.loads(gzip.decompress(GUIDELLM.read_bytes())), "g.json"
    else:
        obj, name = json.loads((AIPERF / "profile_export_aiperf.json").read_text()), "a_aiperf.json"
    obj = copy.deepcopy(obj)
    node = obj
    for _ in range(data.draw(st.integers(1, 4))):
        if isinstance(node, dict) and node:
            key = data.draw(st.sampled_from(sorted(node)))
            if not isinstance(node[key], (dict, list)) or data.draw(st.booleans()):
                node[key] = data.draw(LEAVES)
                break
            node = node[key]
        elif isinstance(node, list) and node:
            i = data.draw(st.integers(0, len(node) - 1))
            if not isinstance(node[i], (dict, list)) or data.draw(st.booleans()):
                node[i] = data.draw(LEAVES)
                break
            node = node[i]
        else:
            break
    try:
        doc = load_import_file(write(tmp_path, obj, name))
    except UserError as exc:
        assert "\n" not in str(exc)
        return
    assert doc["results"] and json.dumps(doc, allow_nan=False)
