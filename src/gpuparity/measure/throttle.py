"""One notion of a throttled window on both vendors, fed by what each driver can say, with the
source named.

Sources, best first (per device; measure.samplers picks the first that reads on it):
- NVIDIA: NVML clock event reasons (bit mask: power cap, thermal, hardware slowdown).
- AMD: where amdsmi_get_violation_status answers (amdsmi 6.4+, MI300 and later), the violations it
  reports (PPT power, socket / VR / HBM thermal, PROCHOT) read from gpu_metrics' residency
  accumulators, as it reads them: a violation is active where its residency advanced since the last
  reading (the call itself reads the metrics twice 100 ms apart: too slow to make per sample, and a
  stall only one vendor's batches would get); else gpu_metrics indep_throttle_status, else throttle_status: bit masks up to
  amdsmi 6.0, bools (or "N/A") from 6.1, which say "throttled" without a reason ("unspecified").
  MI300's metrics have neither flag ("N/A"), so there only the violation status or the clock speaks.
- Either vendor, where the driver reports nothing: the SM clock against its warmed-up reading
  alone ("clock dip").

A timed batch is throttled (measure.loop drops it) when a clock-limiting reason is active and the
SM clock is below a share of its warmed-up reading; with the clock-dip source, the dip alone. A
run records each device's source in its telemetry description, so a comparison can say when one
side could not observe throttling at all.
"""

from __future__ import annotations

import math

NVML = "NVML clock event reasons"
AMD_VIOLATION = "amdsmi violations (gpu_metrics residencies)"
AMD_INDEP = "amdsmi gpu_metrics indep_throttle_status"
AMD_LEGACY = "amdsmi gpu_metrics throttle_status"
CLOCK = "SM clock dips (the driver reports no throttle reasons here)"
DRIVER_SOURCES = (NVML, AMD_VIOLATION, AMD_INDEP, AMD_LEGACY)

# Reasons that mark a throttled batch; "unspecified" is a flag that says throttled without why
# (amdsmi's bools), "clock dip" the clock alone where the driver says nothing.
DIP_REASONS = ("power", "current", "thermal", "hw_slowdown", "unspecified", "clock dip")
SENTINELS = (0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)

# nvmlClocksEventReasons bits that limit clocks; idle (0x1), application clock settings (0x2),
# sync boost (0x10) and display clock settings (0x100) are not throttling.
NVML_REASONS = {0x4: "power", 0x80: "power", 0x8: "hw_slowdown", 0x20: "thermal", 0x40: "thermal"}

# gpu_metrics indep_throttle_status (ASIC-independent, the kernel's SMU_THROTTLER_* bits):
# 0-15 power (PPT, SPL, FPPT, SPPT), 16-31 current (TDC, EDC, APCC), 32-47 temperature
# (GPU, memory, VR, hotspot, PROCHOT), 56-63 other (PPM, FIT).
AMD_BIT_GROUPS = ((0, 16, "power"), (16, 32, "current"), (32, 48, "thermal"), (56, 64, "other"))

# amdsmi_get_violation_status "active_*" flags (bool, or "N/A" where not supported)
AMD_VIOLATIONS = {"active_ppt_pwr": "power", "active_socket_thrm": "thermal", "active_vr_thrm": "thermal",
                  "active_hbm_thrm": "thermal", "active_prochot_thrm": "thermal"}


# gpu_metrics residency accumulators (metrics 1.6+) behind the violation status, with their reasons
AMD_RESIDENCIES = {"ppt_residency_acc": "power", "socket_thm_residency_acc": "thermal",
                   "vr_thm_residency_acc": "thermal", "hbm_thm_residency_acc": "thermal",
                   "prochot_residency_acc": "thermal"}


def nvml_reasons(bits) -> tuple[str, ...]:
    """Names of the clock-limiting reasons in an NVML clock event reason mask."""
    if not isinstance(bits, int) or isinstance(bits, bool) or bits in SENTINELS:
        return ()
    return tuple(sorted({name for bit, name in NVML_REASONS.items() if bits & bit}))


def _bits(v) -> int | None:
    """A status bit mask: a non-negative whole number that is not a fill value."""
    if isinstance(v, dict):
        v = v.get("value")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if not math.isfinite(v) or v < 0 or v != int(v) or int(v) > 0xFFFFFFFFFFFFFFFF or int(v) in SENTINELS:
        return None
    return int(v)


