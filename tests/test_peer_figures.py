"""Peers' own numbers under peers' names (`show --names PEER`), held to files the peers made here:
guidellm 0.8.1 (two benchmarks, 1 and 3 streams) and aiperf 0.13.0 (3 clients), each run against
the demo server around SmolLM2 (tests/data/peers, with what each printed on its console), and
`vllm bench serve` files written here in its --save-result schema (a summary-only file with
--metadata gpu=MI300X tp=8, and a --save-detailed file of a version that writes ttfts and itls but
no latencies). Every figure in a peer's column equals the peer's own to the table's rounding and to
the peer's printed rounding; gpuparity's own definitions stay in its own column. Also `import
--gpus --label --platform`: a declared server, figures per GPU, the run's stack never "cpu"."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from conftest import run_cli

from gpuparity.results.peers import load_import_file
from gpuparity.results.serving_table import named_table

DATA = Path(__file__).parent / "data" / "peers"
GUIDELLM = DATA / "guidellm_streams_1_3.json.gz"
AIPERF = DATA / "aiperf_c3"
VLLM_SUMMARY = DATA / "vllm_summary_mi300x.json"
VLLM_NO_LATENCIES = DATA / "vllm_detailed_without_latencies.json"


def cell(v) -> str:
    """The table's spelling of a figure (results/serving_table._num)."""
    return str(v) if isinstance(v, int) else f"{v:,.2f}"


def peer_rows(table: dict) -> list[tuple[str, str, str, str]]:
    """(label, gpuparity's value, the peer's name, the peer's value) of every row with a peer's figure."""
    return [tuple(r) for r in table["rows"] if r[3] not in ("", "-")]


# -- guidellm ------------------------------------------------------------------------------------------
def guidellm_figure(metrics: dict, name: str):
    """guidellm's own figure for a name in the table's guidellm column."""
    fixed = {"request_totals.successful": ("request_totals", "successful"),
             "request_totals.errored + incomplete": None, "duration (s)": None,
             "prompt_token_count.successful.total_sum": ("prompt_token_count", "successful", "total_sum"),
             "output_token_count.successful.total_sum": ("output_token_count", "successful", "total_sum"),
             "requests_per_second (mean)": ("requests_per_second", "successful", "mean"),
             "output_tokens_per_second (mean)": ("output_tokens_per_second", "successful", "mean"),
             "tokens_per_second (mean)": ("tokens_per_second", "successful", "mean")}
    if name in fixed:
        if fixed[name] is None:
            return None
        v = metrics
        for k in fixed[name]:
            v = v[k]
        return v
    metric, stat = name.split()
    d = metrics[metric]["successful"]
    return d["percentiles"][stat] if stat.startswith("p") else d[stat]


def test_guidellm_s_figures_under_its_names_are_its_own():
    report = json.loads(gzip.decompress(GUIDELLM.read_bytes()))
    doc = load_import_file(str(GUIDELLM))
    checked = 0
    for r, b in zip(doc["results"], report["benchmarks"], strict=True):
        table = named_table(r, "guidellm")
        assert table["columns"] == ["metric", "value", "guidellm", "guidellm 0.8.1's value"]
        for label, _, name, theirs in peer_rows(table):
            if name == "duration (s)":
                assert theirs == cell(b["duration"])
                continue
            want = guidellm_figure(b["metrics"], name)
            if want is None:
                assert theirs == "0"            # no errored or incomplete request
                continue
            assert theirs == cell(want if not isinstance(want, float) or not want.is_integer() or "total_sum" not in name
                                  else int(want)), (label, name, theirs, want)
            checked += 1
        names = {row[2] for row in table["rows"]}
        # guidellm's p95 kept, and its own TPOT (E2E / tokens) beside gpuparity's
        assert {"time_to_first_token_ms p95", "inter_token_latency_ms p95", "request_latency p95",
                "time_per_output_token_ms p95"} <= names
    assert checked >= 2 * 25


