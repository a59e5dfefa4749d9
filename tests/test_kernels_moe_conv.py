"""MoE layer (grouped and per-expert paths agree, checked against fp64) and conv2d fwd/bwd."""

from __future__ import annotations

import pytest
import torch

from gpuparity.measure.loop import LoopConfig
from gpuparity.platform.detect import fingerprint
from gpuparity.workloads import conv, moe
from gpuparity.workloads.base import Context

TINY_LOOP = LoopConfig(warmup_s=0.01, warmup_max_s=0.05, min_samples=3, max_samples=5, min_time_s=0.01,
                       max_time_s=0.3, min_block_s=0.0)


def ctx() -> Context:
    return Context(fingerprint=fingerprint(), device="cpu", loop=TINY_LOOP)


def moe_params(**kw):
    p = {"preset": "deepseek-v3", "tokens": 32, "experts": 16, "top_k": 4, "hidden": 64, "ffn": 32,
         "shared": 1, "dtype": "fp32"}
    p.update(kw)
    return p


def test_moe_grouped_and_loop_paths(monkeypatch):
    p = moe_params()
    grouped = moe.MoE().execute(p, ctx())
    assert grouped["status"] == "ok", grouped["reason"]
    assert grouped["info"]["expert_gemm"] == "torch._grouped_mm"
    assert grouped["work"] == {"flop": moe.moe_flop(p), "tokens": 32.0}
    assert grouped["derived"]["tokens_per_s"] > 0 and grouped["derived"]["tflops"] > 0
    monkeypatch.setattr(moe, "group_align", lambda dtype, device: (0, "probe refused"))
    looped = moe.MoE().execute(p, ctx())
    assert looped["status"] == "ok", looped["reason"]
    assert looped["info"]["expert_gemm"] == "per-expert loop (probe refused)"


def test_moe_gemm_rows_equal_routed_rows():
    """DeepSeek-V3-like routing at 32 tokens x top-4: the grouped GEMMs multiply 128 rows, no padding."""
    result = moe.MoE().execute(moe_params(), ctx())
    assert result["status"] == "ok", result["reason"]
    assert result["info"]["group_align_rows"] == 1 and result["info"]["routed_rows"] == 32 * 4
    assert result["info"]["check"].endswith("expert GEMM rows 128 for 128 routed")


def test_group_layout_ends_each_group_at_its_own_rows():
    counts = torch.tensor([3, 0, 17, 1, 0, 8])
    ends, starts = moe.group_layout(counts, 1)
    assert ends.tolist() == [3, 3, 20, 21, 21, 29] and int(ends[-1]) == int(counts.sum())
    ends, starts = moe.group_layout(counts, 16)
    assert ends.tolist() == [16, 16, 48, 64, 64, 80]          # padded groups; the last ends at its own padding
    assert starts.tolist() == [0, 16, 16, 48, 64, 64]
    bound = int(counts.sum()) + len(counts) * 15               # the static buffer the padded path allocates
    assert int(ends[-1]) < bound                               # spare rows past the last group are never multiplied


def test_moe_padded_groups_are_exact(monkeypatch):
    """The padded group layout (devices that want aligned group starts), exercised on the CPU, matches fp64."""
    monkeypatch.setattr(moe, "group_align", lambda dtype, device: (16, ""))
    prepared = moe.prepare_moe(moe_params(), ctx())
    assert prepared.info["group_align_rows"] == 16
    ok, detail = prepared.check()
    assert ok, detail
    rows = int(detail.rsplit("expert GEMM rows ", 1)[1].split()[0])
    assert 128 < rows < 128 + 16 * 15 + 16                    # routed rows plus at most 15 per expert


def test_grouped_mm_probe_uses_unaligned_groups():
    assert moe.grouped_mm_status(torch.float32, "cpu", 1) == (True, "")
    assert moe.group_align(torch.float32, "cpu") == (1, "")


def test_moe_flop_counts_routed_and_shared_work():
    p = moe_params()
    t, h, f = 32, 64, 32
    assert moe.moe_flop(p) == 2 * t * h * 16 + 6 * t * h * f * (4 + 1)


def test_moe_cases_keep_real_shapes_on_gpu():
    fp = {"backend": "cuda", "arch_target": "sm_90", "spec": None}
    cases = moe.MoE().cases("standard", Context(fingerprint=fp, device="cuda"))
    ds = [c for c in cases if c["preset"] == "deepseek-v3"][0]
    assert (ds["experts"], ds["top_k"], ds["hidden"], ds["ffn"], ds["shared"]) == (256, 8, 7168, 2048, 1)
    mx = [c for c in cases if c["preset"] == "mixtral-8x7b"][0]
    assert (mx["experts"], mx["top_k"], mx["hidden"], mx["ffn"]) == (8, 2, 4096, 14336)


@pytest.mark.parametrize("cl,pas", [(True, "fwd"), (False, "fwd"), (True, "bwd"), (False, "bwd")])
def test_conv_runs_and_checks(cl, pas):
    p = {"net": "resnet50", "layer": "res2_3x3", "batch": 2, "cin": 16, "cout": 32, "hw": 14, "kernel": 3,
         "stride": 1, "channels_last": cl, "pass": pas, "dtype": "fp32"}
    result = conv.Conv().execute(p, ctx())
    assert result["status"] == "ok", result["reason"]
    assert result["info"]["memory_format"] == ("channels_last" if cl else "NCHW")
    fwd = 2.0 * 2 * 32 * 14 * 14 * 16 * 9
    assert result["work"]["flop"] == fwd * (2 if pas == "bwd" else 1)


def test_conv_strided_flop():
    p = {"batch": 1, "cin": 3, "cout": 64, "hw": 224, "kernel": 7, "stride": 2, "pass": "fwd"}
    assert conv.conv_flop(p) == 2.0 * 64 * 112 * 112 * 3 * 49
    out = torch.nn.functional.conv2d(torch.zeros(1, 3, 224, 224), torch.zeros(64, 3, 7, 7), stride=2, padding=3)
    assert out.shape[-1] == conv.conv_out(224, 7, 2)


@pytest.mark.parametrize("sets, pairs", [
    ({}, {("resnet50", "conv1"), ("resnet50", "res2_3x3"), ("resnet50", "res2_1x1"), ("resnet50", "res4_3x3"),
          ("unet", "down1"), ("unet", "down2"), ("unet", "mid")}),
    ({"net": "unet"}, {("unet", "down1"), ("unet", "down2"), ("unet", "mid")}),
    ({"layer": "mid"}, {("unet", "mid")}),
    ({"net": "resnet50", "layer": "res5_3x3"}, {("resnet50", "res5_3x3")}),
])
def test_conv_net_and_layer_name_the_shape_measured(sets, pairs):
    """--set net= / layer= pick layers: every planned case has the shape its labels name (a
    relabelled shape would be stored as another network's layer)."""
    from gpuparity.execute.plan import cases_for, spec_context

    cases = [c.params for c in cases_for(["conv"], "standard", spec_context("h100-sxm", "standard", sets), sets)]
    assert {(p["net"], p["layer"]) for p in cases} == pairs
    for p in cases:
        assert (p["cin"], p["cout"], p["hw"], p["kernel"], p["stride"]) == conv.LAYERS[p["net"]][p["layer"]], p
        assert p["batch"] == conv.BATCH[p["net"]]
