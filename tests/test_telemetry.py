"""Telemetry around measured windows: per-invocation energy, sampler choice, the real background
thread reading a real powercap-like file tree, --power-required, and the CLI storing telemetry."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from gpuparity.execute.runner import run_case
from gpuparity.measure.energy import DeviceTrace, Rules, Sample
from gpuparity.measure.loop import LoopConfig
from gpuparity.measure.samplers import RaplSource
from gpuparity.measure.telemetry import NullSampler, ThreadedSampler, open_sampler, summarize
from gpuparity.workloads.base import Context, Prepared, Workload


class PowercapTree:
    """A directory laid out like /sys/class/powercap whose package counter a thread advances at
    `watts`, wrapping at `range_j` like RAPL's energy_uj; written atomically, as sysfs reads are.
    fresh=True: energy_uj is a FIFO whose every read is answered with the energy at that moment, as
    sysfs computes it at read time (a file rewritten every 2 ms lags the clock by as long as its
    writer thread is starved: on a loaded 2-core box that read 19 W for 80)."""

    def __init__(self, root, watts: float, range_j: float = 262143.0, start_j: float = 0.0,
                 fresh: bool = False):
        self.root, self.watts, self.range_j, self.start_j = str(root), watts, range_j, start_j
        self.fresh = fresh
        self.zone = os.path.join(self.root, "intel-rapl:0")
        os.makedirs(os.path.join(self.zone, "intel-rapl:0:0"))  # a core sub-domain: not a package
        for name, value in (("name", "package-0"), ("max_energy_range_uj", str(int(range_j * 1e6)))):
            with open(os.path.join(self.zone, name), "w") as fh:
                fh.write(value + "\n")
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        if fresh:
            os.mkfifo(os.path.join(self.zone, "energy_uj"))
        else:
            self.write()
        self._thread = threading.Thread(target=self._answer if fresh else self._run, daemon=True)

    def restart(self) -> None:
        """Counting starts now, from start_j."""
        self._t0 = time.monotonic()
        if not self.fresh:
            self.write()

    def text(self) -> str:
        joules = (self.start_j + self.watts * (time.monotonic() - self._t0)) % self.range_j
        return f"{int(joules * 1e6)}\n"

    def write(self) -> None:
        tmp = os.path.join(self.zone, ".energy_uj.tmp")
        with open(tmp, "w") as fh:
            fh.write(self.text())
        os.replace(tmp, os.path.join(self.zone, "energy_uj"))

    def _run(self) -> None:
        while not self._stop.wait(0.002):
            self.write()

    def _answer(self) -> None:
        """Each open of energy_uj gets one line, the energy of the moment it is answered: once a
        reader is in, a new FIFO takes the name, so the next open never shares this one's line."""
        path = os.path.join(self.zone, "energy_uj")
        while not self._stop.is_set():
            fd = os.open(path, os.O_WRONLY)     # blocks until a reader opens it
            try:
                os.mkfifo(path + ".next")
                os.replace(path + ".next", path)
                os.write(fd, self.text().encode())
            except BrokenPipeError:             # the reader left first (the release in __exit__)
                pass
            finally:
                os.close(fd)                    # the reader sees its line, then end of file

    def __enter__(self):
        self.restart()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        while self.fresh and self._thread.is_alive():   # release the writer blocked in open()
            os.close(os.open(os.path.join(self.zone, "energy_uj"), os.O_RDONLY | os.O_NONBLOCK))
            self._thread.join(timeout=0.01)
        self._thread.join()


class Sleeper(Workload):
    """A workload whose invocation is a 4 ms sleep and claims 1 GFLOP of work."""

    name, category = "sleeper", "kernel"

    def prepare(self, params, ctx) -> Prepared:
        return Prepared(fn=lambda: time.sleep(0.004), work={"flop": 1e9})


def _ctx(sampler, **options) -> Context:
    loop = LoopConfig(warmup_s=0.02, min_samples=5, max_samples=1000, min_time_s=0.6, max_time_s=2.0,
                      target_noise=1.0)
    return Context(fingerprint={"backend": "cpu"}, device="cpu", loop=loop, telemetry=sampler, options=options)