def test_guidellm_s_column_rounds_to_what_guidellm_printed():
    """The request latency table guidellm printed (1 decimal): mean, median, p95 of request latency (s),
    TTFT, ITL and TPOT (ms), per benchmark, each the peer column's figure rounded as guidellm rounds."""
    text = (DATA / "guidellm_streams_1_3.console.txt").read_text()
    printed = {}
    for line in text.splitlines():
        m = re.match(r"\| (concurrent@\d) +\|(.*)\|$", line)
        if m and "±" in line:
            cells = [c.strip().split(" ±")[0].rstrip("*") for c in m.group(2).split("|")]
            printed[m.group(1)] = [float(c) for c in cells]
    assert set(printed) == {"concurrent@1", "concurrent@3"}
    doc = load_import_file(str(GUIDELLM))
    for r in doc["results"]:
        rows = {row[2]: row[3] for row in named_table(r, "guidellm")["rows"]}
        ours = [rows[f"{metric} {stat}"] for metric in ("request_latency", "time_to_first_token_ms") for stat in
                ("mean", "median", "p95")]
        ours += ours[3:6]                       # TTFOT: the first output token is the first token here
        ours += [rows[f"{metric} {stat}"] for metric in ("inter_token_latency_ms", "time_per_output_token_ms")
                 for stat in ("mean", "median", "p95")]
        got = [round(float(v.replace(",", "")), 1) for v in ours]
        assert got == pytest.approx(printed[f"concurrent@{r['params']['concurrency']}"], abs=0.051), got


def test_gpuparity_s_own_figures_stay_under_its_own_names():
    """The value column is gpuparity's (interpolated percentiles, TPOT to the stream's end), the peer
    column the peer's (nearest rank): where the rules differ, so do the columns."""
    r = load_import_file(str(GUIDELLM))["results"][1]
    s = r["info"]["serving"]
    rows = {row[0]: row for row in named_table(r, "guidellm")["rows"]}
    assert rows["P90 TTFT (ms)"][1] == cell(s["ttft_ms"]["p90"])
    assert rows["P90 TTFT (ms)"][1] != rows["P90 TTFT (ms)"][3]
    assert rows["Median TPOT (ms)"][1] == cell(s["tpot_ms"]["median"])
    assert rows["Median TPOT (ms)"][1] != rows["Median TPOT (ms)"][3]


# -- aiperf --------------------------------------------------------------------------------------------
AIPERF_NAMES = {"request_count": ("request_count", "avg"), "benchmark_duration (s)": ("benchmark_duration", "avg"),
                "total_isl": ("total_isl", "avg"), "total_osl": ("total_osl", "avg"),
                "request_throughput": ("request_throughput", "avg"),
                "output_token_throughput": ("output_token_throughput", "avg"),
                "total_token_throughput": ("total_token_throughput", "avg")}


def test_aiperf_s_figures_under_its_names_are_its_own():
    agg = json.loads((AIPERF / "profile_export_aiperf.json").read_text())
    (r,) = load_import_file(str(AIPERF / "profile_export.jsonl"))["results"]
    table = named_table(r, "aiperf")
    checked = 0
    for label, _, name, theirs in peer_rows(table):
        if name == "error_request_count":
            assert theirs == "0"
            continue
        if name.startswith("output_token_throughput_per_user"):
            metric, stat = "output_token_throughput_per_user", "avg"
        elif name in AIPERF_NAMES:
            metric, stat = AIPERF_NAMES[name]
        else:
            metric, stat = name.split()
        want = agg[metric][stat]
        if name == "benchmark_duration (s)":    # its window: start to end of profiling, a little past the requests
            assert theirs == cell(agg["benchmark_duration"]["avg"]) or abs(float(theirs) - want) < 0.01
            continue
        assert theirs == cell(int(want) if metric in ("request_count", "total_isl", "total_osl") else want), \
            (label, name, theirs, want)
        checked += 1
    assert checked >= 40
    names = {row[2] for row in table["rows"]}
    assert {"time_to_first_token p95", "inter_token_latency p95", "inter_chunk_latency p95",
            "request_latency p95"} <= names


def test_aiperf_s_column_is_what_aiperf_printed():
    """aiperf's console table (2 decimals): TTFT, request latency, ITL, their avg/p99/p90/p50/std."""
    text = (AIPERF / "profile_export_console.txt").read_text()
    printed = {}
    for line in text.splitlines():
        m = re.match(r"│ +(Time to First Token|Request Latency|Inter Token Latency) \(ms\) │(.*)│$", line)
        if m:
            printed[m.group(1)] = [c.strip() for c in m.group(2).split("│")]
    (r,) = load_import_file(str(AIPERF / "profile_export.jsonl"))["results"]
    rows = {row[2]: row[3] for row in named_table(r, "aiperf")["rows"]}
    for title, name in (("Time to First Token", "time_to_first_token"), ("Request Latency", "request_latency"),
                        ("Inter Token Latency", "inter_token_latency")):
        avg, _min, _max, p99, p90, p50, std = printed[title]
        assert [rows[f"{name} {s}"] for s in ("avg", "p99", "p90", "p50", "std")] == [avg, p99, p90, p50, std]


