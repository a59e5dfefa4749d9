"""Every NVML / amdsmi reader through fakes that are the real Python interfaces (tests/fakes:
nvidia-ml-py 13.615.71; amdsmi 6.0.2, 6.1.2, 6.2.4, 6.4.4, 7.0.2): readings, throttling read the
same way on both vendors, clocks on every amdsmi version, device mapping, a missing or broken
library, and no call to a name the real package lacks."""

from __future__ import annotations

import os
import sys

import pytest
from fakes import AMDSMI_VERSIONS, HERE, allowed_anywhere, fake_amdsmi, fake_pynvml, install, real_api

from gpuparity.measure import throttle as thr
from gpuparity.measure.samplers import AmdsmiSource, NvmlSource
from gpuparity.measure.telemetry import ThreadedSampler, open_sampler
from gpuparity.platform import detect, dist

MI300 = dict(market_name="AMD Instinct MI300X", throttle_bits=None, indep_bits=None)
MI250 = dict(market_name="AMD Instinct MI250X", target="gfx90a", throttle_bits=0, indep_bits=0, current_w=380)


def amd(monkeypatch, version, **gpu):
    smi = fake_amdsmi.make(version, [fake_amdsmi.AmdGpu(**gpu)])
    install(monkeypatch, smi)
    return smi


def nvml(monkeypatch, gpus=None, **kw):
    nv = fake_pynvml.make(gpus, **kw)
    install(monkeypatch, nv)
    return nv


def only_real_names(mod, lib: str) -> None:
    """Readers may probe a name another supported version has (a fallback), never one none has."""
    assert set(mod.misses) <= allowed_anywhere(lib), set(mod.misses) - allowed_anywhere(lib)


def test_fakes_define_only_what_the_real_interfaces_define():
    api = real_api()
    assert api["pynvml"]["version"] == "13.615.71" and set(api["amdsmi"]) == set(AMDSMI_VERSIONS)
    for version in AMDSMI_VERSIONS:          # build() refuses a name or parameter list the real one lacks
        smi = fake_amdsmi.make(version)
        assert smi.version == version
    assert "amdsmi_get_violation_status" not in api["amdsmi"]["6.2.4"]["functions"]
    assert "amdsmi_get_violation_status" in api["amdsmi"]["6.4.4"]["functions"]
    assert api["amdsmi"]["7.0.2"]["functions"]["amdsmi_get_clock_info"] == ["processor_handle", "clock_type"]
    nv = fake_pynvml.make()
    assert nv.NVML_CLOCK_SM == api["pynvml"]["constants"]["NVML_CLOCK_SM"]
    with pytest.raises(AttributeError):
        getattr(nv, "nvmlDeviceGetNotAFunction")  # noqa: B009 - the lookup is the test
    assert nv.misses == ["nvmlDeviceGetNotAFunction"]
    with pytest.raises(AssertionError, match="real interface lacks"):
        from fakes import build
        build("pynvml", api["pynvml"], {"nvmlDeviceGetMadeUp": lambda handle: 0})


@pytest.mark.parametrize("version", AMDSMI_VERSIONS)
def test_amdsmi_clocks_power_energy_on_every_version(monkeypatch, version):
    """cur_clk before 6.2, clk from 6.2; `power` before 6.4 is the energy accumulator."""
    smi = amd(monkeypatch, version, **MI300)
    src = AmdsmiSource(indices=[0])
    s = src.read(0)
    assert s.sm_mhz == 2100 and s.mem_mhz == 1300 and s.temp_c == 64
    assert s.power_w == (615 if version >= "7" else 612)          # 7.0's socket_power, else the average
    assert s.energy_j == pytest.approx(2_000_000 * 15.259 / 1e6)
    assert src.devices[0]["max_sm_mhz"] == 2100 and src.devices[0]["name"] == "AMD Instinct MI300X"
    smi.gpus[0].pids, smi.gpus[0].gfx_activity = [77, 4242], 93      # handles in 6.0, dicts from 6.1
    assert src.use(0) == {"pids": [77, 4242], "util_pct": 93.0}
    only_real_names(smi, "amdsmi")


