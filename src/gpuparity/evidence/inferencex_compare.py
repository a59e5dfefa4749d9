"""InferenceX rows compared as InferenceX compares GPUs: each GPU's envelope (the best throughput per
GPU at or above each interactivity) over all its configurations (engine, parallelism, image) at one
model, precision and (isl, osl), read at equal interactivity (tokens/s per user) at levels spread
geometrically over the range both envelopes cover; rows with speculative decoding (spec_method mtp)
and without are compared apart, never mixed into one envelope.

The envelope and its interpolation are the serving comparison's (comparison/envelope), called from
one place below (`equal_interactivity`).
"""

from __future__ import annotations

SPEC_GROUPS = {"none": "no speculative decoding", "mtp": "MTP speculative decoding"}


def equal_interactivity(a: list[tuple[float, float]], b: list[tuple[float, float]], count: int) -> dict | None:
    """Each side's best-throughput envelope of its (interactivity, throughput) points, read at
    `count` levels spread geometrically over the interactivity range both cover (the serving
    comparison's math, comparison/envelope). {levels, a, b, vertices_a, vertices_b}; None when the
    ranges do not overlap."""
    from gpuparity.comparison.envelope import envelope, levels_between, overlap, throughput_at

    env_a, env_b = envelope(a), envelope(b)
    span = overlap(env_a, env_b)
    if span is None:
        return None
    at = levels_between(*span, count)
    return {"levels": at.tolist(), "a": throughput_at(env_a, at).tolist(), "b": throughput_at(env_b, at).tolist(),
            "vertices_a": list(zip(*(v.tolist() for v in env_a), strict=True)),
            "vertices_b": list(zip(*(v.tolist() for v in env_b), strict=True))}


def _group_of(row: dict) -> str:
    return "mtp" if row.get("spec_method") not in (None, "", "none") else "none"


def compare(rows: list[dict], spec_a: str, spec_b: str, *, spec_method: str = "each", levels: int = 6,
            side_filter=None) -> dict:
    """Per (model, precision, isl, osl, speculative decoding): B / A throughput per GPU at equal
    interactivity. side_filter(side, row) narrows a side (a claim's stack)."""
    groups: dict[tuple, dict[str, list]] = {}
    for r in rows:
        if r.get("source") != "inferencex" or r.get("nodes") != 1:
            continue
        group = _group_of(r)
        if spec_method != "each" and group != spec_method:
            continue
        for side, spec in (("a", spec_a), ("b", spec_b)):
            if r.get("spec_id") == spec and (side_filter is None or side_filter(side, r)):
                key = (r["model"], r.get("precision"), r["isl"], r["osl"], group)
                groups.setdefault(key, {"a": [], "b": []})[side].append(r)
    out, unpaired = [], []
    for key in sorted(groups, key=lambda k: tuple(str(x) for x in k)):
        sides = groups[key]
        model, precision, isl, osl, group = key
        base = {"model": model, "precision": precision, "isl": isl, "osl": osl, "spec": group,
                "spec_text": SPEC_GROUPS[group], "_rows": sides}
        if not (sides["a"] and sides["b"]):
            unpaired.append({**base, "side": "a" if sides["a"] else "b"})
            continue
        pts = {s: [(r["interactivity"], r["per_accelerator"]) for r in sides[s]] for s in "ab"}
        env = equal_interactivity(pts["a"], pts["b"], levels)
        if env is None:
            unpaired.append({**base, "side": "both", "note": "the interactivity ranges do not overlap"})
            continue
        at = env["levels"]
        out.append({**base, "levels": [{"interactivity": x, "a": a, "b": b, "ratio": b / a}
                                       for x, a, b in zip(at, env["a"], env["b"], strict=True)],
                    "range": [at[0], at[-1]], "configs": {s: len({r["system"] for r in sides[s]}) for s in "ab"},
                    "points": {s: len(sides[s]) for s in "ab"},
                    "envelope_rows": {s: _vertex_rows(sides[s], env[f"vertices_{s}"]) for s in "ab"}})
    return {"a": spec_a, "b": spec_b, "groups": out, "unpaired": unpaired}


def _vertex_rows(rows: list[dict], vertices: list[tuple]) -> list[dict]:
    """The rows that make an envelope (its vertices), highest interactivity first."""
    out = []
    for x, y in sorted(vertices, reverse=True):
        row = next((r for r in rows if r["interactivity"] == x and r["per_accelerator"] == y), None)
        if row is not None and row not in out:
            out.append(row)
    return out
