"""What a comparison says about its two sides: each side summarised (runs, hosts, products,
price, power basis, run-to-run spread, CPU load), what differs between their fingerprints (A/A:
nothing does) and the scope (one box a side: the verdicts are about these boxes)."""

from __future__ import annotations

import numpy as np

from gpuparity.comparison.estimate import SideEstimate
from gpuparity.comparison.load import load_words
from gpuparity.comparison.ratios import Core, run_spread
from gpuparity.comparison.sides import Side

VOLATILE_FINGERPRINT = ("telemetry", "unknown", "slurm")     # describe the moment (and job), not the platform


def _flatten(obj, prefix: str = "") -> dict:
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: obj}


def fingerprint_diff(fa: dict | None, fb: dict | None) -> dict:
    """What differs between two fingerprints (dotted field names), volatile fields left out."""
    flat_a = {k: v for k, v in _flatten(fa or {}).items() if not k.startswith(VOLATILE_FINGERPRINT)}
    flat_b = {k: v for k, v in _flatten(fb or {}).items() if not k.startswith(VOLATILE_FINGERPRINT)}
    diff = sorted(k for k in set(flat_a) | set(flat_b) if flat_a.get(k) != flat_b.get(k))
    return {"identical": not diff and bool(flat_a), "differences": diff,
            "values": {k: [flat_a.get(k), flat_b.get(k)] for k in diff[:200]}}


def side_summary(side: Side, prices, floor: float | None = None, est: SideEstimate | None = None) -> dict:
    newest = side.runs[-1] if side.runs else {}
    spec = (newest.get("fingerprint") or {}).get("spec") or {}
    price, source = prices.price(spec.get("id")) if prices else (None, None)
    why = (newest.get("fingerprint") or {}).get("spec_match")
    if prices and not spec.get("id") and isinstance(why, str):     # why no datasheet row, so no price
        source = f"price unknown: {why}"

    def uniq(name):
        return sorted({str(r.get(name)) for r in side.runs if r.get(name) is not None})

    powered = int(np.isfinite(side.power).sum())
    units = np.bincount(side.u_key, minlength=len(side.keys)) if len(side.keys) else np.zeros(0)
    spreads = (est.basis if est is not None else {})
    assumed = [v["spread"] for v in spreads.values() if v["source"] != "runs"]
    return {
        "label": side.label, "run_ids": [r["run_id"] for r in side.runs], "hosts": uniq("host"),
        "products": uniq("product"), "spec_ids": uniq("spec_id"), "stacks": uniq("stack"), "torch": uniq("torch"),
        "drivers": uniq("driver"), "labels": uniq("label"), "jobs": uniq("job"), "nodes": uniq("node"),
        "started": [side.runs[0]["started_at"], newest["started_at"]] if side.runs else [],
        "n_results": len(side.keys) + len(side.failed), "spec_estimated": bool(spec.get("estimated")),
        "runs": len(side.runs), "trials": int(units.sum()),
        "trials_per_result": float(np.median(units)) if len(units) else 0.0,
        "runs_per_result": float(np.median(side.n_runs)) if len(side.n_runs) else 0.0,
        "single_trial_results": int((units == 1).sum()),
        "run_spread_assumed": max(assumed) if assumed else (run_spread(floor) if est is None else None),
        "run_spread": {cat: dict(v) for cat, v in spreads.items()},
        "contended": bool(side.contended), "contention": side.contended,
        "usd_per_hour": price, "price_source": source, "tdp_w": spec.get("tdp_w"),
        "power": (f"measured on {powered} of {len(side.keys)} results, TDP elsewhere" if powered
                  else "datasheet TDP (no valid power telemetry)" if spec.get("tdp_w") else "unknown"),
        "fingerprint": newest.get("fingerprint"),
    }


def compared_sides(a: Side, b: Side, core: Core, prices, floor: float | None) -> tuple[dict, dict, dict]:
    """(A's summary, B's, the A/A check) of a comparison: each summary with the CPU load its
    figures were timed beside; A/A where the fingerprints are identical and each side is one
    product."""
    sa, sb = side_summary(a, prices, floor, core.est_a), side_summary(b, prices, floor, core.est_b)
    for summary, side, share in ((sa, a, core.load_a), (sb, b, core.load_b)):
        seen = share[np.isfinite(share)]
        summary["load"] = {"max": float(seen.max()) if len(seen) else None, "text": load_words(side, share)}
    aa = fingerprint_diff(sa.get("fingerprint"), sb.get("fingerprint"))
    aa["identical"] = aa["identical"] and len(sa["products"]) <= 1 and len(sb["products"]) <= 1
    return sa, sb, aa


def scope(sa: dict, sb: dict) -> dict:
    """What the verdicts are about: these boxes (one host a side), or the products (several)."""
    ha, hb = sa["hosts"], sb["hosts"]
    one_box = len(ha) <= 1 and len(hb) <= 1

    def spread(s: dict) -> str:
        parts = sorted({f"{100 * v['spread']:.1f}% {v['source'] if v['source'] != 'runs' else 'measured'}"
                        for v in (s.get("run_spread") or {}).values() if v.get("spread") is not None})
        return ", ".join(parts) or "?"

    if one_box:
        boxes = f"{(ha or ['?'])[0]} vs {(hb or ['?'])[0]}" if ha != hb else f"{(ha or ['?'])[0]} on both sides"
        text = (f"one box a side ({boxes}): the verdicts are about these boxes; as a claim about "
                f"{'/'.join(sa['products']) or 'A'} vs {'/'.join(sb['products']) or 'B'} they assume that another "
                f"box of the same product differs by no more than the run-to-run spread used here "
                f"(A: {spread(sa)}; B: {spread(sb)})")
    else:
        text = (f"side A spans {len(ha)} box(es), side B {len(hb)}: box-to-box spread is inside the run-to-run "
                "spread measured")
    return {"claim": "boxes" if one_box else "platforms", "hosts": {"A": ha, "B": hb}, "text": text}
