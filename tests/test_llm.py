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
    from gpuparity.execute.runner import build_context

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
    assert llm["info"]["greedy_check"].startswith("this run is the CPU fp32 reference")
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
    assert "no reference run" in r["info"]["greedy_check"]       # random weights: finite logits only
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


@pytest.fixture(scope="session")
def smollm2_reference(smollm2_dir):
    """The CPU fp32 SmolLM2 and its greedy tokens, as the workload's reference run records them."""
    import torch

    from gpuparity.models import load_causal_lm
    from gpuparity.workloads import llm

    ref = load_causal_lm("smollm2", "cpu", "fp32", quiet=True)
    with torch.inference_mode():
        tokens = llm.greedy_tokens(ref, "cpu")
    return ref, tokens


def test_greedy_tokens_are_gated_against_the_reference_run(smollm2_reference):
    import torch

    from gpuparity.measure.gates import tokens_agree
    from gpuparity.models import load_causal_lm
    from gpuparity.workloads import llm

    ref, tokens = smollm2_reference
    ctx = _ctx()
    ok, detail = llm.greedy_gate({"model": "smollm2", "dtype": "fp32"}, ref, tokens, ctx)
    assert ok and "this run is the CPU fp32 reference" in detail
    half = load_causal_lm("smollm2", "cpu", "bf16", quiet=True)        # another stack, same model: passes
    ok, detail = llm.greedy_gate({"model": "smollm2", "dtype": "bf16"}, half, [], ctx)
    assert ok and "CPU fp32 reference run" in detail and "100%" in detail
    broken = load_causal_lm("smollm2", "cpu", "fp32", quiet=True)      # a wrong stack: four layers' MLPs flipped
    with torch.no_grad():
        for layer in broken.model.model.layers[10:14]:
            layer.mlp.down_proj.weight.mul_(-1.0)
    ok, detail, fig = tokens_agree(broken.model, llm.prompt_ids(ref, "cpu"), tokens)
    assert not ok and fig["agreement"] < 0.5, detail


def test_fp8_checkpoint_path_is_torch_scaled_mm_in_the_architectures_format(smollm2_reference):
    import torch

    from gpuparity.measure.gates import tokens_agree
    from gpuparity.models import fp8, load_causal_lm
    from gpuparity.workloads import llm
    from gpuparity.workloads.dtypes import fp8_dtype_name

    ref, tokens = smollm2_reference
    q = load_causal_lm("smollm2", "cpu", "fp8", quiet=True, fp8_format="float8_e4m3fn")
    info = q.info["fp8"]
    assert info["format"] == "float8_e4m3fn" and info["kernel"] == "torch._scaled_mm"
    assert info["layers_fp8"] == 30 * 7 and info["layers_kept"] == ["lm_head"]
    assert sum(isinstance(m, fp8.FP8Linear) for m in q.model.modules()) == 210
    ok, detail, fig = tokens_agree(q.model, llm.prompt_ids(ref, "cpu"), tokens)   # fp8 on this CPU's _scaled_mm
    assert ok and fig["worst_rank"] <= 3, detail
    # MI300-class gfx942 gets the FNUZ variant (weights quantised in it); NVIDIA and gfx950 OCP e4m3fn.
    from gpuparity.workloads.base import Context

    for target, name in (("gfx942", "float8_e4m3fnuz"), ("sm_90", "float8_e4m3fn"), ("gfx950", "float8_e4m3fn")):
        ctx = Context(fingerprint={"backend": "rocm" if target.startswith("gfx") else "cuda", "arch_target": target},
                      device="cuda")
        assert fp8_dtype_name(ctx) == name
    lin = torch.nn.Sequential(torch.nn.Linear(64, 32, bias=False))
    fp8.quantise(lin, "float8_e4m3fnuz")
    assert lin[0].weight_fp8.dtype == torch.float8_e4m3fnuz and lin[0].fmax == 240.0


def test_fp8_linear_matches_its_quantised_reference():
    import torch

    from gpuparity.models.fp8 import FP8Linear

    torch.manual_seed(0)
    lin = torch.nn.Linear(256, 128, bias=True).to(torch.bfloat16)
    x = torch.randn(2, 5, 256, dtype=torch.bfloat16)
    q = FP8Linear(lin, torch.float8_e4m3fn, rowwise=True)
    with torch.no_grad():
        got, ref = q(x), lin(x).double()
    assert got.shape == (2, 5, 128) and got.dtype == torch.bfloat16
    err = float((got.double() - ref).norm() / ref.norm())
    assert 1e-4 < err < 0.08                       # fp8 rounding of both operands, not garbage and not bf16


def test_repeat_until_stable_reports_why_it_stopped():
    from gpuparity.measure.loop import LoopConfig
    from gpuparity.workloads import llm
    from gpuparity.workloads.base import Context

    times = iter([0.1, 0.2] * 50)
    ctx = Context(fingerprint={}, device="cpu", loop=LoopConfig(min_samples=3, max_samples=6, min_time_s=0.0,
                                                                max_time_s=10.0, target_noise=0.01))
    reps, stop = llm.repeat_until_stable(lambda: {"decode_s": next(times), "prefill_s": 0.0}, ctx)
    assert len(reps) == 6 and stop == "max_samples"
    steady = Context(fingerprint={}, device="cpu", loop=LoopConfig(min_samples=6, max_samples=50, min_time_s=0.0,
                                                                   max_time_s=10.0, target_noise=0.01))
    reps, stop = llm.repeat_until_stable(lambda: {"decode_s": 0.1, "prefill_s": 0.0}, steady)
    assert len(reps) == 6 and stop is None
