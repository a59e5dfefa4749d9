"""Energy integration and validity rules on recorded traces with known answers."""

from __future__ import annotations

import pytest

from gpuparity.measure.energy import DeviceTrace, Rules, Sample, analyze, integrate, unwrap

RULES = Rules(rate_hz=20.0)


def trace(power, t_end=2.0, hz=20.0, counter=None, index=0, **kw) -> DeviceTrace:
    """Samples at `hz` over [0, t_end]; power(t) and counter(t) are functions of time."""
    n = int(round(t_end * hz))
    samples = [Sample(t=i / hz, power_w=power(i / hz) if power else None,
                      energy_j=counter(i / hz) if counter else None) for i in range(n + 1)]
    return DeviceTrace(index=index, samples=samples, **kw)


def test_constant_300w_over_2s_is_600j():
    a = analyze([trace(lambda t: 300.0)], 0.0, 2.0, RULES, expected_devices=1)
    assert a["valid"], a["reasons"]
    assert a["energy_j"] == pytest.approx(600.0)
    assert a["mean_power_w"] == pytest.approx(300.0)
    assert a["n_samples"] == 41
    assert a["sample_hz"] == pytest.approx(20.0)


def test_ramp_between_samples_is_exact():
    # P = 100 + 50 t, a window whose edges fall between samples: trapezoids are exact on a line.
    t0, t1 = 0.53, 1.77
    a = analyze([trace(lambda t: 100 + 50 * t)], t0, t1, RULES)
    expected = 100 * (t1 - t0) + 25 * (t1**2 - t0**2)
    assert a["energy_j"] == pytest.approx(expected, rel=1e-9)


def test_window_edges_are_interpolated():
    ts, ps = [0.0, 1.0, 2.0], [0.0, 100.0, 0.0]
    assert integrate(ts, ps, 0.25, 0.75) == pytest.approx(25.0)     # 25 W .. 75 W for 0.5 s
    assert integrate(ts, ps, 0.5, 1.5) == pytest.approx(75.0)       # 50 -> 100 -> 50
    assert integrate(ts, ps, 3.0, 4.0) == pytest.approx(0.0)        # held flat past the end


def test_gap_marks_trace_invalid_but_keeps_energy():
    tr = trace(lambda t: 300.0)
    tr.samples = [s for s in tr.samples if not 0.8 < s.t < 1.4]
    a = analyze([tr], 0.0, 2.0, RULES)
    assert not a["valid"]
    assert any("without a reading" in r for r in a["reasons"])
    assert a["energy_j"] == pytest.approx(600.0)  # kept, marked invalid, never silently dropped


def test_window_not_covered_at_start_is_a_gap():
    tr = trace(lambda t: 300.0)
    tr.samples = [s for s in tr.samples if s.t >= 0.5]
    a = analyze([tr], 0.0, 2.0, RULES)
    assert not a["valid"] and a["devices"][0]["max_gap_s"] == pytest.approx(0.5)


def test_too_few_samples():
    a = analyze([trace(lambda t: 300.0)], 0.0, 0.15, RULES)
    assert not a["valid"]
    assert any("need 5" in r for r in a["reasons"])


def test_expected_device_count():
    a = analyze([trace(lambda t: 300.0)], 0.0, 2.0, RULES, expected_devices=2)
    assert not a["valid"]
    assert any("expected 2" in r for r in a["reasons"])
    two = analyze([trace(lambda t: 300.0), trace(lambda t: 100.0, index=1)], 0.0, 2.0, RULES, expected_devices=2)
    assert two["valid"] and two["energy_j"] == pytest.approx(800.0)


def test_device_without_readings_is_invalid():
    tr = trace(lambda t: 300.0)
    empty = DeviceTrace(index=1, samples=[Sample(t=s.t) for s in tr.samples])
    a = analyze([tr, empty], 0.0, 2.0, RULES, expected_devices=2)
    assert not a["valid"] and a.get("energy_j") is None
    assert any("no power or energy readings" in r for r in a["reasons"])


def test_counter_agrees_with_integration():
    a = analyze([trace(lambda t: 300.0, counter=lambda t: 5000 + 300 * t)], 0.2, 1.9, RULES)
    assert a["valid"], a["reasons"]
    assert a["energy_counter_j"] == pytest.approx(300 * 1.7)
    assert a["counter_agreement"] == pytest.approx(0.0, abs=1e-9)


def test_counter_disagreement_over_5_percent():
    a = analyze([trace(lambda t: 300.0, counter=lambda t: 330 * t)], 0.0, 2.0, RULES)
    assert not a["valid"]
    assert a["counter_agreement"] == pytest.approx(300 / 330 - 1)
    assert any("differ by -9.1%" in r for r in a["reasons"])
    ok = analyze([trace(lambda t: 300.0, counter=lambda t: 309 * t)], 0.0, 2.0, RULES)
    assert ok["valid"], ok["reasons"]  # 3% is inside the tolerance


