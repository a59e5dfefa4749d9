"""Vendor readings parsed from recorded library responses (units, 'N/A', renamed keys)."""

from __future__ import annotations

import pytest

from gpuparity.measure.samplers import (
    RaplSource,
    Unavailable,
    amd_energy_j,
    amd_power_w,
    amd_throttled,
    field_value,
    nvml_throttled,
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


def test_nvml_clock_event_reasons():
    assert nvml_throttled(0x0) is False
    assert nvml_throttled(0x1) is False          # GPU idle is not a throttle
    assert nvml_throttled(0x4) is True           # SW power cap
    assert nvml_throttled(0x1 | 0x40) is True    # HW thermal slowdown while idle-flagged


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
