"""Labels that fit a serving run, through the CLI as a user runs it against a CPU-only server
(the demo server's degenerate stream): no GPU named where the server's GPUs were not given, per
GPU where they were; every column and row with its unit; no suite on a serving run; the
tokenizer's figure labelled as a re-encoding; peers' names beside the figures on request."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from serving_fixtures import start_own, stop


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Two stored runs of one point: without gpus= (a CPU server) and with gpus=2."""
    from gpuparity.models import gguf

    tmp = tmp_path_factory.mktemp("labels")
    proc, url = start_own(tmp, "labels", "--model", "none", "--faults")
    base = url.rsplit("/v1", 1)[0] + "/fault/degenerate/v1"
    env = {"GPUPARITY_DB": str(tmp / "store.db"), "GPUPARITY_SPOOL": str(tmp / "spool"), "COLUMNS": "160"}
    common = ["run", "serving", "--set", f"url={base}", "--set", "model=fault", "--set",
              f"tokenizer={gguf.prepare(gguf.smollm2_gguf())}", "--set", "concurrency=1,2", "--set", "num_prompts=3",
              "--set", "input_len=8", "--set", "output_len=10", "--set", "warmup=0"]
    try:
        cpu = run_cli(*common, "--json", str(tmp / "cpu.json"), env=env)
        gpu = run_cli(*common, "--set", "gpus=2", "--label", "gpus", "--json", str(tmp / "gpu.json"), env=env)
    finally:
        stop(proc)
    assert cpu.returncode == 0 and gpu.returncode == 0, (cpu.stderr, gpu.stderr)
    return {"env": env, "cpu": cpu, "gpu": gpu, "cpu_doc": json.loads((tmp / "cpu.json").read_text()),
            "gpu_doc": json.loads((tmp / "gpu.json").read_text())}


def no_gpu(text: str) -> bool:
    return "GPU" not in text.replace("gpuparity", "")


def test_a_cpu_server_s_run_names_no_gpu_and_no_suite(served):
    run = served["cpu"]
    assert "suite" not in run.stderr and "cases x 1 trial" in run.stderr      # the header names no suite
    assert no_gpu(run.stdout) and "tokens/s" in run.stdout
    for r in served["cpu_doc"]["results"]:
        assert r["metric"]["unit"] == "tokens/s" and r["info"]["serving"]["gpus"] is None
        assert no_gpu(json.dumps(r["info"]["table"]))
    shown = run_cli("show", served["cpu_doc"]["run_id"], env=served["env"])
    assert shown.returncode == 0 and no_gpu(shown.stdout), shown.stdout


def test_per_gpu_figures_only_where_gpus_are_given(served):
    (r, *_) = served["gpu_doc"]["results"]
    s = r["info"]["serving"]
    assert r["metric"]["unit"] == "tokens/s/GPU" and s["gpus"] == 2
    assert r["metric"]["value"] == pytest.approx(s["output_throughput"] / 2)
    rows = dict(r["info"]["table"]["rows"])
    assert rows["Output token throughput per GPU (tok/s/GPU)"] and "  95% CI (tok/s/GPU)" in rows
    cpu_rows = dict(served["cpu_doc"]["results"][0]["info"]["table"]["rows"])
    assert "  95% CI (tok/s)" in cpu_rows and not any("per GPU" in k for k in cpu_rows)


def test_every_column_and_row_names_its_unit(served):
    shown = run_cli("show", served["cpu_doc"]["run_id"], env=served["env"])
    header = next(line for line in shown.stdout.splitlines() if line.lstrip().startswith("workload"))
    assert "median E2EL" in header and "95% CI (tokens/s)" in header
    body = [line for line in shown.stdout.splitlines() if line.lstrip().startswith("serving ")]
    assert body and all(line.split()[-2] in ("s", "ms", "us") for line in body), body   # the median with its unit
    from gpuparity.cli.tables import _median_header

    assert _median_header([{"category": "kernel"}]) == "median"
    assert _median_header([{"category": "kernel"}, {"category": "serving"}]) == "median time / E2EL"
    for label, _ in served["cpu_doc"]["results"][0]["info"]["table"]["rows"]:
        if label.startswith(("Mean", "Median", "Std", "P")) or "throughput" in label or "tokens" in label:
            assert "(" in label, label          # (ms), (tok/s), (tokens), (req/s), ...