@pytest.mark.parametrize("version,gpu,source,reasons", [
    # MI300's metrics have no throttle flags: the violation status (6.4+) or the clock speaks
    ("6.1.2", dict(MI300), thr.CLOCK, None),
    ("6.2.4", dict(MI300), thr.CLOCK, None),
    ("6.4.4", dict(MI300, violation={"ppt_pwr": True, "socket_thrm": False}), thr.AMD_VIOLATION, ("power",)),
    ("7.0.2", dict(MI300, violation={"ppt_pwr": False, "socket_thrm": True}), thr.AMD_VIOLATION, ("thermal",)),
    # MI250-class flags: bit masks in 6.0, bools from 6.1 ("unspecified": throttled, reason unsaid)
    ("6.0.2", dict(MI250, indep_bits=1 << 32), thr.AMD_INDEP, ("thermal",)),
    ("6.1.2", dict(MI250, indep_bits=1 << 32), thr.AMD_INDEP, ("unspecified",)),
    ("6.2.4", dict(MI250, indep_bits=None, throttle_bits=0x40), thr.AMD_LEGACY, ("unspecified",)),
    ("7.0.2", dict(MI250, indep_bits=0, violation={"ppt_pwr": None}), thr.AMD_INDEP, ()),
])
def test_amd_throttling_is_seen_on_every_version(monkeypatch, version, gpu, source, reasons):
    smi = amd(monkeypatch, version, **gpu)
    src = AmdsmiSource(indices=[0])
    assert src.throttle_sources == [source] and src.describe()["throttle_sources"] == [source]
    s = src.read(0)
    assert (s.throttle_reasons if source != thr.CLOCK else None) == (reasons if source != thr.CLOCK else None)
    if reasons is not None:
        assert s.throttle is bool(reasons)
    only_real_names(smi, "amdsmi")


def _dip(state_now, state_ref):
    return thr.throttle_dip(state_now, state_ref, 0.75)


def _throttled_snapshot(sampler, set_clock, set_reason):
    ref = sampler.snapshot()
    set_clock()
    set_reason()
    return sampler.snapshot(), ref


def test_a_throttled_window_is_seen_alike_on_both_vendors(monkeypatch):
    """The same event (clock at 60% of its warmed-up reading, thermal) is a throttled batch on H100
    through NVML reasons, on MI300X through amdsmi's violation status (7.0) and, where MI300's
    amdsmi says nothing (6.2), through the clock alone; each names its source."""
    nv = nvml(monkeypatch)
    s_nv = ThreadedSampler(NvmlSource(indices=[0]))
    g = nv.gpus[0]
    now, ref = _throttled_snapshot(s_nv, lambda: setattr(g, "sm_mhz", 1188), lambda: setattr(g, "reasons", 0x20))
    assert now[0]["throttle_source"] == thr.NVML and "thermal" in _dip(now, ref)

    for version, expect in (("7.0.2", thr.AMD_VIOLATION), ("6.2.4", thr.CLOCK)):
        smi = amd(monkeypatch, version, **MI300)
        s_amd = ThreadedSampler(AmdsmiSource(indices=[0]))
        a = smi.gpus[0]
        now, ref = _throttled_snapshot(s_amd, lambda a=a: setattr(a, "gfx_mhz", 1260),
                                       lambda a=a: a.violation.update(socket_thrm=True))
        why = _dip(now, ref)
        assert now[0]["throttle_source"] == expect and why and expect in why
        assert ("thermal" in why) if expect == thr.AMD_VIOLATION else ("clock dip" in why)
        a.gfx_mhz = 2100            # back at full clock: not throttled, whatever the flags say
        assert _dip(s_amd.snapshot(), ref) is None
    # a sustained power cap at full clock is the steady state on both vendors
    g.sm_mhz, g.reasons = 1980, 0x4
    assert _dip(s_nv.snapshot(), ref) is None
    only_real_names(nv, "pynvml")


