"""Collectives: nccl-tests bandwidth factors, and a real 2-rank gloo job under torchrun stored in SQLite.

The same job also runs the scaling workload (1 rank, then 2 with DDP): its checks are here too,
so that CI pays for one torchrun start.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from gpuparity.errors import UserError
from gpuparity.platform import dist
from gpuparity.results.store import Store
from gpuparity.workloads.base import Context
from gpuparity.workloads.collectives import OPS, Collectives, bandwidths, bus_factor, parse_bytes, sizes


def torchrun_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("torchrun")
    return [str(exe)] if exe.exists() else [shutil.which("torchrun") or "torchrun"]


@pytest.fixture(scope="session")
def comm_job(tmp_path_factory):
    """One real `torchrun --nproc-per-node 2 -m gpuparity run collectives scaling --suite comm` job (gloo)."""
    d = tmp_path_factory.mktemp("comm")
    db, out = str(d / "comm.db"), str(d / "run.json")
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env.update(GPUPARITY_SPOOL=str(d / "spool"), COLUMNS="200", OMP_NUM_THREADS="1")
    cmd = torchrun_cmd() + ["--nproc-per-node", "2", "--master-port", str(_free_port()), "-m", "gpuparity",
                            "run", "collectives", "scaling", "--suite", "comm", "--set", "max_bytes=4K",
                            "--db", db, "--json", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=env, cwd=str(d))
    return p, db, out


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bus_factors_are_nccl_tests_formulas():
    for n in (2, 3, 4, 8, 16, 64):
        assert bus_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
        for op in ("all_gather", "reduce_scatter", "all_to_all"):
            assert bus_factor(op, n) == pytest.approx((n - 1) / n)
        assert bus_factor("broadcast", n) == 1.0
    # 8 ranks, 1 GiB all_reduce in 10 ms: algbw = S/t, busbw = algbw * 2*7/8.
    algbw, busbw = bandwidths("all_reduce", 2**30, 0.010, 8)
    assert algbw == pytest.approx(2**30 / 0.010 / 1e9)
    assert busbw == pytest.approx(algbw * 1.75)
    with pytest.raises(ValueError):
        bus_factor("gather", 4)


def test_sizes_and_size_option():
    assert parse_bytes("64K") == 65536 and parse_bytes("4M") == 4 * 2**20 and parse_bytes("1G") == 2**30
    assert parse_bytes("1024") == 1024 and parse_bytes("2MiB") == 2 * 2**20
    for bad in ("lots", "-1K", "0"):
        with pytest.raises(UserError):
            parse_bytes(bad)
    assert sizes(1024, 4 * 2**20) == [1024 * 4**i for i in range(7)]


def test_one_process_records_a_skip_with_the_launch_line(monkeypatch):
    for var in ("WORLD_SIZE", "RANK", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    ctx = Context(fingerprint={}, device="cpu", suite="comm", options={})
    w = Collectives()
    cases = w.cases("comm", ctx)
    assert [c["op"] for c in cases] == list(OPS)
    result = w.execute(cases[0], ctx)
    assert result["status"] == "skipped" and "torchrun --nproc-per-node" in result["reason"]
    assert dist.init() is None and dist.reduce_max([1.0, 2.0]) == [1.0, 2.0]
    with pytest.raises(UserError):
        w.cases("comm", Context(fingerprint={}, device="cpu", options={"ops": "all_reduce,gather"}))


def test_topology_never_raises_without_a_gpu():
    assert dist.topology("cpu")["unknown"] == "no GPU"
    for backend in ("cuda", "rocm"):  # no NVML / amdsmi here: a reason, not an exception
        topo = dist.topology(backend)
        assert isinstance(topo, dict) and ("unknown" in topo or "links" in topo)


def test_torchrun_two_ranks_gloo_stores_one_run(comm_job):
    p, db, out = comm_job
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Traceback" not in p.stderr
    with Store(db) as store:
        assert store.count("runs") == 1  # rank 0 alone writes
        doc = store.get_run("latest")
    assert doc == json.loads(Path(out).read_text())
    shape = doc["fingerprint"]["distributed"]
    assert shape["world_size"] == 2 and shape["nodes"] == 1 and shape["backend"] == "gloo"
    coll = [r for r in doc["results"] if r["workload"] == "collectives"]
    assert sorted({r["params"]["op"] for r in coll}) == sorted(OPS)
    assert sorted({r["params"]["bytes"] for r in coll}) == [1024, 4096]
    for r in coll:
        assert r["status"] == "ok", (r["params"], r["reason"])
        assert r["params"]["ranks"] == 2 and r["info"]["world_size"] == 2
        assert "exact" in r["info"]["check"]
        median = r["summary"]["median"]
        assert len(r["samples"]) == r["summary"]["n"] >= 2 and median > 0
        d = r["derived"]
        assert r["metric"]["unit"] == "GB/s"
        assert r["metric"]["value"] == pytest.approx(r["work"]["bytes"] / median / 1e9)
        # The metric is the bus bandwidth (work = bus bytes); algbw is the per-rank buffer over time.
        assert d["busbw_gbs"] == pytest.approx(r["metric"]["value"])
        assert d["busbw_gbs"] == pytest.approx(d["algbw_gbs"] * bus_factor(r["params"]["op"], 2))
        assert r["info"]["peak_kind"] == "bytes:interconnect"
        assert d["latency_us"] == pytest.approx(median * 1e6)
    # The results table holds one row per result with the bus-bandwidth figure.
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT status, unit FROM results WHERE workload = 'collectives'").fetchall()
    assert len(rows) == len(coll) and set(rows) == {("ok", "GB/s")}


def test_scaling_two_ranks_against_the_one_rank_baseline(comm_job):
    p, db, _ = comm_job
    assert p.returncode == 0, p.stderr[-3000:]
    with Store(db) as store:
        doc = store.get_run("latest")
    runs = {r["params"]["ranks"]: r for r in doc["results"] if r["workload"] == "scaling"}
    assert sorted(runs) == [1, 2]
    one, two = runs[1], runs[2]
    assert one["status"] == two["status"] == "ok", (one["reason"], two["reason"])
    assert one["info"]["ddp"] is False and two["info"]["ddp"] is True
    assert two["work"]["tokens"] == 2 * one["work"]["tokens"]
    base = one["derived"]["tokens_per_s"]
    assert two["derived"]["baseline_tokens_per_s"] == pytest.approx(base)
    per_rank = two["derived"]["tokens_per_s"] / 2
    assert two["derived"]["tokens_per_s_per_rank"] == pytest.approx(per_rank)
    assert two["derived"]["weak_scaling_efficiency"] == pytest.approx(per_rank / base)


@pytest.mark.slow
def test_two_nodes_through_the_c10d_rendezvous(tmp_path):
    """The SLURM path: one torchrun agent per 'node' meeting at a c10d rendezvous endpoint."""
    db = str(tmp_path / "nodes.db")
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env.update(GPUPARITY_SPOOL=str(tmp_path / "spool"), OMP_NUM_THREADS="1")
    endpoint = f"127.0.0.1:{_free_port()}"
    cmd = torchrun_cmd() + ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-id", "t", "--rdzv-backend", "c10d",
                            "--rdzv-endpoint", endpoint, "-m", "gpuparity", "run", "collectives", "--suite", "comm",
                            "--set", "ops=all_reduce", "--set", "max_bytes=1K", "--db", db]
    agents = [subprocess.Popen(cmd, env=env, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True) for _ in range(2)]
    outs = [a.communicate(timeout=300) for a in agents]
    assert [a.returncode for a in agents] == [0, 0], outs[0][1][-2000:] + outs[1][1][-2000:]
    with Store(db) as store:
        assert store.count("runs") == 1
        doc = store.get_run("latest")
    shape = doc["fingerprint"]["distributed"]
    assert (shape["world_size"], shape["nodes"], shape["local_world_size"]) == (2, 2, 1)
    (r,) = doc["results"]
    assert r["status"] == "ok" and r["params"] == {"op": "all_reduce", "bytes": 1024, "ranks": 2, "nodes": 2,
                                                   "dtype": "fp32"}
    assert r["info"]["peak_kind"] == "bytes:nic" and "no peak" in r["info"]["peak_note"]   # not the NVLink figure
