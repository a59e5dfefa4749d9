"""SDPA workload: backend found by trying each in priority order, fwd/bwd checked against fp64."""

from __future__ import annotations

import math

import pytest
import torch

from gpuparity.measure.loop import LoopConfig
from gpuparity.platform.detect import fingerprint
from gpuparity.workloads import attention
from gpuparity.workloads.base import Context

TINY_LOOP = LoopConfig(warmup_s=0.01, min_samples=3, max_samples=5, min_time_s=0.01, max_time_s=0.3)


def ctx() -> Context:
    return Context(fingerprint=fingerprint(), device="cpu", loop=TINY_LOOP)


def params(**kw):
    p = {"batch": 1, "heads": 4, "kv_heads": 2, "seq": 128, "head_dim": 64, "causal": True, "pass": "fwd",
         "dtype": "fp32"}
    p.update(kw)
    return p


@pytest.mark.parametrize("kw", [{}, {"causal": False, "kv_heads": 4}, {"pass": "bwd"},
                                {"pass": "bwd", "causal": False, "head_dim": 128}])
def test_runs_and_checks(kw):
    p = params(**kw)
    result = attention.Attention().execute(p, ctx())
    assert result["status"] == "ok", result["reason"]
    assert result["info"]["backend"]
    assert result["info"]["gqa"] == ("enable_gqa" if p["kv_heads"] < p["heads"] else "none")
    assert result["work"]["flop"] == attention.attention_flop(p)


def test_flop_formula():
    p = params(causal=False)
    fwd = 4 * 1 * 4 * 128 * 128 * 64
    assert attention.attention_flop(p) == fwd
    assert attention.attention_flop(params()) == fwd / 2
    assert attention.attention_flop(params(**{"pass": "bwd"})) == fwd / 2 * 2.5


def test_backend_is_the_first_that_runs(monkeypatch):
    from torch.nn.attention import SDPBackend

    q = torch.randn(1, 2, 64, 32)
    order = attention.priority_order()
    assert attention.find_backend(q, q, q, True, False) in order
    # A backend that cannot run here is passed over; the next one is recorded.
    monkeypatch.setattr(attention, "priority_order",
                        lambda: [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH])
    assert attention.find_backend(q, q, q, True, False) == SDPBackend.MATH
    result = attention.Attention().execute(params(), ctx())
    assert result["info"]["backend"] == "math"


def test_reference_grad_matches_autograd():
    gen = torch.Generator().manual_seed(0)
    q, k, v, do = (torch.randn(48, 16, generator=gen, dtype=torch.float64) for _ in range(4))
    rows = torch.tensor([0, 5, 47])
    for causal in (True, False):
        qq = q.clone().requires_grad_(True)
        out = torch.nn.functional.scaled_dot_product_attention(qq[None], k[None], v[None], is_causal=causal)[0]
        (dq,) = torch.autograd.grad(out, qq, do)
        assert torch.allclose(attention._reference(q, k, v, rows, causal), out[rows].detach())
        assert torch.allclose(attention._reference(q, k, v, rows, causal, do), dq[rows])
        assert math.isfinite(float(dq.norm()))


def test_gpu_cases_sweep_long_sequences():
    fp = {"backend": "cuda", "arch_target": "sm_90", "spec": None}
    cases = attention.Attention().cases("standard", Context(fingerprint=fp, device="cuda"))
    assert max(c["seq"] for c in cases) == 16384 and min(c["seq"] for c in cases) == 1024
    assert {c["head_dim"] for c in cases} == {64, 128} and {c["pass"] for c in cases} == {"fwd", "bwd"}
    assert all(c["dtype"] == "bf16" for c in cases)


def test_gqa_falls_back_to_repeated_heads_when_fused_kernels_refuse(monkeypatch):
    from torch.nn.attention import SDPBackend

    real = attention.find_backend

    def no_fused_gqa(q, k, v, causal, gqa):
        return SDPBackend.MATH if gqa else real(q, k, v, causal, gqa)

    monkeypatch.setattr(attention, "find_backend", no_fused_gqa)
    for pas in ("fwd", "bwd"):
        result = attention.Attention().execute(params(**{"pass": pas}), ctx())
        assert result["status"] == "ok", result["reason"]
        assert result["info"]["gqa"] == "repeated kv heads"
        assert result["info"]["backend"] != "math"