def test_nvml_readers_through_the_fake(monkeypatch):
    nv = nvml(monkeypatch, [fake_pynvml.NvGpu(instant_mw=None, reasons=None)])
    src = NvmlSource(indices=[0])
    s = src.read(0)
    assert s.power_w == 612 and "averaged" in src.power_source       # no instant field: the 1 s average
    assert s.energy_j == 1000 and s.sm_mhz == 1980 and s.temp_c == 61
    assert src.throttle_sources == [thr.CLOCK]                         # no reasons call on this device
    assert src.devices[0]["name"] == "NVIDIA H100 80GB HBM3" and "mig" not in src.devices[0]
    nv.gpus[0].pids, nv.gpus[0].util = [4242], 87
    assert src.use(0) == {"pids": [4242], "util_pct": 87.0}
    only_real_names(nv, "pynvml")


def test_a_mig_slice_is_named_and_its_power_is_not_claimed(monkeypatch):
    nvml(monkeypatch, [fake_pynvml.NvGpu(mig_device=True)])
    src = NvmlSource(indices=[0])
    assert src.devices[0]["mig"] is True


def test_device_mapping_by_bus_id_uuid_and_trustworthy_index(monkeypatch):
    gpus = [fake_pynvml.NvGpu(name="NVIDIA L40S", uuid="GPU-aaaa", bus_id="00000000:17:00.0"),
            fake_pynvml.NvGpu(name="NVIDIA H100 80GB HBM3", uuid="GPU-bbbb", bus_id="00000000:3B:00.0")]
    nvml(monkeypatch, gpus)
    from gpuparity.measure import device_map

    monkeypatch.setattr(device_map, "torch_identity", lambda i: {"bus_id": "0000:3b:00.0"})
    sampler = open_sampler({"backend": "cuda"})
    assert sampler.describe()["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert sampler.describe()["mapped_by"] == ["PCI bus id 0000:3b:00.0"]

    monkeypatch.setattr(device_map, "torch_identity", lambda i: {})         # an older torch
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    d = open_sampler({"backend": "cuda"}).describe()
    assert d["method"] == "none" and "CUDA_DEVICE_ORDER=PCI_BUS_ID" in d["reason"]   # two kinds: CUDA's order differs
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    assert open_sampler({"backend": "cuda"}).describe()["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-aaaa,GPU-bbbb")
    monkeypatch.setenv("LOCAL_RANK", "1")
    d = open_sampler({"backend": "cuda"}).describe()
    assert d["devices"][0]["name"] == "NVIDIA H100 80GB HBM3" and d["mapped_by"] == ["UUID GPU-bbbb"]


def test_amd_mapping_goes_through_hip_ids_not_amdsmi_order(monkeypatch):
    """amdsmi lists the GPUs in another order than HIP on some MI300X platforms: HIP device 1 is
    amdsmi's first here, and the nested visibility lists are composed (ROCR first, then HIP)."""
    gpus = [fake_amdsmi.AmdGpu(bdf="0000:0c:00.0", hip_id=1, hotspot_c=70),
            fake_amdsmi.AmdGpu(bdf="0000:1c:00.0", hip_id=0, hotspot_c=50)]
    smi = fake_amdsmi.make("7.0.2", gpus)
    install(monkeypatch, smi)
    from gpuparity.measure import device_map

    monkeypatch.setattr(device_map, "torch_identity", lambda i: {})
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "1,0")
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "0")          # HIP's 0 = ROCR's first = physical 1
    sampler = open_sampler({"backend": "rocm"})
    assert sampler.describe()["mapped_by"] == ["HIP id 1 (amdsmi_get_gpu_enumeration_info)"]
    assert sampler.source.read(0).temp_c == 70
    # an amdsmi without HIP ids and two GPUs: no guess by index
    install(monkeypatch, fake_amdsmi.make("6.2.4", gpus))
    d = open_sampler({"backend": "rocm"}).describe()
    assert d["method"] == "none" and "HIP ids" in d["reason"]


