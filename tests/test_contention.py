"""The machine's state as evidence: a busy CPU, other processes on the GPU, a GPU in use before the
run, thermal throttling while timed make a run (or a result) contended, and a comparison with a
contended side never says faster or slower.

GPU paths run against a management-library stand-in (the sampler's input); the CPU path runs a
real `gpuparity run` beside two real CPU-bound processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from test_compare import main_inprocess, make_result, make_run, noisy

from gpuparity.comparison.compare import compare_runs
from gpuparity.measure.energy import Sample
from gpuparity.measure.telemetry import NullSampler, ThreadedSampler
from gpuparity.platform.machine import (
    BUSY_SHARE,
    WIDEN_SHARE,
    assess,
    contention_lines,
    mark_contention,
    result_throttle,
    run_cpu_share,
    snapshot,
)
from gpuparity.results.document import validate_document


class UsedGpu:
    """A management library stand-in: one device with the given processes and utilisation."""

    method = "test"
    devices = [{"index": 0, "name": "gpu0", "wrap_j": None, "max_sm_mhz": 2100}]

    def __init__(self, pids, util):
        self.pids, self.util = pids, util

    def describe(self):
        return {}

    def read(self, k):
        return Sample(t=0.0, power_w=300.0, sm_mhz=1900.0, temp_c=55.0)

    def use(self, k):
        # sorted, as the NVML and amdsmi samplers give them (the neighbour's pid may be lower than ours)
        return {"pids": sorted(self.pids) if self.pids is not None else None, "util_pct": self.util}


@pytest.fixture
def neighbour():
    """A real other process (its pid exists here, as a co-tenant's would)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def doc_with(start: dict, end: dict, results: list | None = None) -> dict:
    return {"machine": {"start": start, "end": end}, "results": results or []}


def gpu_only(sampler) -> dict:
    """A snapshot without the CPU counters: this machine's other users must not decide a GPU test."""
    return dict(snapshot(sampler, window_s=0.0), cpu_ticks=None)


def test_another_process_on_the_gpu_or_a_busy_gpu_contends_the_run(neighbour):
    busy = ThreadedSampler(UsedGpu([os.getpid(), neighbour], 3.0))
    start = gpu_only(busy)
    assert start["gpu_use"] == [{"pids": sorted([os.getpid(), neighbour]), "util_pct": 3.0}]
    found = assess(doc_with(start, gpu_only(busy)))
    assert found["contended"] and any(f"pid {neighbour}" in r and "at start" in r for r in found["reasons"])
    # our own process alone is not contention; a GPU 90% busy before we start is
    quiet = ThreadedSampler(UsedGpu([os.getpid()], 0.0))
    assert not assess(doc_with(gpu_only(quiet), gpu_only(quiet)))["contended"]
    hot = ThreadedSampler(UsedGpu([], 90.0))
    found = assess(doc_with(gpu_only(hot), gpu_only(quiet)))
    assert found["reasons"] == ["GPU 0 90% busy just before the run started"]
    # pids from another pid namespace (a container): ours is not listed, theirs do not exist here
    foreign = ThreadedSampler(UsedGpu([4_000_000], 0.0))
    assert not assess(doc_with(gpu_only(foreign), gpu_only(foreign)))["contended"]
    # a serving run measures a server that is another process on the GPU by design
    assert not assess(doc_with(start, start), external=True)["contended"]
    # no management library: nothing read, nothing claimed
    assert snapshot(NullSampler("no NVML"), 0.0)["gpu_use"] is None
    assert ThreadedSampler(UsedGpu(None, None)).device_use() == [{"pids": None, "util_pct": None}]


def test_the_cpu_share_of_others_over_the_run():
    start = {"cpu_ticks": {"busy": 1000.0, "total": 5000.0, "own": 100.0}}
    end = {"cpu_ticks": {"busy": 2600.0, "total": 7000.0, "own": 700.0}}     # 1600 busy, 600 ours, of 2000
    assert run_cpu_share(start, end) == pytest.approx(0.5)
    found = assess(doc_with(start, end))
    assert found["contended"] and found["other_cpu_share"] == pytest.approx(0.5) and found["threshold"] == BUSY_SHARE
    assert "50% of the CPUs during the run" in found["reasons"][0]
    quiet_end = {"cpu_ticks": {"busy": 1700.0, "total": 7000.0, "own": 700.0}}
    assert not assess(doc_with(start, quiet_end))["contended"]
    assert not assess(doc_with(start, end), distributed=True)["contended"]     # the other ranks are ours
    assert run_cpu_share({}, end) is None and not assess(doc_with({}, {}))["contended"]


def test_thermal_throttling_while_timed_flags_that_result():
    hot = make_result("gemm", {"m": 1}, noisy(100, 0.01, 9, 1))
    hot["telemetry"] = {"valid": True, "throttle_reasons": {"thermal": 0.4, "power": 1.0}}
    capped = make_result("gemm", {"m": 2}, noisy(100, 0.01, 9, 2))
    capped["telemetry"] = {"valid": True, "throttle_reasons": {"power": 1.0}}      # power cap: the platform
    per_trial = make_result("gemm", {"m": 3}, noisy(100, 0.01, 9, 3))
    per_trial["telemetry"] = {"per_trial": [{"throttle_reasons": {}}, {"throttle_reasons": {"hw_slowdown": 0.5}}]}
    assert result_throttle(hot) == ["thermal"] and result_throttle(capped) == [] and \
        result_throttle(per_trial) == ["hw_slowdown"]
    doc = make_run([hot, capped, per_trial])
    doc["machine"] = {"start": {}, "end": {}}
    found = mark_contention(doc)
    assert not found["contended"] and found["throttled_results"] == 2
    assert ["contended" in r["flags"] for r in doc["results"]] == [True, False, True]
    validate_document(doc, "run")         # the schema takes the machine section and the flag


def test_a_contended_side_is_named_and_never_faster_or_slower(tmp_path):
    a = make_run([make_result("gemm", {"m": m}, noisy(100, 0.005, 30, m)) for m in range(4)])
    b = make_run([make_result("gemm", {"m": m}, noisy(300, 0.005, 30, 10 + m)) for m in range(4)], run_id="b")
    assert {r["verdict"] for r in compare_runs([a], [b])["rows"]} == {"faster"}
    b["machine"] = {"start": {}, "end": {}, "contention": {"contended": True,
                                                          "reasons": ["other processes used 80% of the CPUs"]}}
    for r in b["results"]:
        r["flags"] = ["contended"]
    out = compare_runs([a], [b])
    assert {r["verdict"] for r in out["rows"]} == {"inconclusive"}
    assert out["geomean"]["kernel"]["verdict"] == "inconclusive"
    assert out["contended"] == [{"side": "B", "reasons": ["other processes used 80% of the CPUs"], "runs": ["b"]}]
    assert out["sides"]["b"]["contended"] and not out["sides"]["a"]["contended"]
    assert any(n.startswith("side B was contended") for n in out["notes"])
    assert out["counts"]["faster"] == 0 and out["counts"]["inconclusive"] == 4
    assert "contended" in out["rows"][0]["flags"]


def test_two_runs_beside_the_same_load_name_it_once(tmp_path):
    a = make_run([make_result("gemm", {"m": 0}, noisy(100, 0.005, 30, 0))])
    reason = "other processes used 50% of the CPUs it could use in the median timed window"
    bs = [make_run([make_result("gemm", {"m": 0}, noisy(100, 0.005, 30, 1 + i))], run_id=f"b{i}") for i in range(2)]
    for b in bs:
        b["machine"] = {"start": {}, "end": {}, "contention": {"contended": True, "reasons": [reason]}}
    text = compare_runs([a], bs)["sides"]["b"]["load"]["text"]
    assert text.count(reason) == 1 and text.endswith("no faster/slower verdict"), text


def busy_loops(n: int = 2) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def test_a_run_beside_two_busy_processes_is_contended_and_compare_says_so(cli, tmp_path, capsys):
    db = str(tmp_path / "s.db")
    r = cli("run", "gemm", "--dtype", "fp64", "--db", db, "--label", "first")
    assert r.returncode == 0, r.stderr
    loops = busy_loops()
    try:
        time.sleep(0.5)
        r = cli("run", "gemm", "--dtype", "fp64", "--db", db, "--label", "busy")
    finally:
        for p in loops:
            p.kill()
            p.wait()
    assert r.returncode == 0, r.stderr
    assert "contended: other processes used" in r.stdout + r.stderr
    shown = json.loads(cli("show", "latest", "--json", "--db", db).stdout)
    found = shown["machine"]["contention"]
    assert found["contended"] and found["other_cpu_share"] > BUSY_SHARE
    assert all("contended" in x["flags"] for x in shown["results"] if x["status"] == "ok")
    ids = [x["run_id"] for x in json.loads(cli("list", "--json", "--db", db).stdout)]
    busy_id = shown["run_id"]
    first_id = next(i for i in ids if i != busy_id)
    code, out, err = main_inprocess(["compare", first_id, busy_id, "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert "B" in [c["side"] for c in doc["contended"]] and doc["sides"]["b"]["contended"]
    assert not {r["verdict"] for r in doc["rows"]} & {"faster", "slower"}
    assert not {g["verdict"] for g in doc["geomean"].values()} & {"faster", "slower"}
    code, out, err = main_inprocess(["compare", first_id, busy_id, "--db", db], capsys)
    assert code == 0 and "side B was contended" in out.replace("\n", " ")
    code, out, err = main_inprocess(["report", first_id, busy_id, "--db", db, "-f", "markdown", "--no-claims"], capsys)
    assert code == 0 and "side B was contended" in out.replace("\n", " ")
    import gpuparity

    df = gpuparity.compare(first_id, busy_id, db=db)
    assert "B" in [c["side"] for c in df.attrs["contended"]] and df.attrs["counts"]["faster"] == 0


def test_nvml_and_amdsmi_readers_of_processes_and_utilisation():
    """The vendor readers behind device_use, on library stand-ins (the real libraries need a GPU):
    what they return, and None (unknown, never 'no process') when the library cannot list."""
    from types import SimpleNamespace

    from gpuparity.measure.samplers import AmdsmiSource, NvmlSource

    class Nvml:
        def nvmlDeviceGetComputeRunningProcesses(self, h):
            return [SimpleNamespace(pid=41), SimpleNamespace(pid=7)]

        def nvmlDeviceGetGraphicsRunningProcesses(self, h):
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

        def nvmlDeviceGetUtilizationRates(self, h):
            return SimpleNamespace(gpu=37, memory=5)

    nv = object.__new__(NvmlSource)
    nv.nv, nv.handles = Nvml(), ["h0"]
    assert nv.use(0) == {"pids": [7, 41], "util_pct": 37.0}
    nv.nv = SimpleNamespace()          # a driver without either call
    assert nv.use(0) == {"pids": None, "util_pct": None}

    class Amd:
        def amdsmi_get_gpu_process_list(self, h):
            return [{"pid": 12, "name": "python"}, "handle-9", {"pid": "bad"}]

        def amdsmi_get_gpu_process_info(self, h, p):
            return {"pid": 9}

        def amdsmi_get_gpu_activity(self, h):
            return {"gfx_activity": 64, "umc_activity": "N/A"}

    amd = object.__new__(AmdsmiSource)
    amd.smi, amd.handles = Amd(), ["h0"]
    assert amd.use(0) == {"pids": [9, 12], "util_pct": 64.0}


def throttled_pair(why: list | None) -> tuple[dict, dict]:
    """Run 'a' and run 'b' (3x faster) of 2 kernels; B's first kernel flagged throttled with the
    loop's recorded reasons `why` (None: none recorded)."""
    a = make_run([make_result("gemm", {"m": m}, noisy(100, 0.005, 30, m)) for m in range(2)])
    b = make_run([make_result("gemm", {"m": m}, noisy(300, 0.005, 30, 10 + m), flags=["throttled"] if m == 0 else None,
                              info={"throttle_reasons_seen": why} if m == 0 and why is not None else None)
                  for m in range(2)], run_id="b", started_at="2026-01-02T00:00:00+00:00")
    return a, b


@pytest.mark.parametrize("why, held", [
    (["device 0: thermal throttling, SM clock 900 MHz < 0.75 x 1980 MHz"], True),
    (["device 0: power/hw_slowdown throttling, SM clock 900 MHz < 0.75 x 1980 MHz"], True),
    (None, True),           # reasons not recorded: it cannot be shown to be the power cap
    (["device 0: power throttling, SM clock 1200 MHz < 0.75 x 1980 MHz",
      "device 0: power/current throttling, SM clock 1300 MHz < 0.75 x 1980 MHz"], False),
])
def test_a_result_throttled_by_heat_is_held_and_one_at_its_power_cap_is_not(tmp_path, capsys, why, held):
    """A result timed while the driver reported thermal or hardware-slowdown throttling says how
    hot this box was, not how fast the platform is: at most inconclusive, from documents and from
    the store alike. Power capping alone is the GPU's steady state under load: its verdict stands."""
    a, b = throttled_pair(why)
    out = compare_runs([a], [b])
    verdicts = [r["verdict"] for r in out["rows"]]
    assert verdicts == (["inconclusive", "faster"] if held else ["faster", "faster"]), out["rows"]
    assert out["rows"][0]["held"] == ("throttled (heat, hardware or unknown)" if held else None)
    assert any("throttled while timed by heat" in n for n in out["notes"]) == held
    db = str(tmp_path / "s.db")
    from gpuparity.results.store import Store

    with Store(db) as s:
        s.save_run(a)
        s.save_run(b)
    code, text, err = main_inprocess(["compare", "run-a", "b", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    assert [r["verdict"] for r in json.loads(text)["rows"]] == verdicts


# -- graded, per timed window (issue 36) ------------------------------------------------------------
def windowed(share: float | None, wait: float = 0.0, category: str = "kernel", pid: int | None = None,
             m: int = 1) -> dict:
    """A result whose 3 trial windows read `share` of the CPUs taken by others (measure/load.py's
    fields), its threads waiting `wait`, and, given a pid, that process on the GPU as they opened."""
    r = make_result("gemm", {"m": m}, noisy(100, 0.01, 9, m), category=category)
    cpu = {"other_share": share, "wait_share": wait, "own_cpus": 0.8, "cpus": 2, "window_s": 1.0}
    use = {"start": [{"pids": [os.getpid()] + ([pid] if pid else []), "util_pct": 90.0}], "end": None}
    r["telemetry"] = {"per_trial": [{"cpu": cpu, "gpu_use": use} for _ in range(3)]}
    return r


def graded(results: list[dict], **kw) -> tuple[dict, dict]:
    doc = make_run(results)
    doc["machine"] = {"start": {}, "end": {}}
    return mark_contention(doc, **kw), doc


def test_each_result_is_graded_by_its_own_timed_windows():
    """Below 5% of the CPUs: quiet; 5-15%: busy (kept, its intervals widen in compare); above 15%:
    contended (flagged); the run is contended when its median window is. 24% is contended now
    (25% was the line, over a whole-run average)."""
    assert (WIDEN_SHARE, BUSY_SHARE) == (0.05, 0.15)
    found, doc = graded([windowed(0.02, m=1), windowed(0.10, m=2), windowed(0.24, m=3)])
    assert not found["contended"] and found["grade"] == "contended" and found["windows"]["n"] == 9
    assert found["windows"]["max"] == pytest.approx(0.24) and found["windows"]["median"] == pytest.approx(0.10)
    keys = [r["key"] for r in doc["results"]]
    assert found["loaded"] == {keys[1]: pytest.approx(0.10), keys[2]: pytest.approx(0.24)}
    assert ["contended" in r["flags"] for r in doc["results"]] == [False, False, True]
    lines = contention_lines(doc)
    assert lines[0].startswith("CPU load by others while timed: median 10%, max 24% of the CPUs it could use")
    assert "intervals widened from 5%, no verdict above 15%" in lines[0]
    found, doc = graded([windowed(0.24, m=m) for m in range(3)])
    assert found["contended"] and "24% of the CPUs it could use in the median timed window" in found["reasons"][0]
    assert all("contended" in r["flags"] for r in doc["results"])
    # our threads waiting for a CPU count as much as others' use of it
    found, _ = graded([windowed(0.0, wait=0.4, m=m) for m in range(3)])
    assert found["contended"]
    validate_document(doc, "run")


def test_a_serving_result_is_graded_by_its_clients_wait_and_its_cpu_is_measured_apart():
    """A serving run's server is another process by design: its CPU use (other_share) does not
    grade a serving result, the client's threads waiting for a CPU do; the client's own CPU use is
    recorded. Other results of the same run keep the whole check."""
    found, doc = graded([*(windowed(0.60, category="serving", m=m) for m in range(3)), windowed(0.60, m=9)],
                        external=True)
    assert found["client_cpus"] == pytest.approx(0.8) and not found["contended"]
    assert ["contended" in r["flags"] for r in doc["results"]] == [False, False, False, True]
    assert "the serving client used up to 0.8 CPUs" in contention_lines(doc)[0]
    found, doc = graded([windowed(0.0, wait=0.3, category="serving", m=1)], external=True)
    assert "contended" in doc["results"][0]["flags"]


def test_another_process_on_the_gpu_while_timed_contends(neighbour):
    """GPU co-tenants are read as each timed window opens and closes, not only at the run's ends."""
    found, doc = graded([windowed(0.0, pid=neighbour)])
    assert found["contended"] and any(f"pid {neighbour}" in r and "a timed window" in r for r in found["reasons"])
    assert "contended" in doc["results"][0]["flags"]
    assert not graded([windowed(0.0)])[0]["contended"]
    assert not graded([windowed(0.0, pid=neighbour)], external=True)[0]["contended"]     # a server's GPU


def test_samplers_read_the_load_of_each_timed_window(neighbour):
    """Every sampler records the window's CPU load and the device's processes at its two ends."""
    null = NullSampler("no library")
    null.start()
    out = null.stop()
    assert set(out["cpu"]) == {"other_share", "wait_share", "own_cpus", "cpus", "window_s"}
    sampler = ThreadedSampler(UsedGpu([os.getpid(), neighbour], 50.0))
    sampler.start()
    time.sleep(0.05)
    out = sampler.stop()
    assert out["gpu_use"]["start"] == out["gpu_use"]["end"] == [{"pids": sorted([os.getpid(), neighbour]),
                                                                  "util_pct": 50.0}]
    assert out["cpu"]["cpus"] >= 1


def test_a_neighbour_on_our_cpu_is_read_as_other_share_and_as_our_wait():
    """measure/load.py on a real neighbour: this process and a busy loop pinned to one CPU. While we
    sleep the neighbour takes that CPU (other_share); while we spin too, we wait for it (wait_share)."""
    from gpuparity.measure.load import CpuWindow

    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    mine = os.sched_getaffinity(0)
    cpu = min(mine)
    loop = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.3)
        w = CpuWindow()
        time.sleep(1.0)
        idle = w.stop()
        w = CpuWindow()
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            pass
        spin = w.stop()
    finally:
        os.sched_setaffinity(0, mine)
        loop.kill()
        loop.wait()
    assert idle["cpus"] == 1 and idle["other_share"] > 0.5, idle
    assert spin["wait_share"] > 0.2 and spin["own_cpus"] < 0.9, spin


def test_store_reads_find_a_busy_run_in_its_document_and_name_the_load(tmp_path, capsys):
    """A run whose document says it was contended (or busy) is found by a store read whether or not
    its results carry the flag; documents graded before windows were read (a whole-run share only,
    at 20%) are regraded on today's threshold; the load is named beside the figure in every view."""
    from test_compare import main_inprocess

    from gpuparity.results.store import Store

    db = str(tmp_path / "s.db")
    a = make_run([make_result("gemm", {"m": m}, noisy(100, 0.005, 30, m)) for m in range(3)])
    busy = make_run([windowed(0.10, m=m) for m in range(3)], run_id="busy", started_at="2026-01-02T00:00:00+00:00")
    busy["machine"] = {"start": {}, "end": {}}
    mark_contention(busy)
    old = make_run([make_result("gemm", {"m": m}, noisy(300, 0.005, 30, 10 + m)) for m in range(3)], run_id="old",
                   started_at="2026-01-03T00:00:00+00:00")
    old["machine"] = {"contention": {"contended": False, "reasons": [], "other_cpu_share": 0.20, "threshold": 0.25}}
    quiet = make_run([windowed(0.02, m=m) for m in range(3)], run_id="quiet", started_at="2026-01-04T00:00:00+00:00")
    quiet["machine"] = {"start": {}, "end": {}}
    mark_contention(quiet)
    with Store(db) as s:
        for d in (a, busy, old, quiet):
            s.save_run(d)
    code, out, err = main_inprocess(["compare", "run-a", "busy", "--db", db, "-f", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and not doc["contended"] and {r["b_load"] for r in doc["rows"]} == {0.1}, err
    assert "up to 10% of the CPUs" in doc["sides"]["b"]["load"]["text"]
    code, out, err = main_inprocess(["compare", "busy", "run-a", "--db", db, "-f", "json"], capsys)
    assert json.loads(out)["sides"]["b"]["load"]["text"] is None        # no windows read: nothing to name
    code, out, err = main_inprocess(["compare", "run-a", "quiet", "--db", db, "-f", "json"], capsys)
    assert json.loads(out)["sides"]["b"]["load"]["text"] == ("CPU load beside its results: under 5% of the CPUs "
                                                             "(at most 2% in 9 timed window(s))")
    for fmt in ("table", "markdown"):
        code, out, err = main_inprocess(["compare", "run-a", "busy", "--db", db, "-f", fmt], capsys)
        text = " ".join(out.split())
        assert code == 0 and "timed beside other load (up to 10% of its CPUs)" in text and "10%" in text, out
    code, out, err = main_inprocess(["compare", "run-a", "old", "--db", db, "-f", "json"], capsys)
    doc = json.loads(out)
    assert doc["contended"] and "20% of the CPUs during the run" in doc["contended"][0]["reasons"][0]
    assert not {r["verdict"] for r in doc["rows"]} & {"faster", "slower"}
    code, out, err = main_inprocess(["show", "busy", "--db", db], capsys)
    assert code == 0 and "CPU load by others while timed: median 10%" in " ".join(out.split()), out
