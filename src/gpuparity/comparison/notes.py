"""The notes of a comparison document, in the order a reader needs them: contended sides, where a
one-run side's run-to-run spread came from, A/A, results held by their flags or by heat, pooled
products, per-watt ratios without measured power, and the scope when it is these boxes."""

from __future__ import annotations

from gpuparity.comparison.estimate import SideEstimate
from gpuparity.comparison.flags import flagged
from gpuparity.comparison.ratios import Core
from gpuparity.comparison.sides import Side


def _spread_notes(sides: list[Side], ests: list[SideEstimate]) -> list[str]:
    """Where each one-run side's run-to-run spread came from, one line per distinct source."""
    lines: dict[str, list[tuple]] = {}
    for side, est in zip(sides, ests, strict=True):
        for cat, b in est.basis.items():
            if b["source"] != "runs":
                lines.setdefault(b["text"], []).append((side.label, cat))     # a label may hold spaces (trend)
    out = []
    for text, where in lines.items():
        sides_text = " and ".join(dict.fromkeys(label for label, _ in where))
        cats = sorted({cat for _, cat in where})
        out.append(f"one run a side cannot measure its run-to-run spread: side {sides_text} ({', '.join(cats)}): "
                   f"{text}; --run-spread sets it, a second run measures it")
    return out


def _contention_notes(core: Core, a: Side, b: Side) -> list[str]:
    notes = []
    for c in core.contended:
        runs = "; ".join(f"run {r['run_id']}: {', '.join(r['reasons']) or 'busy'}" for r in c["runs"][:3])
        notes.append(f"side {c['side']} was contended (the machine was busy: {runs}): no result, category or "
                     "overall verdict is faster or slower; rerun it on a quiet machine")
    keys = int(flagged(a, b, core.ia, core.ib, "contended").sum())
    if keys and not core.contended:
        notes.append(f"{keys} result(s) contended on a side (throttled or disturbed while timed): their verdicts "
                     "are at most inconclusive")
    return notes


def throttle_sight(side: Side) -> str | None:
    """Why a side's GPU runs could not observe throttling at all (measure.throttle.observable on
    each run's telemetry description); None when every GPU run could, or it has none."""
    from gpuparity.measure.throttle import observable

    for run in side.runs:
        fp = run.get("fingerprint") or {}
        if fp.get("backend") in ("cuda", "rocm"):
            seen, how = observable(fp.get("telemetry"))
            if not seen:
                return how
    return None


def _throttle_sight_notes(a: Side, b: Side) -> list[str]:
    """One side's driver and clocks could not be read: its throttled batches were neither dropped
    nor flagged, while the other side's were, so the two were not held to one rule."""
    blind = {side.label: throttle_sight(side) for side in (a, b)}
    out = []
    for side, other in ((a, b), (b, a)):
        if blind[side.label] and not blind[other.label] and any(
                (r.get("fingerprint") or {}).get("backend") in ("cuda", "rocm") for r in other.runs):
            out.append(f"side {side.label} could not observe throttling ({blind[side.label]}): its throttled "
                       f"batches were neither dropped nor flagged, while side {other.label}'s were")
    return out


def document_notes(a: Side, b: Side, core: Core, aa: dict, watt_mixed: int, doc_scope: dict) -> list[str]:
    notes = _contention_notes(core, a, b)
    notes += _throttle_sight_notes(a, b)
    notes += _spread_notes([a, b], [core.est_a, core.est_b])
    if aa.get("identical"):
        notes.append("A/A: both sides have identical fingerprints (same host, hardware, driver and stack); "
                     "any faster/slower verdict here is noise or drift")
    if core.unstable.any():
        notes.append(f"{int(core.unstable.sum())} result(s) unstable, host-bound or with token counts no "
                     "tokenizer checked on a side: their verdicts are at most inconclusive")
    if core.throttled.any():
        notes.append(f"{int(core.throttled.sum())} result(s) throttled while timed by heat or a hardware slowdown "
                     "(or for reasons not recorded) on a side: their verdicts are at most inconclusive; power "
                     "capping alone is the platform's steady state and keeps its verdict")
    for side in (a, b):
        if len(side_products := {r.get("product") for r in side.runs}) > 1:
            notes.append(f"side {side.label} pools {len(side_products)} products: "
                         f"{', '.join(sorted(str(p) for p in side_products))}")
    if watt_mixed:
        notes.append(f"per watt: {watt_mixed} row(s) without measured power on both sides (datasheet TDP): shown as "
                     "plain ratios, no verdict")
    if doc_scope["claim"] == "boxes":
        notes.append("scope: " + doc_scope["text"])
    return notes
