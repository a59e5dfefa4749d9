"""Which results of a side carry a flag, which flags hold a verdict at "inconclusive", and why
each row's verdict is held (its "held"). The throttling rule: a result flagged "throttled" is held
unless the driver's reasons for it were power (or current) capping alone (comparison/compare.py
says why)."""

from __future__ import annotations

import numpy as np

from gpuparity.comparison.sides import Side
from gpuparity.results.figure import UNVERIFIED_TOKENS

NO_CLAIM = {"unstable", "host_bound", UNVERIFIED_TOKENS}      # flags that hold a verdict at "inconclusive"
STEADY_THROTTLE = ("power", "current")      # driver reasons a throttled result may show and keep its verdict


def throttle_reasons(info: dict) -> set[str] | None:
    """The driver's reasons the loop recorded for a result's throttled batches ("device 0:
    power/thermal throttling, ..." in info.throttle_reasons_seen), None where none is recorded."""
    from gpuparity.measure.telemetry import DIP_REASONS

    seen = [str(x) for x in info.get("throttle_reasons_seen") or []]
    return {r for r in DIP_REASONS for text in seen if r in text} or None


def hot_throttled(side: Side) -> np.ndarray:
    """Per key of a side: flagged throttled and not shown to be power (or current) capping alone:
    reasons from the documents read (side.extras, or those compare_sides read from the store)."""
    mask = flag_mask(side, "throttled").copy()
    read = getattr(side, "_throttle_infos", {})
    for k in np.nonzero(mask)[0].tolist():
        infos = (side.extras.get(k) or {}).get("infos") or read.get(k) or []
        reasons = set().union(*[throttle_reasons(i) or set() for i in infos])
        if reasons and reasons <= set(STEADY_THROTTLE):     # the power cap's alone: steady state
            mask[k] = False
    return mask


def read_throttle_infos(side: Side, stores=None, most: int = 20) -> None:
    """For a side read from a store (no documents): the result infos of its keys flagged
    throttled, from the documents of the runs that hold them (at most `most` runs: throttled
    results are rare; past that a key's reasons stay unknown and it is held)."""
    keys = np.nonzero(flag_mask(side, "throttled"))[0]
    keys = [k for k in keys.tolist() if k not in side.extras]
    if not keys or not side.origin:
        return
    from contextlib import nullcontext

    from gpuparity.results.store import Store

    held = np.isin(side.u_key, keys)
    runs = sorted(set(side.u_run[held].tolist()))[:most]
    wanted = {side.keys[k]: k for k in keys}
    found: dict[int, list] = {}
    with nullcontext(stores.get(side.origin)) if stores is not None else Store(side.origin) as store:
        for r in runs:
            for res in store.get_run(side.runs[r]["run_id"]).get("results") or []:
                if res.get("key") in wanted and "throttled" in (res.get("flags") or []):
                    found.setdefault(wanted[res["key"]], []).append(res.get("info") or {})
    side._throttle_infos = found


def flag_mask(side: Side, flag: str) -> np.ndarray:
    """Per key of a side: whether its results carry `flag` (one pass over the flagged keys)."""
    masks = getattr(side, "_flag_masks", None)
    if masks is None:
        masks = side._flag_masks = {}
        flagged = [(i, f) for i, f in enumerate(side.flags) if f]
        for name in {x for _, f in flagged for x in f}:
            masks[name] = np.zeros(len(side.flags), dtype=bool)
            masks[name][[i for i, f in flagged if name in f]] = True
    return masks.get(flag, np.zeros(len(side.flags), dtype=bool))


def flagged(a: Side, b: Side, ia: np.ndarray, ib: np.ndarray, flag: str) -> np.ndarray:
    """Per matched key: whether its results carry `flag` on either side."""
    return (flag_mask(a, flag)[ia] | flag_mask(b, flag)[ib]) if len(ia) else np.zeros(0, dtype=bool)


def contended_words(core) -> str:
    """Why every verdict of a comparison with a contended side is held: 'side B contended'."""
    return "side " + " and ".join(c["side"] for c in core.contended) + " contended"


def held(core, order: np.ndarray, flags: list) -> list:
    """Per row (in `order`) of a comparison's core (comparison/ratios.Core): why its verdict is
    held at inconclusive, None where it is not."""
    reasons = getattr(core, "reasons", None) or {}
    if core.contended:      # a server check's reason first: it holds the verdict on any machine
        return [reasons.get(int(k)) or contended_words(core) for k in order.tolist()]
    out = [None] * len(order)
    throttled = core.throttled[order]
    for j in np.nonzero(core.flagged[order])[0].tolist():
        named = [f for f in flags[j] if f == "contended" or f in NO_CLAIM]
        out[j] = reasons.get(int(order[j])) or (named[0] if named else "throttled (heat, hardware or unknown)"
                                                 if throttled[j] else "flagged")
    return out
