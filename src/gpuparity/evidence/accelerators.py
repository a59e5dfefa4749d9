"""An accelerator name as MLPerf publishes it -> the spec row of the part (or none), and whether the
field names a mixed system.

MLPerf spells parts as "Virtualized NVIDIA H200-SXM-141GB", "AMD Instinct MI300X-NPS1-SPX-192GB-750W",
"NVIDIA B300-SXM-270GB" (also "Nvidia B300-SXM-270GB"), "NVIDIA GB300", "NVIDIA Vera Rubin".
Partition modes, power caps and "(xN)" / "(xNxM)" counts say nothing about which part it is.
A field that names two parts, joined by ", ", " + ", " and " or ";" ("NVIDIA H200-SXM-141GB + AMD
Instinct MI350X 288GB HBM3e", "AMD Instinct MI300X 192GB HBM3 (x2x8) and AMD Instinct MI355X 288GB
HBM3e (x2x8)"), is mixed: it maps to no part and never stands for either. The same part named twice
("NVIDIA B200-SXM-180GB (x8), NVIDIA B200-SXM-180GB (x8)") is one part.

Every pattern anchors a digit run at its start and bounds it, so a long run of digits is scanned
once (no quadratic backtracking).
"""

from __future__ import annotations

import re
from functools import lru_cache

_NOISE = re.compile(r"\bvirtuali[sz]ed\b|\(x\d{1,6}(?:x\d{1,6})?\)|\bnps\d\b|\b[sdqc]px\b|\b\d{1,5}\s?w\b", re.I)
_JOINS = re.compile(r",|;|\s\+\s|\s+and\s+", re.I)
_VARIANTS = {"cts": "CTS (custom thermal)", "dlc": "DLC (direct liquid cooling)", "nvl": "NVL", "pcie": "PCIe"}


def clean_accelerator(text: str) -> str:
    text = _NOISE.sub(" ", text.replace("-", " ").replace("_", " "))
    return " ".join(text.split())


@lru_cache(maxsize=4096)
def map_accelerator(text: str) -> dict:
    """{'name', 'spec_id', 'vendor', 'mixed', 'variant', 'base_spec_id'}; spec_id None when the part
    has no spec row. A product variant without its own row (custom thermal 'CTS', liquid-cooled 'DLC', or an 'NVL' or
    'PCIe' edition of a part that has none) is its own product: its spec_id is None and
    base_spec_id names the part it varies, so a comparison pools the two only when asked to; an
    edition with its own row (H100 NVL, H200 NVL) is that row's part."""
    none = {"name": None, "spec_id": None, "vendor": None, "mixed": False, "variant": None, "base_spec_id": None}
    parts = [clean_accelerator(p) for p in _JOINS.split((text or "")[:300]) if p.strip()]
    parts = [p for p in parts if p]
    if not parts:
        return none
    mapped = [_spec_for(p) for p in parts]
    if len({((m[0] or m[1] or {}).get("id", p.lower()), m[2]) for m, p in zip(mapped, parts, strict=True)}) > 1:
        return {**none, "name": "; ".join(parts), "mixed": True}
    spec, base, variant = mapped[0]
    vendor = (spec or base or {}).get("vendor") or next((v for v in ("AMD", "NVIDIA", "Intel")
                                                         if v.lower() in text.lower()), None)
    return {"name": parts[0], "spec_id": spec["id"] if spec else None, "vendor": vendor, "mixed": False,
            "variant": variant, "base_spec_id": base["id"] if base else None}


def _spec_for(name: str) -> tuple[dict | None, dict | None, str | None]:
    """(spec, base spec of a variant, variant name): one of the first two is None. A part with its
    own row is its own product (the H200 NVL); a variant without one ('CTS' custom thermal) keeps
    the row of the part it varies as its base."""
    from gpuparity.platform.specs import match_spec

    spec = match_spec(name)       # a memory size in the name must be the row's (platform.spec_match)
    if spec:
        return spec, None, None
    for key, label in _VARIANTS.items():
        if re.search(rf"\b{key}\b", name, re.I):
            base = match_spec(re.sub(rf"\b{key}\b", " ", name, flags=re.I))
            if base:
                return None, base, label
    return None, None, None