def amd_flag(value, indep: bool) -> tuple[str, ...] | None:
    """One gpu_metrics throttle field as reasons: a bit mask (amdsmi 6.0: decoded by group for
    indep_throttle_status, "unspecified" for the ASIC-specific legacy bits), a bool (6.1+:
    "unspecified" when true), None for "N/A" or a fill value (not supported)."""
    if isinstance(value, bool):
        return ("unspecified",) if value else ()
    bits = _bits(value)
    if bits is None:
        return None
    if not indep:
        return ("unspecified",) if bits else ()
    return tuple(name for lo, hi, name in AMD_BIT_GROUPS if bits & (((1 << (hi - lo)) - 1) << lo))


def amd_reasons(metrics: dict) -> tuple[str, ...] | None:
    """Throttle reasons from amdsmi_get_gpu_metrics_info: indep_throttle_status, else the legacy
    throttle_status; None when neither is supported."""
    found = amd_flag((metrics or {}).get("indep_throttle_status"), indep=True)
    return found if found is not None else amd_flag((metrics or {}).get("throttle_status"), indep=False)


def amd_metrics_source(metrics: dict) -> str | None:
    """Which gpu_metrics field speaks on this device (None: neither)."""
    if amd_flag((metrics or {}).get("indep_throttle_status"), indep=True) is not None:
        return AMD_INDEP
    if amd_flag((metrics or {}).get("throttle_status"), indep=False) is not None:
        return AMD_LEGACY
    return None


def amd_violation_reasons(status: dict) -> tuple[str, ...] | None:
    """Reasons from amdsmi_get_violation_status's active flags; None when none is supported."""
    seen, out = False, set()
    for key, name in AMD_VIOLATIONS.items():
        v = (status or {}).get(key)
        if isinstance(v, bool):
            seen = True
            if v:
                out.add(name)
    return tuple(sorted(out)) if seen else None


class AmdResidencies:
    """One device's violation reasons from successive gpu_metrics readings: a reason is active where
    its residency accumulator advanced since the previous reading (the first reading is the baseline:
    none active); a reading in which the accumulation counter did not advance repeats the last
    reasons. Called with a reading without the accumulators: None (not supported)."""

    def __init__(self) -> None:
        self._last: tuple[int, dict] | None = None
        self._reasons: tuple[str, ...] = ()

    def __call__(self, metrics: dict) -> tuple[str, ...] | None:
        counter = _bits((metrics or {}).get("accumulation_counter"))
        accs = {k: _bits((metrics or {}).get(k)) for k in AMD_RESIDENCIES}
        if counter is None or all(v is None for v in accs.values()):
            return None
        last, self._last = self._last, (counter, accs)
        if last is not None and counter > last[0]:
            self._reasons = tuple(sorted({name for k, name in AMD_RESIDENCIES.items()
                                          if accs[k] is not None and last[1][k] is not None and accs[k] > last[1][k]}))
        return self._reasons


def throttle_dip(state: list[dict] | None, reference: list[dict] | None, share: float) -> str | None:
    """Why a device throttled (None if not): the driver reports a clock-limiting reason and the SM
    clock is below `share` of its reference reading (the warmed-up clock). Both are needed: a
    sustained power cap is the steady state, and a clock without the driver's reason may be idle
    power saving. Where the device's source is the clock alone (CLOCK), the dip is enough. None
    without readings of both."""
    for k, now in enumerate(state or []):
        ref = (reference or [])[k] if k < len(reference or []) else {}
        mhz, ref_mhz = now.get("sm_mhz"), (ref or {}).get("sm_mhz")
        if not (isinstance(mhz, (int, float)) and isinstance(ref_mhz, (int, float)) and mhz < share * ref_mhz):
            continue
        why = [r for r in now.get("throttle_reasons") or () if r in DIP_REASONS]
        if not why and now.get("throttle_source") == CLOCK:
            why = ["clock dip"]
        if why:
            return (f"device {k}: {'/'.join(why)} throttling, SM clock {mhz:g} MHz < {share:g} x {ref_mhz:g} MHz"
                    f" ({now.get('throttle_source') or 'driver reasons'})")
    return None


def observable(describe: dict | None) -> tuple[bool, str]:
    """Whether a run's telemetry (its fingerprint's "telemetry", sampler.describe()) could observe
    throttling, and how (or why not)."""
    d = describe if isinstance(describe, dict) else {}
    sources = [s for s in d.get("throttle_sources") or [] if s]
    if sources:
        return True, "; ".join(dict.fromkeys(sources))
    if d.get("method") in ("nvml", "amdsmi") and "throttle_sources" not in d:
        return True, "driver reasons (recorded before sources were named)"
    return False, d.get("reason") or d.get("throttle_reason") or f"no throttle reading ({d.get('method') or 'none'})"
