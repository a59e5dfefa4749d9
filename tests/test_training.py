"""Training step: the reusable pieces learn, the FLOPs formula is the documented one, MFU is filled."""

from __future__ import annotations

import pytest


def test_train_step_learns_a_fixed_batch():
    from gpuparity.workloads.training import (
        TrainConfig,
        build_model,
        make_optimizer,
        synthetic_batch,
        train_step,
    )

    cfg = TrainConfig(hidden=64, layers=2, heads=4, vocab=512, seq=32, batch=2, lr=3e-3)
    model = build_model(cfg, "cpu")
    opt = make_optimizer(model, cfg)
    batch = synthetic_batch(cfg, "cpu")
    losses = [float(train_step(model, opt, batch, "fp32")) for _ in range(8)]
    assert losses[-1] < losses[0] - 0.5


def test_flops_per_token_formula():
    import torch

    from gpuparity.workloads.training import TrainConfig, build_model, flops_per_token

    cfg = TrainConfig(hidden=64, layers=3, heads=4, ffn=128, vocab=100, seq=50, batch=1)
    model = build_model(cfg, "cpu")
    d, f, v, L, T = 64, 128, 100, 3, 50
    per_layer = 4 * d * d + 3 * d * f          # q, k, v, o (no GQA) + gate, up, down
    n_matmul = L * per_layer + d * v           # + lm_head; the embedding lookup is not a matmul
    assert sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear)) == n_matmul
    assert flops_per_token(model, cfg) == 6 * n_matmul + 12 * L * d * T


@pytest.mark.parametrize("checkpointing", [False, True])
def test_training_workload_fills_mfu_and_memory(checkpointing):
    from gpuparity.execute.runner import build_context
    from gpuparity.workloads.training import Training

    ctx = build_context("quick", {"hidden": "64", "layers": "2", "seq": "32", "vocab": "512",
                                  "checkpointing": str(int(checkpointing))})
    w = Training()
    (params,) = w.cases("quick", ctx)
    assert params["checkpointing"] is checkpointing and params["hidden"] == 64
    r = w.execute(params, ctx)
    assert r["status"] == "ok", r["reason"]
    assert r["work"]["flop"] == r["info"]["flops_per_token"] * params["batch"] * params["seq"]
    assert r["derived"]["mfu"] == pytest.approx(r["derived"]["tflops"] / r["derived"]["peak"]["value"])
    assert r["derived"]["memory_source"].startswith("ru_maxrss")
    assert "finite" in r["info"]["check"]


def test_bad_training_option_is_a_user_error(cli, tmp_db):
    p = cli("run", "training", "--set", "hidden=abc", "--no-store")
    assert p.returncode == 2 and "hidden" in p.stderr
