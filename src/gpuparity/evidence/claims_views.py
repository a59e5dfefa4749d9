"""What the claims page draws beside the verdicts, from the store's reference rows: ROCm's gap to CUDA
round by round per generation pair (evidence/gaps), and the same systems across rounds with their
software stacks (evidence/series), both as plain data for the report."""

from __future__ import annotations


def claims_extras(store) -> dict:
    from gpuparity.evidence.citations import url_of
    from gpuparity.evidence.gaps import generation_gaps
    from gpuparity.evidence.reference import stored_rows
    from gpuparity.evidence.series import fold_twins, series

    rows = [r for source in ("mlperf-inference", "mlperf-training") for r in stored_rows(store, source)[0]]
    trend = []
    for s in fold_twins([s for s in series(rows) if len(s["points"]) > 1]):
        per = s["accelerators"] or 1
        trend.append({k: s[k] for k in ("source", "benchmark", "scenario", "precision", "part", "accelerators",
                                        "nodes", "submitter", "system", "uplift", "units")}
                     | {"points": [{"round": p["round"], "stack": p["stack"], "url": url_of(p["row"]),
                                    "value": p["value"] if s["source"] == "mlperf-training" else p["value"] / per}
                                   for p in s["points"]]})
    gaps = [{**g, "lines": [{k: v for k, v in line.items()} for line in g["lines"]]} for g in generation_gaps(rows)]
    return {"gaps": gaps, "trend": trend}


def measured_lines(r: dict, limit: int = 10**6) -> list[str]:
    """'label: 1.18 (not supported)' per check, the spread beside it where known."""
    out = []
    for c in r.get("checks") or []:
        value = "none" if c.get("value") is None else f"{c['value']:.4g}"
        spread = f" [{c['spread'][0]:.3g}-{c['spread'][1]:.3g}]" if c.get("spread") else ""
        share = f", {c['share']:.0%} of claimed" if c.get("share") is not None and c["grade"] in (
            "partly", "not supported") else ""
        out.append(f"{c['label']}: {value}{spread} ({c['grade']}{share})")
    return out[:limit] + ([f"... {len(out) - limit} more (-f json lists all)"] if len(out) > limit else [])


def urls_of(r: dict) -> list[str]:
    """The URLs a verdict's evidence cites, each once."""
    return list(dict.fromkeys(e["url"] for e in r.get("evidence") or [] if e.get("url")))