def test_visibility_lists_composed():
    from gpuparity.measure.device_map import physical, visible

    env = {"ROCR_VISIBLE_DEVICES": "4,5,6,7", "HIP_VISIBLE_DEVICES": "2,0"}
    assert visible("rocm", env) == [6, 4] and physical(1, "rocm", env) == 4
    assert visible("rocm", {"ROCR_VISIBLE_DEVICES": "GPU-abc,3", "CUDA_VISIBLE_DEVICES": "1,0"}) == [3, "GPU-abc"]
    assert visible("rocm", {"HIP_VISIBLE_DEVICES": "1", "CUDA_VISIBLE_DEVICES": "0"}) == [1]   # HIP's list wins
    assert visible("cuda", {"CUDA_VISIBLE_DEVICES": "3,1,-1,0"}) == [3, 1]     # the runtime stops at -1
    assert visible("cuda", {"CUDA_VISIBLE_DEVICES": "MIG-1f2e,2"}) == ["MIG-1f2e", 2]
    assert visible("cuda", {}) is None and physical(2, "cuda", {}) == 2
    assert physical(3, "rocm", env) is None


def test_missing_or_broken_libraries_are_reasons(monkeypatch, capfd):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    d = open_sampler({"backend": "cuda"}).describe()
    assert d["method"] == "none" and "nvidia-ml-py not installed" in d["reason"]
    nvml(monkeypatch, driver_loaded=False)
    assert "NVML init failed: NVML Shared Library Not Found" in open_sampler({"backend": "cuda"}).describe()["reason"]
    for site, word in (("site_nolib", "KeyError"), ("site_oldlib", "AttributeError")):
        monkeypatch.delitem(sys.modules, "amdsmi", raising=False)
        monkeypatch.syspath_prepend(os.path.join(HERE, site))
        d = open_sampler({"backend": "rocm"}).describe()
        unknown: dict = {}
        assert detect._amdsmi_info(unknown) == {} and word in unknown["amdsmi"]
        assert d["method"] == "none" and word in d["reason"], d
        assert "unknown" in dist.topology("rocm") and word in dist.topology("rocm")["unknown"]
        out = capfd.readouterr()
        assert out.out == "", out.out                # nothing the library printed reaches stdout
        monkeypatch.undo()
    unknown = {}
    install(monkeypatch, fake_amdsmi.make("7.0.2", init_error=True))
    assert detect._amdsmi_info(unknown) == {} and "amdsmi query failed" in unknown["amdsmi"]


def test_the_printed_noise_is_kept_in_the_reason(monkeypatch, capfd):
    from gpuparity.platform.vendor_libs import load

    monkeypatch.delitem(sys.modules, "amdsmi", raising=False)
    monkeypatch.syspath_prepend(os.path.join(HERE, "site_nolib"))
    module, why = load("amdsmi")
    assert module is None and "Unable to find libamd_smi.so" in why and "KeyError" in why
    assert capfd.readouterr().out == ""


@pytest.mark.parametrize("version", ["6.0.2", "7.0.2"])
def test_detect_and_topology_through_the_amdsmi_fake(monkeypatch, version):
    gpus = [fake_amdsmi.AmdGpu(compute_partition="CPX", memory_partition="NPS4"), fake_amdsmi.AmdGpu(bdf="0000:1c:00.0")]
    smi = fake_amdsmi.make(version, gpus)
    install(monkeypatch, smi)
    unknown: dict = {}
    info = detect._amdsmi_info(unknown)
    d0 = info["devices"][0]
    assert d0["compute_partition"] == "CPX" and d0["bus_id"] == "0000:0c:00.0" and d0["power_limit_w"] == 750
    assert d0["max_sm_clock_mhz"] == 2100 and info["driver_version"] == "6.12.12"
    assert detect._management_identity(info["devices"]) == ("AMD Instinct MI300X", None)   # partitions differ
    topo = dist.topology("rocm")
    assert topo["gpus"] == 2 and topo["links"][0]["hops"] == 1
    only_real_names(smi, "amdsmi")


def test_nvml_topology_through_the_fake(monkeypatch):
    nv = nvml(monkeypatch, [fake_pynvml.NvGpu(), fake_pynvml.NvGpu(bus_id="00000000:4C:00.0"),
                            fake_pynvml.NvGpu(bus_id="00000000:5D:00.0", nvlinks=0, level=50)])
    topo = dist.topology("cuda")
    assert topo["gpus"] == 3 and topo["nvlinks_per_gpu"] == [18, 18, 0]
    assert [lk["nvlink"] for lk in topo["links"]] == [True, False, False] and topo["links"][1]["path"] == "SYS"
    only_real_names(nv, "pynvml")


