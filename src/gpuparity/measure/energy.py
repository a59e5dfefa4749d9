"""Energy over a measured window from recorded power / energy-counter traces, and the checks that
decide whether to trust it.

Pure functions on samples (no device access), so every rule is tested on known traces.
Units: time in seconds on the monotonic clock, power in W, counters in J.

- Power is integrated with the trapezoid rule over exactly [t0, t1], interpolating linearly at
  the window's edges.
- A hardware energy counter, where the device has one, is a cross-check: it must agree within
  `Rules.counter_tolerance`, must not stall while the device draws power, and must not go
  backwards except at a documented wrap (RAPL's max_energy_range_uj).
- Devices with a counter but no power reading (RAPL) take their energy from counter deltas.
- A window may be a list of busy intervals (the timed samples, without the host gaps between
  batches): energy is the sum over the intervals and mean power is over their total (busy) time;
  the reading gaps and sample counts are judged over the span from the first to the last.
- Throttling is what the driver says (NVML clock event reasons, amdsmi throttle status), never a
  clock ratio: a power-capped clock below its boost maximum is normal operation on some parts.
- A trace that breaks a rule is kept and marked invalid with the reasons; nothing is dropped
  silently.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import pairwise


@dataclass
class Sample:
    t: float                          # seconds, monotonic clock
    power_w: float | None = None
    energy_j: float | None = None     # the device's cumulative energy counter, raw (before wrap handling)
    sm_mhz: float | None = None       # SM / GFX clock
    mem_mhz: float | None = None
    temp_c: float | None = None
    throttle: bool | None = None      # a clock-limiting reason (power, current, thermal, hw slowdown) is active
    throttle_reasons: tuple[str, ...] = ()   # which ones (measure.samplers decodes them)


@dataclass
class DeviceTrace:
    index: int
    samples: list[Sample] = field(default_factory=list)
    name: str = ""
    wrap_j: float | None = None       # documented counter wrap (RAPL max_energy_range_uj); None: never wraps
    max_sm_mhz: float | None = None   # the device's maximum SM clock (recorded, not a throttle rule)


@dataclass
class Rules:
    rate_hz: float = 20.0
    max_gap_s: float | None = None    # None: 3 sampling periods
    min_samples: int = 5
    counter_tolerance: float = 0.05
    stall_samples: int = 5            # a counter unchanged over this many intervals ...
    stall_min_s: float = 0.25         # ... and at least this long ...
    stall_min_power_w: float = 1.0    # ... while the device draws more than this: stalled

    @property
    def gap_limit_s(self) -> float:
        return self.max_gap_s if self.max_gap_s is not None else 3.0 / self.rate_hz


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def interp(ts: list[float], vs: list[float], t: float) -> float:
    """Linear interpolation; held flat outside the samples."""
    if t <= ts[0]:
        return vs[0]
    if t >= ts[-1]:
        return vs[-1]
    i = bisect_right(ts, t)
    ta, tb, va, vb = ts[i - 1], ts[i], vs[i - 1], vs[i]
    return va if tb == ta else va + (vb - va) * (t - ta) / (tb - ta)


def integrate(ts: list[float], vs: list[float], t0: float, t1: float) -> float:
    """Trapezoid integral of v(t) over exactly [t0, t1], interpolating at the edges."""
    if not ts or t1 <= t0:
        return 0.0
    lo, hi = bisect_right(ts, t0), bisect_left(ts, t1)
    pts = [(t0, interp(ts, vs, t0)), *zip(ts[lo:hi], vs[lo:hi], strict=True), (t1, interp(ts, vs, t1))]
    return sum((tb - ta) * (va + vb) / 2 for (ta, va), (tb, vb) in pairwise(pts))


def unwrap(values: list[float], wrap_j: float | None) -> tuple[list[float], int, int]:
    """Cumulative energy since the first reading -> (cumulative, backward steps, wraps).

    A drop is a wrap only where the counter documents one and the wrapped step is plausible
    (under half the range); any other drop is a counter going backwards, counted as no energy.
    """
    cum, backwards, wraps = [0.0], 0, 0
    for a, b in pairwise(values):
        d = b - a
        if d < 0:
            if wrap_j and d + wrap_j < wrap_j / 2:
                d += wrap_j
                wraps += 1
            else:
                backwards += 1
                d = 0.0
        cum.append(cum[-1] + d)
    return cum, backwards, wraps


def longest_stall(ts: list[float], cum: list[float], power: tuple[list[float], list[float]] | None,
                  rules: Rules) -> float:
    """Longest span (s) over which the counter did not move while the device drew power."""
    if power is None or not power[0]:
        return 0.0  # nothing says the device drew power: a still counter may be right
    longest, start = 0.0, 0
    for i in range(1, len(cum) + 1):
        if i < len(cum) and cum[i] == cum[start]:
            continue
        end = i - 1
        span = ts[end] - ts[start]
        if end - start >= rules.stall_samples and span >= rules.stall_min_s:
            mean_p = integrate(*power, ts[start], ts[end]) / span
            if mean_p > rules.stall_min_power_w:
                longest = max(longest, span)
        start = i
    return longest


def _max_gap(ts: list[float], t0: float, t1: float) -> float:
    """Largest time without a reading across [t0, t1], the window's edges included."""
    if not ts:
        return t1 - t0
    lo = max(bisect_right(ts, t0) - 1, 0)
    hi = min(bisect_left(ts, t1) + 1, len(ts))
    inside = ts[lo:hi]
    gaps = [b - a for a, b in pairwise(inside)]
    gaps.append(max(inside[0] - t0, 0.0))
    gaps.append(max(t1 - inside[-1], 0.0))
    return max(gaps)


