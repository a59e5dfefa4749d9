"""Vendor readings parsed from recorded library responses (units, 'N/A', renamed keys)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuparity.measure.energy import Sample
from gpuparity.measure.samplers import (
    AMD_BIT_GROUPS,
    RANGES,
    SENTINELS,
    RaplSource,
    Unavailable,
    _read_all,
    amd_energy_j,
    amd_power_w,
    amd_reasons,
    amd_throttled,
    field_value,
    nvml_reasons,
    nvml_throttled,
    plausible,
)


def test_amdsmi_power_prefers_current_then_average():
    assert amd_power_w({"current_socket_power": 612, "average_socket_power": 598}) == 612
    # MI300-class parts often report current power as N/A: take the average.
    assert amd_power_w({"current_socket_power": "N/A", "average_socket_power": 598}) == 598
    assert amd_power_w({"current_socket_power": "N/A", "average_socket_power": "N/A"}) is None


def test_amdsmi_energy_counter_units():
    # energy_accumulator x counter_resolution is in uJ.
    assert amd_energy_j({"energy_accumulator": 2_000_000, "counter_resolution": 15.3}) == pytest.approx(30.6)
    assert amd_energy_j({"power": 1_000_000, "counter_resolution": 2.0}) == pytest.approx(2.0)  # older key
    assert amd_energy_j({"energy_accumulator": "N/A", "counter_resolution": 15.3}) is None


def test_amdsmi_throttle_status():
    assert amd_throttled({"throttle_status": 1}) is True
    assert amd_throttled({"throttle_status": 0}) is False
    assert amd_throttled({"throttle_status": 0xFFFFFFFF}) is None  # fill value: not supported
    assert amd_throttled({"throttle_status": "N/A"}) is None
    # ASIC-independent bits (MI300: PPT -> bit 0, socket thermal -> 32, HBM thermal -> 34).
    assert amd_reasons({"indep_throttle_status": 1 << 0}) == ("power",)
    assert amd_reasons({"indep_throttle_status": (1 << 32) | (1 << 34), "throttle_status": 0xFFFFFFFF}) == ("thermal",)
    assert amd_reasons({"indep_throttle_status": (1 << 16) | (1 << 57)}) == ("current", "other")
    assert amd_reasons({"indep_throttle_status": 0}) == ()
    assert amd_reasons({"indep_throttle_status": 0xFFFFFFFFFFFFFFFF, "throttle_status": 0xFFFFFFFF}) is None


def test_nvml_clock_event_reasons():
    assert nvml_throttled(0x0) is False
    assert nvml_throttled(0x1) is False          # GPU idle is not a throttle
    assert nvml_throttled(0x2 | 0x10 | 0x100) is False   # application clocks, sync boost, display: settings
    assert nvml_throttled(0x4) is True           # SW power cap
    assert nvml_throttled(0x1 | 0x40) is True    # HW thermal slowdown while idle-flagged
    assert nvml_reasons(0x4 | 0x20 | 0x8) == ("hw_slowdown", "power", "thermal")


def test_sentinels_and_impossible_readings_are_rejected():
    for fill in SENTINELS:
        assert plausible("power_w", fill) is None and plausible("temp_c", fill) is None
        assert plausible("sm_mhz", fill) is None and plausible("energy_j", fill) is None
    assert plausible("power_w", 612) == 612.0
    assert plausible("power_w", -3.0) is None and plausible("temp_c", 300) is None
    assert plausible("sm_mhz", 0) is None and plausible("sm_mhz", 2100) == 2100.0
    assert amd_power_w({"current_socket_power": 0xFFFF, "average_socket_power": 598}) == 598
    assert amd_energy_j({"energy_accumulator": 0xFFFFFFFFFFFFFFFF, "counter_resolution": 15.3}) is None
    # Through a source's reader table, as the sampler reads every 50 ms:
    s = _read_all({"power_w": lambda: 0xFFFFFFFF, "temp_c": lambda: 61, "sm_mhz": lambda: 65535,
                   "throttle_reasons": lambda: ("power",)})
    assert (s.power_w, s.temp_c, s.sm_mhz, s.throttle, s.throttle_reasons) == (None, 61.0, None, True, ("power",))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.dictionaries(st.sampled_from(["indep_throttle_status", "throttle_status", "junk"]),
                       st.one_of(st.integers(min_value=-2**70, max_value=2**70), st.text(max_size=5),
                                 st.floats(allow_nan=True), st.none(), st.booleans())))
def test_amd_reason_decoding_never_raises(metrics):
    r = amd_reasons(metrics)
    assert r is None or set(r) <= {name for _, _, name in AMD_BIT_GROUPS} | {"unspecified"}


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sampled_from(sorted(RANGES)), st.one_of(st.integers(min_value=-2**70, max_value=2**70),
                                                  st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
                                                  st.none(), st.dictionaries(st.just("value"), st.integers())))
def test_plausible_returns_a_number_in_range_or_none(name, value):
    v = plausible(name, value)
    lo, hi = RANGES[name]
    assert v is None or (isinstance(v, float) and lo <= v <= hi)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_nvml_reasons_decode_any_mask(bits):
    r = nvml_reasons(bits)
    assert set(r) <= {"power", "thermal", "hw_slowdown"} and nvml_throttled(bits) is bool(r)
    assert isinstance(Sample(t=0.0, throttle_reasons=r).throttle_reasons, tuple)


def test_nvml_field_value():
    pynvml = pytest.importorskip("pynvml")
    fv = pynvml.c_nvmlFieldValue_t()
    fv.nvmlReturn, fv.valueType = 0, pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
    fv.value.uiVal = 412_345  # mW
    assert field_value(fv) == 412_345.0
    fv.nvmlReturn = 3  # NVML_ERROR_NOT_SUPPORTED
    assert field_value(fv) is None


def test_rapl_source_reads_packages_only(tmp_path):
    for zone, uj in (("intel-rapl:0", 5_000_000), ("intel-rapl:0:0", 1), ("intel-rapl:1", 7_500_000)):
        (tmp_path / zone).mkdir()
        (tmp_path / zone / "energy_uj").write_text(f"{uj}\n")
    (tmp_path / "intel-rapl:0" / "max_energy_range_uj").write_text("262143328850\n")
    src = RaplSource(str(tmp_path))
    assert [d["index"] for d in src.devices] == [0, 1]
    assert src.devices[0]["wrap_j"] == pytest.approx(262143.32885) and src.devices[1]["wrap_j"] is None
    assert [src.read(k).energy_j for k in (0, 1)] == [5.0, 7.5]
    (tmp_path / "intel-rapl:1" / "energy_uj").write_text("garbage")
    assert src.read(1).energy_j is None  # a bad read is a missing sample, not an exception
    with pytest.raises(Unavailable, match="not present"):
        RaplSource(str(tmp_path / "nope"))
