"""Platform fingerprints side by side: what differs between A and B first, the rest after."""

from __future__ import annotations

import json

MAX_VALUE = 300      # characters of one field's text (a long library list is cut, the diff still sees it)


def flatten(fp, prefix: str = "") -> dict[str, str]:
    """{"spec.memory_gb": "192", "env": "HIP_VISIBLE_DEVICES=0", ...}: dotted paths to text."""
    out: dict[str, str] = {}
    if isinstance(fp, dict):
        for k, v in fp.items():
            out.update(flatten(v, f"{prefix}{k}."))
        if not fp and prefix:
            out[prefix[:-1]] = ""
        return out
    if isinstance(fp, list):
        text = ", ".join(map(str, fp)) if all(not isinstance(x, (dict, list)) for x in fp) else json.dumps(
            fp, default=str, separators=(",", ":"))
    elif fp is None:
        text = ""
    else:
        text = str(fp)
    out[prefix[:-1] if prefix else "value"] = text
    return out


def diff(fp_a: dict | None, fp_b: dict | None) -> dict:
    """{"different": [(field, a, b)], "datasheet": [(field, a, b)], "same": [(field, value)]}:
    the platform fields that differ (software, driver, host, environment), the datasheet (spec.*)
    fields that differ (they follow from the products), and the fields equal on both sides.
    A field missing on a side reads ''."""
    a, b = flatten(fp_a or {}), flatten(fp_b or {})
    fields = list(dict.fromkeys([*a, *b]))
    changed = [(f, _cut(a.get(f, "")), _cut(b.get(f, ""))) for f in fields if a.get(f, "") != b.get(f, "")]
    same = [(f, _cut(a[f])) for f in fields if f in a and a.get(f, "") == b.get(f, "") and a[f] != ""]
    return {"different": [c for c in changed if not c[0].startswith("spec.")],
            "datasheet": [c for c in changed if c[0].startswith("spec.")], "same": same}


def _cut(text: str) -> str:
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 1] + "…"