def _over(ts: list[float], vs: list[float], spans: list[tuple[float, float]], integral: bool) -> float:
    """Sum over the intervals of the integral of v (integral) or of v's rise (a cumulative counter)."""
    if integral:
        return sum(integrate(ts, vs, a, b) for a, b in spans)
    return sum(interp(ts, vs, b) - interp(ts, vs, a) for a, b in spans)


def analyze_device(trace: DeviceTrace, t0: float, t1: float, rules: Rules,
                   intervals: list[tuple[float, float]] | None = None) -> dict:
    """Energy, power, clocks and the broken rules of one device over [t0, t1], or over the busy
    `intervals` inside it."""
    name = f"device {trace.index}"
    out: dict = {"index": trace.index, "name": trace.name, "reasons": []}
    reasons = out["reasons"]
    spans = intervals or [(t0, t1)]
    dur = sum(b - a for a, b in spans)
    out["busy_s"] = dur
    if dur <= 0 or t1 <= t0:
        reasons.append(f"{name}: empty window ({dur:.3g} s)")
        return out
    samples = sorted(trace.samples, key=lambda s: s.t)
    inwin = [s for s in samples if t0 <= s.t <= t1]
    out["n_samples"] = len(inwin)
    out["sample_hz"] = (len(inwin) - 1) / (inwin[-1].t - inwin[0].t) if len(inwin) > 1 and \
        inwin[-1].t > inwin[0].t else None
    if len(inwin) < rules.min_samples:
        reasons.append(f"{name}: {len(inwin)} samples in the window (need {rules.min_samples})")

    pw = [(s.t, float(s.power_w)) for s in samples if _finite(s.power_w) and s.power_w >= 0]
    ctr = [(s.t, float(s.energy_j)) for s in samples if _finite(s.energy_j)]
    power = ([t for t, _ in pw], [p for _, p in pw]) if pw else None
    used = power[0] if power else [t for t, _ in ctr]
    if not used:
        reasons.append(f"{name}: no power or energy readings")
        return out
    gap = _max_gap(used, t0, t1)
    out["max_gap_s"] = gap
    if gap > rules.gap_limit_s:
        reasons.append(f"{name}: {gap:.3f} s without a reading (limit {rules.gap_limit_s:.3f} s)")
    bad = sum(1 for s in inwin if s.power_w is not None and not (_finite(s.power_w) and s.power_w >= 0))
    if bad:
        reasons.append(f"{name}: {bad} unusable power readings")

    if power:
        out["energy_j"] = _over(*power, spans, integral=True)
    if ctr:
        cts = [t for t, _ in ctr]
        cum, backwards, wraps = unwrap([e for _, e in ctr], trace.wrap_j)
        counter_j = _over(cts, cum, spans, integral=False)
        out["energy_counter_j"] = counter_j
        out["counter_wraps"] = wraps
        if backwards:
            reasons.append(f"{name}: energy counter went backwards {backwards} time(s)")
        stall = longest_stall(cts, cum, power, rules)
        if stall:
            reasons.append(f"{name}: energy counter stalled for {stall:.2f} s while drawing power")
        if power:
            if counter_j > 0:
                agree = (out["energy_j"] - counter_j) / counter_j
                out["counter_agreement"] = agree
                if abs(agree) > rules.counter_tolerance:
                    reasons.append(f"{name}: integrated power and energy counter differ by {100 * agree:+.1f}% "
                                   f"(limit {100 * rules.counter_tolerance:.0f}%)")
        else:
            out["energy_j"] = counter_j  # counter-only device (RAPL): power = dE/dt
    out["mean_power_w"] = out["energy_j"] / dur

    clocks = [s.sm_mhz for s in inwin if _finite(s.sm_mhz)]
    if clocks:
        out["mean_clock_mhz"] = sum(clocks) / len(clocks)
        out["max_clock_mhz"] = max(clocks)
    temps = [s.temp_c for s in inwin if _finite(s.temp_c)]
    if temps:
        out["max_temp_c"] = max(temps)
    known = [s for s in inwin if s.throttle is not None]
    out["throttled"], out["throttle_known"] = sum(bool(s.throttle) for s in known), len(known)
    counts: dict[str, int] = {}
    for s in known:
        for r in s.throttle_reasons:
            counts[r] = counts.get(r, 0) + 1
    out["throttle_counts"] = counts
    return out


