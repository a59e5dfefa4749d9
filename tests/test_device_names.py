"""Real device names, as torch / NVML / amdsmi report them, each get their own datasheet row or
none: never a look-alike's (platform.spec_match). Memory is what torch reports (total_memory / 1e9)."""

import pytest

from gpuparity.platform.specs import identify

GIB = 2**30 / 1e9

# (name as reported, arch target, device memory GB, the row it must get or None)
DEVICES = [
    ("NVIDIA H100 80GB HBM3", "sm_90", 79.6 * GIB, "h100-sxm"),
    ("NVIDIA H100 NVL", "sm_90", 93.6 * GIB, "h100-nvl"),
    ("NVIDIA H100 PCIe", "sm_90", 79.6 * GIB, "h100-pcie"),
    ("NVIDIA H200", "sm_90", 140.4 * GIB, "h200-sxm"),
    ("NVIDIA H200 NVL", "sm_90", 140.4 * GIB, "h200-nvl"),
    ("NVIDIA H20", "sm_90", 95.0 * GIB, None),                 # no published vendor datasheet
    ("NVIDIA H800", "sm_90", 79.6 * GIB, None),                # no published vendor datasheet
    ("NVIDIA H100 CNX", "sm_90", 79.6 * GIB, None),            # another edition, no row
    ("NVIDIA GH200 480GB", "sm_90", 95.6 * GIB, "gh200"),
    ("NVIDIA GH200 144G HBM3e", "sm_90", 143.0 * GIB, "gh200-144gb"),
    ("NVIDIA A100-SXM4-40GB", "sm_80", 39.4 * GIB, "a100-sxm-40gb"),
    ("NVIDIA A100-SXM4-80GB", "sm_80", 79.2 * GIB, "a100-sxm-80gb"),
    ("NVIDIA A100-PCIE-40GB", "sm_80", 39.4 * GIB, None),     # the PCIe card has no row
    ("NVIDIA L40S", "sm_89", 44.4 * GIB, "l40s"),
    ("NVIDIA L40", "sm_89", 44.4 * GIB, None),
    ("NVIDIA GeForce RTX 4090", "sm_89", 23.6 * GIB, "rtx-4090"),
    ("NVIDIA GeForce RTX 4090 D", "sm_89", 23.6 * GIB, None),  # the China edition: other SM count
    ("NVIDIA GeForce RTX 4080 SUPER", "sm_89", 15.6 * GIB, None),
    ("NVIDIA B200", "sm_100", 178.4 * GIB, "b200"),
    ("NVIDIA B300 SXM6 AC", "sm_103", 270.0, "b300"),
    ("NVIDIA Blackwell Ultra GPU (B300-SXM-270GB)", "sm_103", 270.0, "b300"),   # as MLPerf writes it
    ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "sm_90", 9.5 * GIB, None),   # a MIG slice: no whole-chip peak
    ("NVIDIA H100 80GB HBM3 MIG 3g.40gb", "sm_90", 39.4 * GIB, None),
    ("AMD Instinct MI300X", "gfx942", 192.0 * GIB, "mi300x"),
    ("AMD Instinct MI300X VF", "gfx942", 191.5 * GIB, "mi300x"),        # SR-IOV: the whole GPU in a VM
    ("AMD Instinct MI300A", "gfx942", 128.0 * GIB, "mi300a"),
    ("AMD Instinct MI308X", "gfx942", 192.0 * GIB, None),               # no published vendor datasheet
    ("AMD Instinct MI325X", "gfx942", 256.0 * GIB, "mi325x"),
    ("AMD Instinct MI355X", "gfx950", 288.0 * GIB, "mi355x"),
    ("AMD Instinct MI350X", "gfx950", 288.0 * GIB, "mi350x"),
    ("AMD Instinct MI250X", "gfx90a", 64.0 * GIB, None),                # one GCD: half a package
    ("AMD Instinct MI250X / MI250", "gfx90a", 128.0 * GIB, None),       # names two parts
    ("AMD Instinct MI210", "gfx90a", 64.0 * GIB, None),
    ("AMD Radeon Graphics", "gfx942", 192.0 * GIB, "mi300x"),           # generic: target + memory
    ("AMD Radeon Graphics", "gfx942", 256.0 * GIB, "mi325x"),
    ("AMD Radeon Graphics", "gfx942", 128.0 * GIB, "mi300a"),
    ("AMD Radeon Graphics", "gfx942", 24.0 * GIB, None),                # a CPX partition's share
    ("AMD Radeon Graphics", "gfx950", 288.0 * GIB, None),               # MI350X or MI355X: no guess
    ("", "gfx90a", 64.0 * GIB, None),
    ("AMD Radeon RX 7900 XTX", "gfx1100", 24.0 * GIB, "rx-7900-xtx"),
    ("AMD Radeon RX 7900 XT", "gfx1100", 20.0 * GIB, None),
    ("AMD Radeon PRO W7900", "gfx1100", 48.0 * GIB, "radeon-pro-w7900"),
]


@pytest.mark.parametrize("name,target,memory_gb,expected", DEVICES)
def test_each_device_gets_its_own_row_or_none(name, target, memory_gb, expected):
    spec, why = identify(name, target, memory_gb)
    assert (spec or {}).get("id") == expected, why
    if expected is None:
        assert "% of peak not shown" in why


def test_partitions_get_no_whole_chip_peak():
    spec, why = identify("AMD Instinct MI300X", "gfx942", 24.0 * GIB, partition="CPX")
    assert spec is None and "CPX" in why
    spec, why = identify("AMD Instinct MI300X", "gfx942", 192.0 * GIB, partition="SPX")
    assert spec["id"] == "mi300x"
    spec, why = identify("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "sm_90", 9.5 * GIB)
    assert spec is None and "MIG slice 1g.10gb" in why


def test_mlperf_names_map_to_the_row_the_device_names_match():
    """A reference row's accelerator name (evidence.accelerators) gets the row the name matches
    (platform.spec_match, one identity function), a superchip's total memory in its name included."""
    from gpuparity.evidence.accelerators import map_accelerator
    from gpuparity.platform.specs import match_spec

    for name, *_ in DEVICES:
        if name:
            assert map_accelerator(name)["spec_id"] == (match_spec(name) or {}).get("id"), name
    assert map_accelerator("NVIDIA GH200 480GB")["spec_id"] == "gh200"
