"""Datasheet figures (dense peaks, memory, bandwidth, power) from the curated CSV shipped as data.

The CSV is ../shared/reference/gpu_specs.csv plus one column, host_link_gbs (the host link per
direction, PCIe generation x16 per PCI-SIG or NVLink-C2C), with its source in the notes, and rows
for parts users have with published vendor figures (H100 NVL, H200 NVL, GH200 in both memory
editions, A100 SXM4 40GB, L40S, MI300A). Which row a device gets: platform.spec_match.
A CPU has no datasheet row: it gets an estimated peak from cores x clock x FMA width.
"""

from __future__ import annotations

import csv
from functools import lru_cache
from importlib import resources

# dtype -> spec column holding its dense peak (TFLOP/s, or TOPS for int8)
PEAK_COLUMN = {
    "fp64": "fp64_matrix_tflops",
    "fp64_vector": "fp64_tflops",
    "fp32": "fp32_tflops",
    "tf32": "tf32_tflops",
    "bf16": "bf16_tflops",
    "fp16": "fp16_tflops",
    "fp8": "fp8_tflops",
    "fp6": "fp6_tflops",
    "fp4": "fp4_tflops",
    "int8": "int8_tops",
}
NUMERIC = [
    "warp_size", "memory_gb", "memory_bw_tbs", "tdp_w", "interconnect_gbs", "host_link_gbs", "fp64_tflops",
    "fp64_matrix_tflops", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops",
    "fp6_tflops", "fp4_tflops", "int8_tops",
]


@lru_cache(maxsize=1)
def all_specs() -> dict[str, dict]:
    text = resources.files("gpuparity.platform").joinpath("data/gpu_specs.csv").read_text()
    out = {}
    for row in csv.DictReader(text.splitlines()):
        for col in NUMERIC:
            row[col] = float(row[col]) if row.get(col) not in (None, "") else None
        row["estimated"] = False
        out[row["id"]] = row
    return out


def peak_tflops(spec: dict | None, dtype: str) -> float | None:
    """Dense peak for a dtype; fp64 falls back to the vector rate where there is no matrix rate."""
    if not spec:
        return None
    value = spec.get(PEAK_COLUMN.get(dtype, ""))
    if value is None and dtype == "fp64":
        value = spec.get("fp64_tflops")
    return value


def peak_bandwidth_gbs(spec: dict | None) -> float | None:
    if not spec or spec.get("memory_bw_tbs") is None:
        return None
    return spec["memory_bw_tbs"] * 1000.0


# What a result's GB/s or TFLOP/s is measured against ("peak kind", recorded per result):
#   flop:<dtype>        dense peak of that dtype
#   bytes | bytes:hbm   device memory bandwidth (HBM; a CPU's DRAM estimate)
#   bytes:interconnect  GPU-to-GPU fabric per direction (the bidirectional figure / 2), for
#                       collectives' bus bandwidth (nccl-tests' busbw convention)
#   bytes:host          the host link per direction (host <-> device copies)
#   bytes:nic           the NIC per direction, for collectives across nodes: no row holds it (no % of peak)
def peak_for(spec: dict | None, kind: str | None) -> tuple[float, str] | None:
    """(peak, unit) for a peak kind, or None where the spec has no such figure."""
    if not spec or not kind:
        return None
    if kind.startswith("flop:"):
        p = peak_tflops(spec, kind.split(":", 1)[1])
        return (p, "TFLOP/s") if p else None
    if kind in ("bytes", "bytes:hbm"):
        p = peak_bandwidth_gbs(spec)
    elif kind == "bytes:interconnect":
        p = spec["interconnect_gbs"] / 2 if spec.get("interconnect_gbs") else None
    elif kind == "bytes:host":
        p = spec.get("host_link_gbs")
    else:
        return None
    return (float(p), "GB/s") if p else None


def identify(name: str | None, target: str | None = None, memory_gb: float | None = None,
             partition: str | None = None) -> tuple[dict | None, str]:
    """(the spec row of a device, how it was found) or (None, why none: "no datasheet ... % of peak
    not shown"), by identity (platform.spec_match: its own row or none; the arch target and memory
    decide only for an empty or generic name)."""
    from gpuparity.platform.spec_match import match

    return match(all_specs(), name, target, memory_gb, partition)


def match_spec(name: str | None, target: str | None = None, memory_gb: float | None = None,
               partition: str | None = None) -> dict | None:
    """The spec row of a device by identity, or None (identify says why)."""
    return identify(name, target, memory_gb, partition)[0]