def analyze(traces: list[DeviceTrace], t0: float, t1: float, rules: Rules,
            expected_devices: int | None = None, intervals: list[tuple[float, float]] | None = None) -> dict:
    """All devices together: energies add up; any device's broken rule makes the whole invalid.
    window_s is the span [t0, t1]; busy_s the time integrated (the intervals' total)."""
    devs = [analyze_device(tr, t0, t1, rules, intervals) for tr in traces]
    reasons = [r for d in devs for r in d["reasons"]]
    measured = [d for d in devs if d.get("energy_j") is not None]
    if expected_devices is not None and len(measured) != expected_devices:
        reasons.append(f"energy for {len(measured)} device(s), expected {expected_devices}")
    dur = sum(b - a for a, b in intervals) if intervals else t1 - t0
    out: dict = {"valid": not reasons, "reasons": reasons, "window_s": t1 - t0, "busy_s": dur, "devices": devs}
    if measured and len(measured) == len(devs):
        out["energy_j"] = sum(d["energy_j"] for d in devs)
        out["mean_power_w"] = out["energy_j"] / dur
    counters = [d.get("energy_counter_j") for d in devs]
    if devs and all(c is not None for c in counters):
        out["energy_counter_j"] = sum(counters)
        agreements = [d.get("counter_agreement") for d in devs]
        if all(a is not None for a in agreements) and out["energy_counter_j"] > 0 and "energy_j" in out:
            out["counter_agreement"] = (out["energy_j"] - out["energy_counter_j"]) / out["energy_counter_j"]
    counts = [d.get("n_samples", 0) for d in devs]
    out["n_samples"] = min(counts) if counts else 0
    rates = [d["sample_hz"] for d in devs if d.get("sample_hz")]
    out["sample_hz"] = min(rates) if rates else None
    known = sum(d.get("throttle_known", 0) for d in devs)
    out["throttled_share"] = sum(d.get("throttled", 0) for d in devs) / known if known else None
    if known:
        names = {r for d in devs for r in d.get("throttle_counts", {})}
        out["throttle_reasons"] = {r: sum(d.get("throttle_counts", {}).get(r, 0) for d in devs) / known
                                   for r in sorted(names)}
    clocks = [d for d in devs if d.get("mean_clock_mhz") is not None]
    if clocks:
        out["mean_clock_mhz"] = sum(d["mean_clock_mhz"] for d in clocks) / len(clocks)
        out["max_clock_mhz"] = max(d["max_clock_mhz"] for d in clocks)
    temps = [d["max_temp_c"] for d in devs if d.get("max_temp_c") is not None]
    if temps:
        out["max_temp_c"] = max(temps)
    return out