# -- vLLM ----------------------------------------------------------------------------------------------
def test_a_vllm_summary_file_shows_its_own_summaries_and_metadata(tmp_path):
    f = json.loads(VLLM_SUMMARY.read_text())
    doc = load_import_file(str(VLLM_SUMMARY))
    (r,) = doc["results"]
    assert r["flags"] == ["unverified_tokens"] and doc["fingerprint"]["product"] == "MI300X"
    assert r["info"]["imported"]["settings"]["metadata"] == {"gpu": "MI300X", "tp": "8", "input_len": "1024",
                                                             "output_len": "1024"}
    table = r["info"]["table"]
    assert "unverified" in table["columns"][1] and "summary only" in table["title"]
    shown = {row[0]: row[1] for row in table["rows"]}
    stated = [k for k in f if re.match(r"^(mean|median|std|p\d+)_(ttft|tpot|itl|e2el)_ms$", k)]
    assert len(stated) == 20
    for k in stated + ["duration", "request_throughput", "output_throughput", "total_token_throughput"]:
        assert shown[k] == cell(f[k]), k
    assert shown["completed"] == "640" and shown["metadata gpu"] == "MI300X" and shown["metadata tp"] == "8"
    env = {"GPUPARITY_DB": str(tmp_path / "s.db"), "COLUMNS": "200"}
    assert run_cli("import", str(VLLM_SUMMARY), env=env).returncode == 0
    out = run_cli("show", doc["run_id"], "--names", "vllm", env=env)
    assert out.returncode == 0 and "p99_e2el_ms" in out.stdout and "42,117.80" in out.stdout
    assert "unverified" in out.stdout and "MI300X" in out.stdout


def test_a_vllm_file_with_ttfts_and_itls_but_no_latencies_is_rebuilt_from_them():
    f = json.loads(VLLM_NO_LATENCIES.read_text())
    (r,) = load_import_file(str(VLLM_NO_LATENCIES))["results"]
    assert r["params"]["input_len"] == 128 and r["params"]["output_len"] == 16 and r["params"]["ignore_eos"]
    rows = {row[0]: row for row in r["info"]["table"]["rows"]}
    assert r["info"]["table"]["columns"][2] == "rebuilt from its per-request latencies"
    for name in ("ttft", "itl"):                # the same lists, the same rule: vLLM's own figure
        for stat in ("mean", "median", "std", "p99"):
            key = f"{stat}_{name}_ms"
            assert rows[key][1] == rows[key][2] == cell(f[key]), key
    for name in ("tpot", "e2el"):               # rebuilt to the last token: vLLM's own ends after it
        key = f"mean_{name}_ms"
        assert float(rows[key][2]) < float(rows[key][1]) < float(rows[key][2]) * 1.01


# -- import --gpus --label --platform ----------------------------------------------------------------
def test_import_declares_the_server_and_the_stack_is_never_cpu(tmp_path):
    env = {"GPUPARITY_DB": str(tmp_path / "s.db"), "COLUMNS": "200"}
    plain = run_cli("import", str(GUIDELLM), env=env)
    declared = run_cli("import", "--gpus", "8", "--label", "mi300x tp8", "--platform", "ROCm 6.4", str(VLLM_SUMMARY),
                       str(AIPERF / "profile_export.jsonl"), env=env)
    assert plain.returncode == 0 and declared.returncode == 0, declared.stderr
    listed = json.loads(run_cli("list", "--json", env=env).stdout)
    stacks = {r["run_id"].split("-")[0]: (r["stack"], r["label"]) for r in listed}
    assert stacks == {"guidellm": ("unknown", None), "vllm": ("rocm 6.4", "mi300x tp8"),
                      "aiperf": ("rocm 6.4", "mi300x tp8")}
    ai = load_import_file(str(AIPERF / "profile_export.jsonl"))
    from gpuparity.results.peers.common import Declared

    per_gpu = load_import_file(str(AIPERF / "profile_export.jsonl"), declared=Declared(gpus=8))
    assert per_gpu["results"][0]["metric"]["unit"] == "tokens/s/GPU"
    assert per_gpu["results"][0]["metric"]["value"] == pytest.approx(ai["results"][0]["metric"]["value"] / 8)
    assert per_gpu["run_id"] != ai["run_id"]
    summary = load_import_file(str(VLLM_SUMMARY), declared=Declared(gpus=8))["results"][0]
    assert summary["metric"]["unit"] == "tokens/s/GPU" and summary["metric"]["value"] == pytest.approx(
        json.loads(VLLM_SUMMARY.read_text())["output_throughput"] / 8)
    own = tmp_path / "own.json"
    assert run_cli("export", listed[0]["run_id"], "-o", str(own), env=env).returncode == 0
    for args, what in ((["--gpus", "2", str(own)], "peers' files"), (["--platform", "windows 11", str(GUIDELLM)],
                                                                      "--platform"), (["--gpus", "0", str(GUIDELLM)], "--gpus")):
        p = run_cli("import", *args, env=env)
        assert p.returncode == 2 and what in p.stderr and "Traceback" not in p.stderr, p.stderr