def lookup(ref: str) -> dict | None:
    """A spec by id or by a product name ('h100', 'MI300X', 'rtx-4090'; platform.spec_match)."""
    specs = all_specs()
    if ref.lower() in specs:
        return specs[ref.lower()]
    return match_spec(ref)


# FP32 FLOP per cycle per core: FMA = 2 FLOP x lanes x FMA units (assumed 2 on AVX-512/AVX2 parts).
def cpu_flop_per_cycle(isa: set[str]) -> tuple[float, str]:
    if "avx512f" in isa:
        return 2 * 16 * 2, "AVX-512: 16 fp32 lanes x 2 FMA units x 2 FLOP"
    if "avx2" in isa and "fma" in isa:
        return 2 * 8 * 2, "AVX2+FMA: 8 fp32 lanes x 2 FMA units x 2 FLOP"
    if "asimd" in isa or "neon" in isa:
        return 2 * 4 * 2, "NEON: 4 fp32 lanes x 2 FMA units x 2 FLOP"
    return 2 * 4, "SSE: 4 fp32 lanes x 2 FLOP"


# Matrix and dot-product units that run a dtype faster than the fp32 FMAs, per core and cycle
# (Intel's AMX figures: one 16x32x16 BF16/FP16 tile product per 16 cycles = 1024 FLOP, INT8 2048 ops;
# a dot-product instruction does 2 (bf16, fp16 lanes) or 4 (int8) products per fp32 lane).
# The most capable unit the CPU reports counts; a dtype with none of its units is "unknown".
CPU_UNITS = {
    "bf16": (("amx_bf16", 1024, None), ("avx512_bf16", None, 2), ("bf16", None, 2)),
    "fp16": (("amx_fp16", 1024, None), ("avx512_fp16", None, 2), ("fphp", None, 2)),
    "int8": (("amx_int8", 2048, None), ("avx512_vnni", None, 4), ("avx_vnni", None, 4)),
}


def cpu_unit_per_cycle(dtype: str, isa: set[str], fp32_per_cycle: float) -> tuple[float | None, str]:
    """(FLOP or int8 ops per cycle per core, basis) of the fastest unit this CPU has for a dtype;
    (None, why) when it has none that is counted."""
    for flag, per_cycle, times_fp32 in CPU_UNITS[dtype]:
        if flag in isa:
            value = per_cycle if per_cycle is not None else times_fp32 * fp32_per_cycle
            how = "per core and cycle" if per_cycle is not None else f"{times_fp32} x the fp32 FMA rate"
            return float(value), f"{flag}: {value:g} per cycle ({how})"
    return None, f"unknown: none of {', '.join(f for f, _, _ in CPU_UNITS[dtype])} reported"


def cpu_spec(cpu: dict) -> dict:
    """An estimated spec row for a CPU (marked estimated; bandwidth unknown): fp32 / fp64 from the
    FMA width, bf16 / fp16 / int8 from the units /proc/cpuinfo lists (AMX, AVX-512 BF16 / FP16 /
    VNNI), None (unknown) for a dtype none of whose units is listed."""
    cores = cpu.get("cores") or 1
    ghz = (cpu.get("max_mhz") or 0) / 1000.0
    isa = set(cpu.get("isa") or [])
    per_cycle, basis = cpu_flop_per_cycle(isa)

    def tflops(per: float | None) -> float | None:
        return cores * ghz * per / 1000.0 if ghz and per else None

    fp32 = tflops(per_cycle)
    spec = {col: None for col in NUMERIC}
    bases = {"fp32": basis, "fp64": "half the fp32 rate"}
    spec.update({
        "id": "cpu",
        "vendor": cpu.get("vendor") or "unknown",
        "product": cpu.get("model") or "CPU",
        "architecture": cpu.get("arch") or "",
        "target": cpu.get("arch") or "",
        "fp32_tflops": fp32,
        "fp64_tflops": fp32 / 2 if fp32 else None,
        "fp64_matrix_tflops": fp32 / 2 if fp32 else None,
        "memory_gb": cpu.get("memory_gb"),
        "estimated": True,
    })
    for dtype, column in (("bf16", "bf16_tflops"), ("fp16", "fp16_tflops"), ("int8", "int8_tops")):
        unit, bases[dtype] = cpu_unit_per_cycle(dtype, isa, per_cycle)
        spec[column] = tflops(unit)
    spec["peak_basis"] = bases
    spec["source"] = (f"estimated: {cores} cores x {ghz:.2f} GHz x FLOP/cycle per dtype: "
                      + "; ".join(f"{k} {v}" for k, v in bases.items()))
    spec["notes"] = ("CPU peaks are estimates from the units /proc/cpuinfo lists, not datasheet figures; "
                     "a dtype without a listed unit has no peak (unknown).")
    return spec