def test_the_re_encoding_is_labelled_as_a_bound_and_the_definitions_are_stated(served):
    rows = dict(served["cpu_doc"]["results"][0]["info"]["table"]["rows"])
    reenc = next(k for k in rows if k.startswith("Output text re-encoded"))
    assert "a bound, not a count" in reenc
    streamed = rows["Output tokens: streamed (tokens, one per text chunk)"]
    assert int(streamed) == 30 and int(rows[reenc]) < 30           # 3 requests x 10 tokens; re-encoded to fewer
    for text in ("TPOT: (E2EL - TTFT) / (tokens - 1), per request (vLLM's)", "ITL: gaps between text chunks, per gap"):
        assert text in rows


def test_show_names_the_peers_figures(served):
    env = served["env"]
    shown = run_cli("show", served["cpu_doc"]["run_id"], "--names", "guidellm", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "inter_token_latency_ms mean" in shown.stdout and "time_to_first_token_ms" in shown.stdout
    assert "clock starts at the send" in shown.stdout and no_gpu(shown.stdout)
    aiperf = run_cli("show", served["cpu_doc"]["run_id"], "--names", "aiperf", env=env)
    assert "inter_chunk_latency avg" in aiperf.stdout and "inter_token_latency avg" in aiperf.stdout
    vllm = run_cli("show", served["cpu_doc"]["run_id"], "--names", "vllm", env=env)
    assert "mean_tpot_ms" in vllm.stdout
    bad = run_cli("show", "--names", "locust", env=env)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_export_names_the_peers_figures_and_refuses_names_with_requests(served, tmp_path):
    env, run_id = served["env"], served["cpu_doc"]["run_id"]
    out = tmp_path / "named.json"
    done = run_cli("export", run_id, "-o", str(out), "--names", "guidellm", env=env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    tables = [r["info"]["table"] for r in doc["results"] if r["category"] == "serving"]
    assert tables and all(t["columns"] == ["metric", "value", "guidellm", "guidellm 0.8.1's value"] for t in tables)
    named = {row[2] for t in tables for row in t["rows"]}
    assert "inter_token_latency_ms mean" in named and "request_totals.successful" in named
    # the rest of the document is the stored one
    plain = tmp_path / "plain.json"
    assert run_cli("export", run_id, "-o", str(plain), env=env).returncode == 0
    stored = json.loads(plain.read_text())
    assert [r["samples"] for r in doc["results"]] == [r["samples"] for r in stored["results"]]
    assert all(t["columns"] == ["metric", "value"] for t in (r["info"]["table"] for r in stored["results"]))
    bad = run_cli("export", run_id, "-o", str(tmp_path / "r.csv"), "--requests", "--names", "aiperf", env=env)
    assert bad.returncode == 2 and "--names" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "r.csv").exists()


def test_compare_of_two_cpu_servers_names_no_gpu(served):
    env, run_id = served["env"], served["cpu_doc"]["run_id"]
    both = run_cli("compare", run_id, run_id, env=env)
    assert both.returncode == 0, both.stderr
    assert "at equal interactivity" in both.stdout and "tok/s per server" in both.stdout
    assert no_gpu(both.stdout.split("at equal interactivity", 1)[1]), both.stdout
    md = run_cli("compare", run_id, run_id, "-f", "markdown", env=env)
    assert md.returncode == 0, md.stderr
    assert "| A tok/s per server | B tok/s per server |" in md.stdout and no_gpu(md.stdout.split("### Serving", 1)[1])
    from gpuparity.comparison.serving_compare import throughput_header

    mixed = [{"a_per": "server", "b_per": "GPU"}, {"a_per": "GPU", "b_per": "GPU"}]
    assert (throughput_header(mixed, "a"), throughput_header(mixed, "b")) == ("A tok/s per GPU or server",
                                                                              "B tok/s per GPU")


def test_the_report_of_a_cpu_server_names_no_gpu_in_serving_and_no_suite(served):
    from gpuparity.report import context, html, onerun
    from gpuparity.report.markdown import render_markdown

    ctx = context.build([served["cpu_doc"]])
    md = render_markdown(ctx)
    section = md[md.index("### Serving:"):]
    assert "output tok/s/server" in section and no_gpu(section)
    assert "output tok/s per server" in html.render_html(ctx)
    (start, _) = onerun.machine_rows([served["cpu_doc"]])
    assert "suite" not in start["plan"] and "trial(s)" in start["plan"]
    kernel = dict(served["cpu_doc"], results=[{"category": "kernel"}], suite="quick")
    assert "suite quick" in onerun.machine_rows([kernel])[0]["plan"]
