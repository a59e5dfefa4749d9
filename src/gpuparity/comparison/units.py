"""One unit per column: a key whose figures are in different units on the two sides gets no
ratio and no verdict. The case that matters is serving: a point measured with the server's GPUs
given (`run --set gpus=N`, `import --gpus N`) is per GPU (tokens/s/GPU), one without is per
server (tokens/s); with 8 GPUs behind one side, their ratio would be off by 8x. Such keys leave
the ratios, means and counts (comparison/ratios.compare_core), and are listed with the reason
among the results not compared (comparison/rows.not_compared), which every view prints (compare's
table, markdown, JSON, the HTML report), with a note beside the headline.
"""

from __future__ import annotations

import json

import numpy as np

from gpuparity.comparison.sides import Side

STATUS = "units differ"


def per_text(unit: str | None) -> str:
    """'per GPU (tokens/s/GPU)', 'per server (tokens/s)', or the unit itself."""
    if unit == "tokens/s/GPU":
        return "per GPU (tokens/s/GPU)"
    if unit == "tokens/s":
        return "per server (tokens/s)"
    return str(unit)


def same_unit(a: Side, b: Side, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Per matched key (ia[j] on A, ib[j] on B): whether both sides' figures are in one unit."""
    return np.fromiter((a.meta[i][4] == b.meta[j][4] for i, j in zip(ia.tolist(), ib.tolist(), strict=True)),
                       dtype=bool, count=len(ia))


def reason(unit_a: str | None, unit_b: str | None) -> str:
    hint = ("; give the server's GPUs on the per-server side (run --set gpus=N, import --gpus N)"
            if {unit_a, unit_b} == {"tokens/s", "tokens/s/GPU"} else "")
    return (f"A's figure is {per_text(unit_a)}, B's {per_text(unit_b)}: per-GPU and per-server figures never "
            f"share a ratio, so no ratio and no verdict{hint}")


def mismatched(a: Side, b: Side) -> list[dict]:
    """The not-compared entries (comparison/rows.not_compared's shape) of keys ok on both sides in
    different units: one per side, so every view says "on both sides" with the reason."""
    out = []
    for i, key in enumerate(a.keys):
        j = b.index.get(key)
        if j is None or a.meta[i][4] == b.meta[j][4]:
            continue
        workload, category, params, dtype, unit = a.meta[i]
        params = json.loads(params) if isinstance(params, str) else params
        why = reason(unit, b.meta[j][4])
        for side, u in (("A", unit), ("B", b.meta[j][4])):
            out.append({"key": key, "workload": workload, "category": category, "params": params, "dtype": dtype,
                        "unit": u, "status": STATUS, "reason": why, "side": side, "other_side": "ok"})
    return out


def note(entries: list[dict]) -> str | None:
    """The line beside the headline: how many results were left out for their units."""
    keys = {e["key"] for e in entries if e.get("status") == STATUS}
    if not keys:
        return None
    return (f"{len(keys)} result(s) not compared: their figures are per GPU on one side and per server (or another "
            "unit) on the other, which never share a ratio (see 'not compared')")