def test_energy_covers_the_timed_samples_per_invocation():
    # 250 W from t=100 s to 103 s; ten timed blocks of 5 invocations x 20 ms end at 100.8 .. 101.7 s.
    samples = [Sample(t=100 + i / 20, power_w=250.0) for i in range(61)]
    result = {"samples": [0.02] * 10, "info": {"reps_per_sample": 5}, "work": {"flop": 2e12}}
    marks = [int((100.8 + 0.1 * i) * 1e9) for i in range(10)]
    out = summarize("nvml", [DeviceTrace(0, samples)], Rules(), result, marks, 100.0, 103.0)
    assert out["valid"], out["reasons"]
    assert out["window_s"] == pytest.approx(1.0)
    assert out["invocations"] == 50
    assert out["energy_j"] == pytest.approx(250.0)
    assert out["energy_per_invocation_j"] == pytest.approx(5.0)
    assert out["j_per_tflop"] == pytest.approx(2.5)
    assert out["tflops_per_w"] == pytest.approx(0.4)
    assert out["trace"]["devices"][0]["rows"][0][:2] == [pytest.approx(-0.7), 250.0]
    # Without matching marks: the whole window and the workload's own invocation count.
    whole = summarize("nvml", [DeviceTrace(0, samples)], Rules(), {"info": {"invocations": 10},
                      "work": {"tokens": 100}}, None, 100.0, 103.0)
    assert whole["energy_j"] == pytest.approx(750.0)
    assert whole["j_per_token"] == pytest.approx(0.75)


def test_energy_over_busy_windows_only():
    # 250 W throughout; two timed batches at 100.5-101.0 s and 101.5-102.0 s, 10 samples x 4 reps each.
    samples = [Sample(t=100 + i / 20, power_w=250.0) for i in range(61)]
    result = {"samples": [0.0125] * 20, "info": {"reps_per_sample": 4}, "work": {"flop": 1e12}}
    windows = [(100.5, 101.0), (101.5, 102.0)]
    out = summarize("nvml", [DeviceTrace(0, samples)], Rules(), result, None, 100.0, 103.0, windows)
    assert out["valid"], out["reasons"]
    assert out["busy_s"] == pytest.approx(1.0) and out["window_s"] == pytest.approx(1.5)
    assert out["intervals"] == 2 and out["invocations"] == 80
    assert out["energy_j"] == pytest.approx(250.0) and out["mean_power_w"] == pytest.approx(250.0)
    assert out["energy_per_invocation_j"] == pytest.approx(250.0 / 80)


class ClockSource:
    """A management library stand-in with fixed readings (the sampler's input, not what is tested)."""

    method = "test"
    devices = [{"index": 0, "name": "gpu0", "wrap_j": None, "max_sm_mhz": 2100}]

    def describe(self):
        return {"readings": [["power_w", "sm_mhz", "temp_c", "throttle_reasons"]]}

    def read(self, k):
        return Sample(t=0.0, power_w=500.0, sm_mhz=1980.0, temp_c=61.0, throttle=True, throttle_reasons=("power",))


def test_snapshot_reads_clocks_and_temperature_now(tmp_path):
    snap = ThreadedSampler(ClockSource()).snapshot()
    assert snap == [{"sm_mhz": 1980.0, "temp_c": 61.0, "power_w": 500.0, "throttle": True,
                     "throttle_reasons": ["power"]}]
    PowercapTree(tmp_path, watts=10.0)
    assert ThreadedSampler(RaplSource(str(tmp_path))).snapshot() is None      # energy only: no state to report
    assert NullSampler("none here").snapshot() is None


def test_clocks_at_start_and_end_of_the_timed_window_land_in_the_result():
    result = run_case(Sleeper(), {}, _ctx(ThreadedSampler(ClockSource(), rate_hz=50.0)))
    assert result["status"] == "ok", result["reason"]
    for key in ("state_start", "state_end"):
        assert result["info"][key][0]["sm_mhz"] == 1980.0 and result["info"][key][0]["temp_c"] == 61.0
    assert result["telemetry"]["throttle_reasons"] == {"power": 1.0}
    assert result["info"]["method"] == "cpu" and result["info"]["first_call_s"] > 0


def test_null_sampler_says_why():
    out = NullSampler("no sensor here").stop({"work": {"flop": 1.0}}, [])
    assert out["method"] == "none" and out["valid"] is False
    assert out["energy"] == "unavailable: no sensor here" and out["energy_j"] is None