# -- import --gpu-model: the accelerator by identity, its price, the cost per million tokens --------------
def test_an_imported_run_named_by_its_gpu_gets_a_price_and_a_cost_per_million_tokens(tmp_path):
    """guidellm's file names no GPU: --gpu-model names it, matched by the one identity function
    (its own row or none); with --gpus 1 its figure is per GPU, so the price book gives the cost per
    million tokens in compare's JSON. A name no row holds gets no price, and compare says why.
    vLLM's gpu= metadata goes through the same function."""
    from gpuparity.results.peers.common import Declared

    env = {"GPUPARITY_DB": str(tmp_path / "s.db"), "COLUMNS": "200"}
    for model, label in (("H100 SXM", "h100"), ("Z999 Ultra", "z999")):
        p = run_cli("import", "--gpus", "1", "--gpu-model", model, "--label", label, str(GUIDELLM), env=env)
        assert p.returncode == 0, p.stderr
    runs = {r["label"]: r for r in json.loads(run_cli("list", "--json", env=env).stdout)}
    assert runs["h100"]["spec_id"] == "h100-sxm" and runs["z999"]["spec_id"] is None
    p = run_cli("compare", runs["h100"]["run_id"], runs["z999"]["run_id"], "--json", env=env)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["sides"]["a"]["usd_per_hour"] > 0 and out["sides"]["b"]["usd_per_hour"] is None
    assert out["sides"]["b"]["price_source"] == "price unknown: no datasheet: no row is 'Z999 Ultra' (% of peak not shown)"
    rows = [r for r in out["rows"] if r["category"] == "serving"]
    assert rows and all(r["unit"] == "tokens/s/GPU" for r in rows)
    for r in rows:          # $ per GPU-hour over the tokens an hour of one GPU serves, per million
        assert r["a_usd_per_mtok"] == pytest.approx(out["sides"]["a"]["usd_per_hour"] / (r["a_value"] * 3600) * 1e6)
        assert r["b_usd_per_mtok"] is None
    # a look-alike is no match: an H20 is not an H100; a vLLM file's gpu=MI300X is the MI300X's row
    assert load_import_file(str(GUIDELLM), declared=Declared(gpus=1, gpu_model="NVIDIA H20"))["spec_id"] is None
    vllm = load_import_file(str(VLLM_SUMMARY))
    assert vllm["spec_id"] == "mi300x" and vllm["fingerprint"]["spec_match"] == "datasheet row mi300x by name"
    assert load_import_file(str(VLLM_SUMMARY), declared=Declared(gpu_model="H200"))["spec_id"] == "h200-sxm"
    # ids of files imported before --gpu-model existed are unchanged (importing again: "already stored")
    import hashlib

    from gpuparity.validate import read_bounded

    said = json.dumps({"gpus": 8, "label": None, "platform": None}, sort_keys=True).encode()
    old_id = "guidellm-" + hashlib.sha256(read_bounded(str(GUIDELLM), None, "run file") + said).hexdigest()[:16]
    assert load_import_file(str(GUIDELLM), declared=Declared(gpus=8))["run_id"] == old_id
    bad = run_cli("import", "--gpu-model", "H100\x07", str(GUIDELLM), env=env)
    assert bad.returncode == 2 and "--gpu-model" in bad.stderr and "Traceback" not in bad.stderr