def test_detect_through_the_nvml_fake(monkeypatch):
    nv = nvml(monkeypatch, [fake_pynvml.NvGpu(mig_mode=1)])
    unknown: dict = {}
    info = detect._nvml_info(unknown)
    d0 = info["devices"][0]
    assert d0["name"] == "NVIDIA H100 80GB HBM3" and d0["power_limit_w"] == 700 and d0["max_sm_clock_mhz"] == 1980
    assert d0["uuid"].startswith("GPU-") and d0["bus_id"] == "00000000:3B:00.0" and d0["mig_mode"] == 1
    assert info["driver_version"] == "580.159.04" and info["cuda_driver_version"] == 13000
    only_real_names(nv, "pynvml")


def test_a_comparison_says_when_one_side_could_not_observe_throttling():
    from test_compare import make_result, make_run, noisy

    from gpuparity.comparison.compare import compare_runs

    def run(run_id, spec_id, telemetry, center, started):
        res = [make_result("gemm", {"m": m}, noisy(center, 0.005, 30, m + center)) for m in range(2)]
        doc = make_run(res, spec_id=spec_id, run_id=run_id, started_at=started)
        doc["fingerprint"]["telemetry"] = telemetry
        return doc

    h100 = {"method": "nvml", "throttle_sources": [thr.NVML]}
    blind = {"method": "none", "reason": "amdsmi unavailable: AttributeError: undefined symbol"}
    out = compare_runs([run("a", "h100-sxm", h100, 100, "2026-01-01T00:00:00+00:00")],
                       [run("b", "mi300x", blind, 110, "2026-01-02T00:00:00+00:00")])
    (note,) = [n for n in out["notes"] if "could not observe throttling" in n]
    assert note.startswith("side B") and "AttributeError" in note
    clocks = {"method": "amdsmi", "throttle_sources": [thr.CLOCK]}          # the clock alone still sees it
    out = compare_runs([run("a", "h100-sxm", h100, 100, "2026-01-01T00:00:00+00:00")],
                       [run("b", "mi300x", clocks, 110, "2026-01-02T00:00:00+00:00")])
    assert not [n for n in out["notes"] if "could not observe throttling" in n]


def test_amd_violations_are_read_from_the_metrics_not_the_slow_call(monkeypatch):
    """amdsmi_get_violation_status reads the metrics twice 100 ms apart: it is asked once, when the
    device opens (is it supported?); each reading after that takes the residencies from one
    gpu_metrics call, a reason active while its residency advances."""
    smi = amd(monkeypatch, "7.0.2", **MI300)
    src = AmdsmiSource(indices=[0])
    asked = [name for name in smi.calls if name == "amdsmi_get_violation_status"]
    assert src.throttle_sources == [thr.AMD_VIOLATION] and len(asked) == 1
    g = smi.gpus[0]
    assert src.read(0).throttle_reasons == ()
    g.violation["hbm_thrm"] = True
    assert src.read(0).throttle_reasons == ("thermal",)
    g.violation.update(hbm_thrm=False, ppt_pwr=True)
    assert src.read(0).throttle_reasons == ("power",)
    g.violation["ppt_pwr"] = False
    assert src.read(0).throttle_reasons == ()
    assert [name for name in smi.calls if name == "amdsmi_get_violation_status"] == asked


def test_residencies_that_did_not_advance_repeat_the_last_reasons():
    reader = thr.AmdResidencies()
    one = {"accumulation_counter": 5, **dict.fromkeys(thr.AMD_RESIDENCIES, 10)}
    assert reader(one) == ()                                           # the baseline
    assert reader({**one, "accumulation_counter": 6, "ppt_residency_acc": 11}) == ("power",)
    assert reader({**one, "accumulation_counter": 6, "ppt_residency_acc": 11}) == ("power",)   # no new window
    assert reader({**one, "accumulation_counter": 7, "ppt_residency_acc": 11}) == ()
    assert reader({"accumulation_counter": "N/A", **dict.fromkeys(thr.AMD_RESIDENCIES, "N/A")}) is None
