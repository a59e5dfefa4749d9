"""--profile: a Chrome trace per result and its top kernels; the kernel workloads through the CLI."""

from __future__ import annotations

import json
import os

from gpuparity.measure.loop import LoopConfig
from gpuparity.platform.detect import fingerprint
from gpuparity.workloads import gemm
from gpuparity.workloads.base import Context


def test_profile_writes_trace_and_top_kernels(tmp_path):
    ctx = Context(fingerprint=fingerprint(), device="cpu", profile_dir=str(tmp_path / "prof"),
                  loop=LoopConfig(warmup_s=0.01, min_samples=3, max_samples=5, min_time_s=0.01, max_time_s=0.3))
    result = gemm.Gemm().execute({"m": 128, "n": 128, "k": 128, "layout": "nn", "dtype": "fp32"}, ctx)
    assert result["status"] == "ok", result["reason"]
    top = result["info"]["top_kernels"]
    assert top and any("mm" in k["name"] for k in top)
    assert all(k["time_us_per_call"] > 0 and 0 < k["share"] <= 1 for k in top)
    with open(result["info"]["trace"]) as fh:
        assert "traceEvents" in json.load(fh)
    assert os.path.dirname(result["info"]["trace"]) == str(tmp_path / "prof")


def test_cli_fp8_runs_fp4_skips_with_profile(cli, tmp_db, tmp_path):
    out = tmp_path / "run.json"
    prof = tmp_path / "prof"
    proc = cli("run", "gemm", "--dtype", "fp8,fp4", "--profile", str(prof), "--json", str(out), "--no-store")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(out.read_text())["results"]
    fp8 = [r for r in results if r["dtype"] == "fp8" and not r["params"]["fast_accum"]]
    assert {r["params"]["scaling"] for r in fp8} == {"tensor", "row"}
    assert all(r["status"] == "ok" and r["info"]["top_kernels"] for r in fp8)
    fast = [r for r in results if r["dtype"] == "fp8" and r["params"]["fast_accum"]]   # a cuBLAS mode: not here
    assert len(fast) == 2 and all(r["status"] == "skipped" and "cuBLAS" in r["reason"] for r in fast)
    [fp4] = [r for r in results if r["dtype"] == "fp4"]
    assert fp4["status"] == "skipped" and "sm_100" in fp4["reason"]
    assert len(list(prof.glob("gemm-*.json"))) == 2


def test_cli_list_shows_kernel_workloads(cli):
    proc = cli("run", "--list")
    assert proc.returncode == 0, proc.stderr
    for name in ("gemm_search", "attention", "moe", "conv", "memory"):
        assert name in proc.stdout