def test_open_sampler_reasons(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPARITY_POWERCAP_ROOT", str(tmp_path / "absent"))
    assert "not present" in open_sampler({"backend": "cpu"}).describe()["reason"]
    monkeypatch.setenv("GPUPARITY_POWERCAP_ROOT", str(tmp_path))
    assert "no RAPL package domain" in open_sampler({"backend": "cpu"}).describe()["reason"]
    os.makedirs(tmp_path / "intel-rapl:0" / "energy_uj")  # unreadable as a file (root reads any file)
    assert "not readable" in open_sampler({"backend": "cpu"}).describe()["reason"]
    # GPU back ends without a driver or library: a reason, never an exception.
    for backend, word in (("cuda", "NVML"), ("rocm", "amdsmi")):
        d = open_sampler({"backend": backend}).describe()
        assert d["method"] == "none" and word in d["reason"]


def test_open_sampler_finds_rapl(tmp_path, monkeypatch):
    PowercapTree(tmp_path, watts=10.0)
    monkeypatch.setenv("GPUPARITY_POWERCAP_ROOT", str(tmp_path))
    sampler = open_sampler({"backend": "cpu"})
    d = sampler.describe()
    assert d["method"] == "rapl" and [dev["name"] for dev in d["devices"]] == ["package-0"]
    assert d["devices"][0]["wrap_j"] == pytest.approx(262143.0)


def test_real_thread_reads_rapl_files_through_a_workload(tmp_path):
    """Background sampling (a real thread) of a counter that reads 80 W of energy at every read,
    wrapping 0.4 s into a >= 0.6 s measurement loop (and not again for 25 s, however slow the
    machine); then --power-required keeps the result ok."""
    with PowercapTree(tmp_path, watts=80.0, range_j=2000.0, start_j=2000.0 - 80 * 0.4, fresh=True):
        sampler = ThreadedSampler(RaplSource(str(tmp_path)), rate_hz=50.0,
                                  rules=Rules(rate_hz=50.0, max_gap_s=1.0, min_samples=3))
        result = run_case(Sleeper(), {}, _ctx(sampler, power_required=True))
    tele = result["telemetry"]
    assert result["status"] == "ok", result["reason"]
    assert tele["method"] == "rapl" and tele["valid"], tele["reasons"]
    assert tele["mean_power_w"] == pytest.approx(80.0, rel=0.2)
    assert tele["invocations"] == len(result["samples"]) * result["info"]["reps_per_sample"]
    assert tele["energy_per_invocation_j"] == pytest.approx(tele["energy_j"] / tele["invocations"])
    assert tele["j_per_tflop"] == pytest.approx(tele["energy_per_invocation_j"] / 1e-3)
    assert tele["n_samples"] >= 3 and tele["counter_agreement"] is None
    assert tele["devices"][0]["counter_wraps"] == 1
    # The energy window is the timed busy time: the samples' blocks, not the warm-up or the syncs.
    assert tele["busy_s"] == pytest.approx(sum(result["samples"]) * result["info"]["reps_per_sample"], rel=0.02)
    assert tele["busy_s"] <= tele["window_s"] + 1e-9


def test_power_required_fails_results_without_power():
    result = run_case(Sleeper(), {}, _ctx(NullSampler("no sensor here"), power_required=True))
    assert result["status"] == "failed"
    assert result["reason"] == "power required: no sensor here"
    assert result["samples"]  # the measurement itself is kept
    plain = run_case(Sleeper(), {}, _ctx(NullSampler("no sensor here")))
    assert plain["status"] == "ok" and plain["telemetry"]["energy"].startswith("unavailable: ")


def test_power_required_lengthens_quick_windows():
    from gpuparity.execute.runner import build_context

    assert build_context("quick", {"power_required": True}).loop.min_time_s >= 1.0
    assert build_context("quick", {}).loop.min_time_s < 1.0


def test_cli_run_stores_telemetry_on_every_result(cli, tmp_db):
    run = cli("run", "gemm", "--dtype", "fp32")
    assert run.returncode == 0, run.stderr
    shown = cli("show", "latest", "--json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["fingerprint"]["telemetry"]["method"] in ("rapl", "none")
    ok = [r for r in doc["results"] if r["status"] == "ok"]
    assert ok
    for r in ok:
        tele = r["telemetry"]
        assert tele["method"] in ("rapl", "none")
        if tele["method"] == "rapl":
            assert tele["energy_j"] >= 0 and "j_per_tflop" in tele
        else:
            assert tele["energy"].startswith("unavailable: ")
