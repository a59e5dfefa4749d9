"""gpuparity.load(): stored results as a DataFrame with platform columns."""

from __future__ import annotations

import pytest
from test_compare import make_result, make_run, noisy

import gpuparity
from gpuparity.errors import UserError
from gpuparity.platform.specs import all_specs
from gpuparity.results.store import Store


def test_load_dataframe_with_platform_columns_and_filters(tmp_path):
    db = str(tmp_path / "f.db")
    with Store(db) as s:
        s.save_run(make_run([make_result("gemm", {"m": 1024, "key": "x"}, noisy(500, 0.01, 5, 1)),
                             make_result("gemm", {"m": 2048}, [], status="failed", reason="oom")],
                            run_id="a", stack={"hip_version": "6.2", "rocm_version": "6.2.4"}))
        s.save_run(make_run([make_result("memory", {"op": "copy"}, noisy(3000, 0.01, 5, 2), unit="GB/s")],
                            run_id="b", spec_id="h100-sxm", started_at="2026-02-01T00:00:00+00:00",
                            stack={"cuda_version": "12.4"}))
    df = gpuparity.load(db=db)
    assert len(df) == 3
    for col in ("run_id", "started_at", "host", "vendor", "product", "spec_id", "stack", "torch", "workload",
                "category", "dtype", "status", "value", "unit", "pct_peak", "m", "op", "param_key"):
        assert col in df.columns, col
    ok = df[(df.workload == "gemm") & (df.status == "ok")].iloc[0]
    assert ok["pct_peak"] == pytest.approx(100 * ok["value"] / all_specs()["mi300x"]["bf16_tflops"])
    assert ok["stack"] == "rocm 6.2.4" and ok["m"] == 1024
    mem = df[df.workload == "memory"].iloc[0]
    assert mem["pct_peak"] == pytest.approx(100 * mem["value"] / (all_specs()["h100-sxm"]["memory_bw_tbs"] * 1000))
    assert list(gpuparity.load(db=db, gpu="h100").run_id) == ["b"]
    assert len(gpuparity.load(db=db, stack="rocm", status="ok")) == 1
    assert gpuparity.load(db=db, gpu="b200").empty
    with pytest.raises(UserError):
        gpuparity.load(db=db, colour="red")
