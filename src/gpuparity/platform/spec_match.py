"""A device's datasheet row by identity, never by resemblance.

A name (as torch, NVML, amdsmi or MLPerf write it) matches a row when it holds the words that name
that part and no word that names another edition of it: "NVIDIA H100 80GB HBM3" is the H100 SXM,
"NVIDIA H100 NVL" the NVL card, "NVIDIA H100 PCIe" the PCIe card, and "NVIDIA H20", "NVIDIA
H800" or "NVIDIA H100 CNX" none of them. Words that describe without naming (vendor, family,
memory type, form factor) are allowed; a memory size in the name must be the row's. Where two
rows fit the name (A100 40GB and 80GB), the device's memory decides, within MEMORY_TOL.

An empty or generic name (ROCm sometimes reports "AMD Radeon Graphics") falls back to the arch
target and memory: the one row of that target within MEMORY_TOL of the device's memory, else none.
A MIG slice, an AMD compute partition (DPX, TPX, QPX, CPX) or a device holding under
PARTITION_SHARE of its part's memory (an MI250X GCD) is a piece of a chip: no whole-chip peak.
Parts users have whose vendors publish no datasheet (H20, H800, MI308X) run with "no datasheet:
% of peak not shown".
"""

from __future__ import annotations

import re

MEMORY_TOL = 0.10          # a memory figure is the row's within 10% (GB vs GiB, usable vs physical)
PARTITION_SHARE = 0.6      # under this share of the row's memory: a partition, slice or GCD
GIB_PER_GB = 2**30 / 1e9

# Words that describe a part without naming another edition of it.
DESCRIPTIVE = {"nvidia", "amd", "instinct", "geforce", "radeon", "tesla", "virtualized", "virtualised", "gpu",
               "tensor", "core", "blackwell", "hopper", "ampere", "ada", "lovelace", "grace", "superchip", "hbm2",
               "hbm2e", "hbm3", "hbm3e", "gddr6", "gddr6x", "gddr7", "oam", "spx", "nps1", "nps2", "nps4",
               "nps8", "accelerator"}
GENERIC_NAMES = ("", "amd radeon graphics", "radeon graphics", "amd instinct", "amd", "amd gpu", "nvidia", "gpu")

# spec id -> (alternative sets of naming words, extra words allowed for it, memory sizes its names use)
RULES: dict[str, tuple[list[set[str]], set[str], set[float]]] = {
    "h100-sxm": ([{"h100"}], {"sxm", "sxm5"}, {80}),
    "h100-pcie": ([{"h100", "pcie"}], set(), {80}),
    "h100-nvl": ([{"h100", "nvl"}], set(), {94, 96}),
    "h200-sxm": ([{"h200"}], {"sxm", "sxm5"}, {141}),
    "h200-nvl": ([{"h200", "nvl"}], set(), {141}),
    "gh200": ([{"gh200"}], set(), {96, 480}),
    "gh200-144gb": ([{"gh200"}], set(), {144, 624}),
    "b200": ([{"b200"}], {"sxm"}, {180, 192}),
    "gb200": ([{"gb200"}], set(), {186, 192}),
    "b300": ([{"b300"}], {"sxm", "sxm6", "ac", "ultra"}, {270, 288}),   # "NVIDIA Blackwell Ultra GPU (B300-SXM-270GB)"
    "gb300": ([{"gb300"}], {"ultra"}, {279, 288}),
    "vr200": ([{"vr200"}, {"vera", "rubin"}, {"rubin"}], set(), {288}),
    "a100-sxm-80gb": ([{"a100"}], {"sxm", "sxm4"}, {80}),
    "a100-sxm-40gb": ([{"a100"}], {"sxm", "sxm4"}, {40}),
    "l40s": ([{"l40s"}], set(), {48}),
    "rtx-4090": ([{"rtx", "4090"}], set(), {24}),
    "rtx-4080": ([{"rtx", "4080"}], set(), {16}),
    "rtx-pro-6000-blackwell": ([{"rtx", "pro", "6000", "server", "edition"}], set(), {96}),
    "rtx-pro-4500-blackwell": ([{"rtx", "pro", "4500"}], set(), {32}),
    "gb10": ([{"gb10"}], set(), {128}),
    "mi300x": ([{"mi300x"}], {"vf"}, {192}),
    "mi300a": ([{"mi300a"}], set(), {128}),
    "mi325x": ([{"mi325x"}, {"mi325"}], set(), {256}),
    "mi350x": ([{"mi350x"}, {"mi350"}], set(), {288}),
    "mi355x": ([{"mi355x"}, {"mi355"}], set(), {288}),
    "mi350p": ([{"mi350p"}], set(), {144}),
    "mi250x": ([{"mi250x"}], set(), {128}),
    "mi100": ([{"mi100"}], set(), {32}),
    "rx-7900-xtx": ([{"7900", "xtx"}], {"rx"}, {24}),
    "rx-9070-xt": ([{"9070", "xt"}], {"rx"}, {16}),
    "radeon-pro-w7900": ([{"w7900"}], {"pro"}, {48}),
}
# Parts without a published vendor datasheet: recognised, so the reason says so.
NO_DATASHEET = {"h20": "NVIDIA H20", "h800": "NVIDIA H800", "h20e": "NVIDIA H20E", "mi308x": "AMD Instinct MI308X",
                "mi308": "AMD Instinct MI308X", "l20": "NVIDIA L20", "b30a": "NVIDIA B30A"}
