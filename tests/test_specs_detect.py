"""Spec matching, CPU peak estimate, support lists and the fingerprint on this machine."""

import json

import pytest

from gpuparity.platform.detect import fingerprint, support_status
from gpuparity.platform.specs import all_specs, cpu_spec, lookup, match_spec, peak_tflops


@pytest.mark.parametrize("name,expected", [
    ("NVIDIA H200", "h200-sxm"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("AMD Instinct MI300X", "mi300x"),
    ("AMD Instinct MI325X", "mi325x"),
    ("AMD Radeon RX 7900 XTX", "rx-7900-xtx"),
    ("NVIDIA B200", "b200"),
    ("NVIDIA B300 SXM6 AC", "b300"),
    ("NVIDIA B300-SXM-270GB", "b300"),
    ("Nvidia B300-SXM-270GB", "b300"),
    ("NVIDIA GB300", "gb300"),
    ("NVIDIA GB200", "gb200"),
    ("NVIDIA Vera Rubin", "vr200"),
    ("NVIDIA VR200", "vr200"),
    ("AMD Instinct MI350P", "mi350p"),
    ("AMD Instinct MI350X", "mi350x"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-blackwell"),
    ("NVIDIA RTX PRO 4500 Blackwell", "rtx-pro-4500-blackwell"),
    ("NVIDIA GB10", "gb10"),
])
def test_match_by_name(name, expected):
    assert match_spec(name)["id"] == expected


@pytest.mark.parametrize("name", [
    "NVIDIA RTX PRO 4500 Blackwell Server Edition",     # another card, whose figures are not collected
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",  # another SKU (1.792 TB/s)
    "NVIDIA Rubin CPX",
    "NVIDIA Vera Rubin CPX",
    "Intel(R) Arc(TM) Pro B70",
    "NVIDIA GB100",
])
def test_parts_without_a_row_match_none(name):
    assert match_spec(name) is None


def test_each_part_matches_only_itself():
    """B300 is not GB300 and GB300 not B300: every part's own product name finds its own row."""
    for spec_id, spec in all_specs().items():
        assert match_spec(spec["product"])["id"] == spec_id, spec_id
        assert lookup(spec_id.upper())["id"] == spec_id


def test_rocm_generic_name_resolved_by_target_and_memory():
    assert match_spec("", "gfx942:sramecc+:xnack-", 256)["id"] == "mi325x"
    assert match_spec("", "gfx942", 192)["id"] == "mi300x"
    assert match_spec("AMD Radeon Graphics", "gfx942", 128)["id"] == "mi300a"
    assert match_spec("", "gfx950", 144)["id"] == "mi350p"
    assert match_spec("", "sm_121", 128.5)["id"] == "gb10"
    # Only one row within 10% of the memory, else none: MI350X and MI355X share gfx950 and 288 GB,
    # B300 and GB300 sm_103 and 270 / 279 GB; no memory known: no guess.
    assert match_spec("", "gfx950", 288) is None and match_spec("", "sm_103", 270) is None
    assert match_spec("", "sm_121") is None and match_spec("", "gfx942", 64) is None
    assert match_spec("Some Unknown GPU", "sm_999") is None


def test_spec_data_has_sources_and_dense_peaks():
    specs = all_specs()
    assert len(specs) == 31
    for s in specs.values():
        assert s["source"] and s["tdp_w"] and s["memory_gb"] and s["memory_bw_tbs"]
        assert "Host link per direction" in s["notes"]
        assert s["host_link_gbs"] or "Host link per direction: none" in s["notes"]      # an APU has none
    for added in ("h100-nvl", "h200-nvl", "gh200", "gh200-144gb", "a100-sxm-40gb", "l40s", "mi300a"):
        assert "https://" in specs[added]["source"] and specs[added]["bf16_tflops"], added
    assert peak_tflops(specs["h100-sxm"], "bf16") == 989.5
    assert peak_tflops(specs["a100-sxm-80gb"], "fp8") is None  # no fp8 units on A100
    assert peak_tflops(specs["mi355x"], "tf32") is None
    assert lookup("MI300X")["id"] == "mi300x"


def test_specs_cli_newest_parts(cli):
    p = cli("specs", "b300", "GB300", "vera rubin", "mi350p", "--json")
    assert p.returncode == 0, p.stderr
    rows = {s["id"]: s for s in json.loads(p.stdout)}
    assert list(rows) == ["b300", "gb300", "vr200", "mi350p"]
    assert (rows["b300"]["fp4_tflops"], rows["gb300"]["fp4_tflops"]) == (13500, 15000)     # not one part
    assert rows["b300"]["memory_gb"] == 270 and rows["gb300"]["memory_gb"] == 279
    assert "provisional" in rows["vr200"]["notes"] and "sm_107" == rows["vr200"]["target"]
    assert rows["mi350p"]["target"] == "gfx950" and rows["mi350p"]["memory_gb"] == 144
    assert all("http" in s["source"] for s in rows.values())


def test_cpu_peak_is_estimated_from_cores_clock_and_fma_width():
    spec = cpu_spec({"cores": 4, "max_mhz": 3000, "isa": ["avx2", "fma"], "model": "x"})
    assert spec["estimated"] is True
    assert spec["fp32_tflops"] == pytest.approx(4 * 3.0 * 32 / 1000)
    assert "estimated" in spec["source"]


def test_support_lists():
    assert support_status("gfx942")["supported"] is True
    assert support_status("gfx906")["supported"] is False
    assert support_status("sm_90")["supported"] is True
    assert support_status("sm_70")["supported"] is False
    assert support_status("sm_100a")["list"] == "CUDA 13.0"


def test_fingerprint_on_cpu_machine_is_complete():
    fp = fingerprint()
    json.dumps(fp)
    for field in ("host", "backend", "vendor", "product", "arch_target", "device_count", "torch_version",
                  "cpu", "env", "unknown", "spec", "support"):
        assert field in fp
    assert fp["cpu"]["cores"] >= 1
    assert isinstance(fp["cpu"]["isa"], list)


def test_info_json_cli(cli):
    p = cli("info", "--json")
    assert p.returncode == 0, p.stderr
    fp = json.loads(p.stdout)
    assert fp["backend"] in ("cpu", "cuda", "rocm")
    assert "unknown" in fp


def test_specs_cli_side_by_side(cli):
    p = cli("specs", "h100-sxm", "mi300x")
    assert p.returncode == 0
    assert "h100-sxm" in p.stdout and "mi300x" in p.stdout and "989" in p.stdout
    bad = cli("specs", "no-such-gpu")
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("error:") and len(bad.stderr.strip().splitlines()) == 1


def test_verbs_without_device_do_not_import_torch():
    import subprocess
    import sys

    code = ("import sys; from gpuparity.cli import main; main._register_all(); "
            "heavy = [m for m in ('torch', 'numpy', 'pandas', 'transformers', 'sqlalchemy') if m in sys.modules];"
            "print(heavy); sys.exit(1 if heavy else 0)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