def test_stalled_counter():
    # The counter freezes from 0.5 s to 1.2 s while the device draws 300 W.
    a = analyze([trace(lambda t: 300.0, counter=lambda t: 300 * min(t, 0.5) + 300 * max(t - 1.2, 0))],
                0.0, 2.0, RULES)
    assert not a["valid"]
    assert any("stalled for 0.70 s" in r for r in a["reasons"])


def test_coarse_counter_and_idle_device_are_not_stalls():
    # A counter that moves every 0.1 s (two samples) is coarse, not stalled.
    coarse = analyze([trace(lambda t: 300.0, counter=lambda t: 30 * int(t * 10 + 1e-9))], 0.0, 2.0, RULES)
    assert not any("stalled" in r for r in coarse["reasons"])
    # A device that draws nothing may keep its counter still.
    idle = analyze([trace(lambda t: 0.0, counter=lambda t: 42.0)], 0.0, 2.0, RULES)
    assert idle["valid"], idle["reasons"]


def test_counter_going_backwards():
    a = analyze([trace(lambda t: 300.0, counter=lambda t: 300 * t - (50 if t > 1.0 else 0))], 0.0, 2.0, RULES)
    assert not a["valid"]
    assert any("went backwards 1 time" in r for r in a["reasons"])


def test_rapl_wrap_around():
    # Counter-only (RAPL): 120 W for 2 s, a 100 J range starting near the top -> wraps 3 times.
    tr = trace(None, counter=lambda t: (90 + 120 * t) % 100, wrap_j=100.0)
    a = analyze([tr], 0.0, 2.0, RULES)
    assert a["valid"], a["reasons"]
    assert a["energy_j"] == pytest.approx(240.0)
    assert a["mean_power_w"] == pytest.approx(120.0)
    assert a["devices"][0]["counter_wraps"] == 3


def test_drop_not_explained_by_wrap_is_backwards():
    cum, backwards, wraps = unwrap([10.0, 20.0, 15.0, 25.0], wrap_j=100.0)
    assert (backwards, wraps) == (1, 0) and cum == [0.0, 10.0, 10.0, 20.0]
    cum, backwards, wraps = unwrap([90.0, 99.0, 4.0], wrap_j=100.0)
    assert (backwards, wraps) == (0, 1) and cum == pytest.approx([0.0, 9.0, 14.0])


def test_throttle_is_the_drivers_reasons_not_a_clock_ratio():
    tr = trace(lambda t: 300.0, max_sm_mhz=2100.0)
    for i, s in enumerate(tr.samples):
        s.sm_mhz = 1400.0 if i % 4 == 0 else 1980.0   # power-capped clocks far under the maximum ...
        if i == 1:
            s.throttle, s.throttle_reasons = True, ("power",)
        elif i == 2:
            s.throttle, s.throttle_reasons = True, ("power", "thermal")
        else:
            s.throttle, s.throttle_reasons = False, ()   # ... are not throttling unless the driver says so
    a = analyze([tr], 0.0, 2.0, RULES)
    assert a["throttled_share"] == pytest.approx(2 / 41)
    assert a["throttle_reasons"] == {"power": pytest.approx(2 / 41), "thermal": pytest.approx(1 / 41)}
    assert a["max_clock_mhz"] == 1980.0
    assert 1400 < a["mean_clock_mhz"] < 1980
    unknown = analyze([trace(lambda t: 300.0)], 0.0, 2.0, RULES)
    assert unknown["throttled_share"] is None and "throttle_reasons" not in unknown


def test_busy_intervals_leave_the_gaps_out():
    # 250 W busy, 40 W in the gaps between two timed batches: only the busy time counts.
    tr = trace(lambda t: 40.0 if 0.84 <= t <= 1.16 else 250.0)   # readings at 0.85 .. 1.15 s
    busy = [(0.1, 0.8), (1.2, 1.9)]
    a = analyze([tr], 0.1, 1.9, RULES, expected_devices=1, intervals=busy)
    assert a["valid"], a["reasons"]
    assert a["busy_s"] == pytest.approx(1.4) and a["window_s"] == pytest.approx(1.8)
    assert a["energy_j"] == pytest.approx(250.0 * 1.4)
    assert a["mean_power_w"] == pytest.approx(250.0)
    whole = analyze([tr], 0.1, 1.9, RULES)
    assert whole["energy_j"] > a["energy_j"] and whole["mean_power_w"] < 230.0   # the gap diluted in


def test_counter_over_busy_intervals_agrees():
    tr = trace(lambda t: 300.0, counter=lambda t: 1000 + 300 * t)
    a = analyze([tr], 0.2, 1.8, RULES, intervals=[(0.2, 0.9), (1.1, 1.8)])
    assert a["valid"], a["reasons"]
    assert a["energy_counter_j"] == pytest.approx(300 * 1.4)
    assert a["counter_agreement"] == pytest.approx(0.0, abs=1e-9)