PARTITIONS = ("DPX", "TPX", "QPX", "CPX")


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", (text or "").lower()).strip()


def words(name: str) -> tuple[set[str], list[float], str | None]:
    """(naming words, memory sizes written in the name (GB), the MIG profile if it is a slice)."""
    low = (name or "").lower()
    mig = re.search(r"\bmig\b\s*(\d+g\.\d+gb)?|\b(\d+g\.\d+gb)\b", low)
    profile = (mig.group(1) or mig.group(2) or "MIG") if mig else None
    out, mem = set(), []
    for tok in re.split(r"[^a-z0-9.]+", low):
        tok = tok.strip(".")
        m = re.fullmatch(r"(\d{1,4}(?:\.\d+)?)(?:gb|g)", tok)
        if m:
            mem.append(float(m.group(1)))
        elif re.fullmatch(r"\d{2,5}w", tok):        # a power cap ("750W") names no part
            continue
        elif tok:
            out.update(t for t in tok.split(".") if t)
    return out, mem, profile


def _near(a: float, b: float) -> bool:
    return abs(a - b) <= MEMORY_TOL * b


def device_memory_matches(memory_gb: float, row_gb: float) -> bool:
    """Device memory (bytes / 1e9) against a row's: either unit reading within MEMORY_TOL."""
    return _near(memory_gb, row_gb) or _near(memory_gb / GIB_PER_GB, row_gb)


def _rule_fits(spec_id: str, toks: set[str], mem: list[float]) -> bool:
    alternatives, allowed, name_mem = RULES[spec_id]
    for need in alternatives:
        if need <= toks and not (toks - need - allowed - DESCRIPTIVE):
            return all(any(_near(m, x) for x in name_mem) for m in mem)
    return False


def generic(name: str | None) -> bool:
    n = _norm(name or "")
    return n in GENERIC_NAMES or bool(re.fullmatch(r"(amd )?(radeon )?graphics( device)?|device [0-9a-f]{4}", n))


def match(specs: dict, name: str | None, target: str | None = None, memory_gb: float | None = None,
          partition: str | None = None) -> tuple[dict | None, str]:
    """(the row of `specs` (id -> row), how it was found) or (None, why there is none)."""
    toks, mem, mig = words(name or "")
    shown = (name or "").strip() or (target or "this device")
    if mig:
        return None, f"MIG slice {mig} of '{shown}': a piece of a chip has no whole-chip peak (% of peak not shown)"
    if partition and partition.upper() in PARTITIONS:
        return None, (f"compute partition {partition.upper()} of '{shown}': a piece of a chip has no whole-chip "
                      "peak (% of peak not shown)")
    if generic(name):
        return _by_target(target, memory_gb, specs, shown)
    norm = _norm(name or "")
    exact = [s for s in specs.values() if norm in (_norm(s["id"]), _norm(s["product"]))]
    found = exact or [specs[i] for i in RULES if i in specs and _rule_fits(i, toks, mem)]
    if len(found) > 1 and memory_gb:
        found = [s for s in found if s.get("memory_gb") and device_memory_matches(memory_gb, s["memory_gb"])]
    if len(found) > 1:
        return None, (f"'{shown}' names {' and '.join(s['id'] for s in found)} alike and its memory does not "
                      "tell them apart: no datasheet (% of peak not shown)")
    if not found:
        known = next((v for k, v in NO_DATASHEET.items() if k in toks), None)
        if known:
            return None, f"no datasheet: {known} has no published vendor datasheet in gpuparity (% of peak not shown)"
        return None, f"no datasheet: no row is '{shown}' (% of peak not shown)"
    spec = found[0]
    if memory_gb and spec.get("memory_gb") and memory_gb < PARTITION_SHARE * spec["memory_gb"] \
            and not device_memory_matches(memory_gb, spec["memory_gb"]):
        return None, (f"'{shown}' holds {memory_gb:.0f} GB of {spec['product']}'s {spec['memory_gb']:g} GB: a "
                      "partition, slice or GCD has no whole-chip peak (% of peak not shown)")
    return spec, f"datasheet row {spec['id']} by name"


def _by_target(target: str | None, memory_gb: float | None, specs: dict, shown: str) -> tuple[dict | None, str]:
    base = (target or "").split(":")[0]
    if not base:
        return None, "no datasheet: no name and no arch target (% of peak not shown)"
    rows = [s for s in specs.values() if s["target"] == base]
    if memory_gb:
        rows = [s for s in rows if s.get("memory_gb") and device_memory_matches(memory_gb, s["memory_gb"])]
    else:
        rows = []
    if len(rows) == 1:
        return rows[0], (f"datasheet row {rows[0]['id']}: generic name, {base} with {memory_gb:.0f} GB "
                         f"(within {MEMORY_TOL:.0%} of {rows[0]['memory_gb']:g} GB)")
    if rows:
        return None, (f"no datasheet: '{shown}' ({base}, {memory_gb:.0f} GB) could be "
                      f"{' or '.join(s['id'] for s in rows)} (% of peak not shown)")
    return None, f"no datasheet: no {base} row holds {memory_gb or 0:.0f} GB (% of peak not shown)"
