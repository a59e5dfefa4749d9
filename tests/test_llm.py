"""Offline LLM inference: the real SmolLM2 through the CLI, synthetic architectures in process."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="session")
def smollm2_dir():
    """Converts the SmolLM2 GGUF into the model cache once (later loads reuse it)."""
    from gpuparity.models import gguf

    return gguf.prepare(gguf.smollm2_gguf())


def _ctx(suite="quick", **options):
    from gpuparity.runner import build_context

    return build_context(suite, options)


def test_quick_suite_llm_and_training_via_cli(cli, tmp_db, tmp_path, smollm2_dir):
    out = tmp_path / "run.json"
    p = cli("run", "llm", "training", "--suite", "quick", "--json", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    by_name = {r["workload"]: r for r in doc["results"]}
    llm, train = by_name["llm"], by_name["training"]
    assert llm["status"] == "ok", llm["reason"]
    assert llm["params"]["model"] == "smollm2"
    assert llm["info"]["source"] == "gguf" and llm["info"]["cache"] == "hit"
    assert llm["info"]["config"]["model_type"] == "llama"
    assert llm["info"]["params"] > 100e6  # the real 135M model, not a stand-in
    for k in ("decode_tokens_per_s", "prefill_tokens_per_s", "ttft_s", "tpot_s"):
        assert llm["derived"][k] > 0
    assert isinstance(llm["info"]["greedy_output"], str) and llm["info"]["greedy_output"].strip()
    assert train["status"] == "ok", train["reason"]
    assert train["metric"]["value"] > 0 and train["derived"]["tokens_per_s"] > 0
    assert 0 < train["derived"]["mfu"] and train["derived"]["mfu_estimated"] is True
    assert train["derived"]["memory_high_water_bytes"] > 0
    # stored too: show finds it
    assert "llm" in cli("show").stdout


def test_greedy_output_is_the_real_models(smollm2_dir):
    """The converted cache is the real model: its greedy continuation of a fact is right."""
    from gpuparity.models import load_causal_lm
    from gpuparity.workloads.llm import greedy_output

    loaded = load_causal_lm("smollm2", "cpu", "fp32")
    assert loaded.info["cache"] == "hit" and loaded.tokenizer is not None
    assert "Paris" in greedy_output(loaded, "cpu")


def test_synthetic_model_runs_with_layer_override():
    from gpuparity.workloads.llm import LLM

    ctx = _ctx(model="synthetic:tiny-llama", layers="2")
    w = LLM()
    cases = w.cases("quick", ctx)
    assert cases == [dict(model="synthetic:tiny-llama", batch=1, input_len=32, output_len=16, layers=2,
                          dtype="fp32")]
    r = w.execute(dict(cases[0], input_len=8, output_len=4), ctx)
    assert r["status"] == "ok", r["reason"]
    assert r["info"]["config"]["num_hidden_layers"] == 2
    assert r["info"]["greedy_output"].startswith("token ids: ")
    assert r["metric"]["unit"] == "tokens/s" and r["metric"]["value"] > 0
    assert len(r["samples"]) == len(r["info"]["prefill_samples"]) >= 2


def test_synthetic_build_is_materialised_on_device_with_real_shapes():
    import torch

    from gpuparity.models import synthetic

    # Published sizes (meta-device count: no memory).
    assert round(synthetic.param_count(synthetic.make_config("llama-3.1-8b")) / 1e9, 2) == 8.03
    assert round(synthetic.param_count(synthetic.make_config("mixtral-8x7b")) / 1e9, 1) == 46.7
    cfg = synthetic.make_config("deepseek-v3", layers=1)
    assert cfg.first_k_dense_replace == 0  # a cut-down DeepSeek keeps its MoE layer
    model = synthetic.build(synthetic.make_config("tiny-llama"), "cpu", torch.bfloat16)
    assert all(p.device.type == "cpu" and p.dtype == torch.bfloat16 for p in model.parameters())
    rope = [b for n, b in model.named_buffers() if "inv_freq" in n]
    assert rope and all(torch.isfinite(b).all() and (b > 0).all() for b in rope)


def test_8b_standard_case_is_skipped_on_cpu_with_reason():
    from gpuparity.workloads.llm import LLM

    ctx = _ctx("standard")
    w = LLM()
    cases = w.cases("standard", ctx)
    assert {c["model"] for c in cases} == {"synthetic:llama-3.1-8b"}
    r = w.execute(cases[0], ctx)
    assert r["status"] == "skipped" and "synthetic 8B needs a GPU" in r["reason"]
    assert w.execute(dict(cases[0], dtype="fp8"), ctx)["status"] == "skipped"


def test_bad_model_is_a_user_error(cli, tmp_db):
    p = cli("run", "llm", "--set", "model=/no/such/model.gguf", "--no-store")
    assert p.returncode == 2 and "error:" in p.stderr and "no such GGUF file" in p.stderr
