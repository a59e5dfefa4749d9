"""A result's figure: the one place that turns measurements into the number every view shows
(run table, `show`, `compare`, the report, CSV/JSON and `gpuparity.load()`).

The estimator, written down (the README's "Statistics" repeats it):
- A case is measured in N independent trials (fresh inputs; by default a fresh process per trial
  when N > 1). Trial t gives seconds per invocation x_t1..x_tn in measurement order.
- Trial figure: v_t = work / median(x_t) / unit scale (TFLOP/s, GB/s, tokens/s). Workloads that
  measure a rate another way (a serving sweep point: output tokens over the point's wall time)
  set v_t themselves through `set_metric`.
- Its within-trial standard error on the log scale, se_t: the bootstrap standard deviation of the
  log median (exact order-statistic weights, measure.stats.median_weights), inflated by
  (1 + r) / (1 - r) for the lag-1 autocorrelation r of the samples (drift; bias-corrected, clipped
  to [0, 0.95]).
- Result figure: the geometric mean of the trial figures, exp(mean log v_t); one trial: v_1.
- Its 95% interval: n >= 2 trials: mean log v +- t(0.975, n - 1) * s / sqrt(n), s the standard
  deviation of log v_t (trials are independent draws of the machine's state, so within-trial
  noise and drift are inside s); one trial: log v_1 +- z * se_1, labelled "within-trial" (it
  cannot know the run-to-run spread; comparisons add an assumed floor, see analysis.estimate).
- Flags: "unstable" when a trial's within-trial relative CI half-width (z * se_t) or the trials'
  spread (s) is above GPUPARITY_UNSTABLE (default 10%, as pyperf's warning); "timed_out" /
  "max_samples" when a trial stopped before reaching its noise target; "above_peak" when the
  figure is over 100% of the spec's peak.
A document from elsewhere is checked against these same functions (results/recompute.py).
"""

from __future__ import annotations

import math
from statistics import NormalDist

from gpuparity.results.schema import UNITS, primary_metric

LEVEL = 0.95
UNSTABLE_DEFAULT = 0.10
RUN_SPREAD_DEFAULT = 0.03       # run-to-run spread assumed for a side with a single trial


def unstable_threshold() -> float:
    from gpuparity.validate import env_float

    return env_float("GPUPARITY_UNSTABLE", UNSTABLE_DEFAULT, lo=0.0, hi=10.0)


def run_spread_default() -> float:
    from gpuparity.validate import env_float

    return env_float("GPUPARITY_RUN_SPREAD", RUN_SPREAD_DEFAULT, lo=0.0, hi=1.0)


def timing_value(samples_s: list[float], amount: float, scale: float) -> tuple[float, float]:
    """(trial figure, its log standard error) from seconds per invocation."""
    import numpy as np

    from gpuparity.measure.stats import log_median_se

    x = [s for s in samples_s if s and s > 0 and math.isfinite(s)]
    if not x or not amount:
        return float("nan"), float("nan")
    return amount / float(np.median(x)) / scale, log_median_se(x)


def rate_value(rates: list[float]) -> tuple[float, float]:
    """(trial figure, its log standard error) from throughput per sample, for documents that
    record rates directly (metric.samples: other tools, older versions): their median."""
    import numpy as np

    from gpuparity.measure.stats import log_median_se

    x = [r for r in rates if r and r > 0 and math.isfinite(r)]
    if not x:
        return float("nan"), float("nan")
    return float(np.median(x)), log_median_se(x)


def set_metric(result: dict, kind: str, value: float, log_se: float | None) -> None:
    """The trial's figure (work kind 'flop' | 'bytes' | 'tokens' | 'items') and its log standard
    error; the CI is the within-trial interval until trials are combined."""
    unit, _ = UNITS[kind]
    se = log_se if log_se is not None and math.isfinite(log_se) else None
    half = NormalDist().inv_cdf(1 - (1 - LEVEL) / 2) * se if se is not None else None
    result["metric"] = {
        "name": kind, "unit": unit, "value": value, "higher_is_better": True, "log_se": se,
        "ci_low": value * math.exp(-half) if half is not None else None,
        "ci_high": value * math.exp(half) if half is not None else None,
        "ci_basis": "within-trial", "trials": 1,
    }


def derive(result: dict, peak: str | None, spec: dict | None) -> None:
    """A timing result's metric from its samples, then every derived rate from that figure."""
    s = result.get("summary") or {}
    pm = primary_metric(result.get("work") or {})
    if not s.get("n") or pm is None:
        return
    kind, _, scale = pm
    value, se = timing_value(result.get("samples") or [], result["work"][kind], scale)
    if not math.isfinite(value):
        return
    set_metric(result, kind, value, se)
    if peak:
        result.setdefault("info", {})["peak_kind"] = peak
    derive_rates(result, spec)


def derive_rates(result: dict, spec: dict | None) -> None:
    """tflops / gbs / tokens_per_s and % of the spec peak, all from the metric's value: the time an
    invocation takes at that figure is work[kind] / value, and every other rate follows from it."""
    from gpuparity.platform.specs import peak_for

    metric = result.get("metric") or {}
    pm = primary_metric(result.get("work") or {})
    if not metric.get("value") or pm is None:
        return
    kind, _, scale = pm
    seconds = result["work"][kind] / (metric["value"] * scale)
    d = result.setdefault("derived", {})
    for name, field, div in (("flop", "tflops", 1e12), ("bytes", "gbs", 1e9), ("tokens", "tokens_per_s", 1.0)):
        if result["work"].get(name):
            d[field] = result["work"][name] / seconds / div
    d.pop("pct_peak", None)
    d.pop("peak", None)
    flags = result.setdefault("flags", [])
    if "above_peak" in flags:
        flags.remove("above_peak")
    peak_kind = (result.get("info") or {}).get("peak_kind")
    found = peak_for(spec, peak_kind) if peak_kind and spec else None
    if found:
        p, unit = found
        field = "tflops" if unit == "TFLOP/s" else "gbs"
        if d.get(field):
            d["pct_peak"] = 100.0 * d[field] / p
            d["peak"] = {"value": p, "unit": unit, "kind": peak_kind, "estimated": bool(spec.get("estimated"))}
            if d["pct_peak"] > 100.0:        # past the datasheet: a wrong spec row, or a wrong answer
                flags.append("above_peak")


def combine(values: list[float], log_ses: list[float | None], level: float = LEVEL) -> dict:
    """The result figure and its interval from trial figures (see the module notes)."""
    import numpy as np

    from gpuparity.measure.stats import t_quantile

    v = np.asarray([x for x in values if x and x > 0 and math.isfinite(x)], dtype=float)
    if v.size == 0:
        return {"value": None, "ci_low": None, "ci_high": None, "spread": None, "trials": 0, "ci_basis": None}
    if v.size == 1:
        se = log_ses[0] if log_ses and log_ses[0] is not None and math.isfinite(log_ses[0]) else None
        half = NormalDist().inv_cdf(1 - (1 - level) / 2) * se if se is not None else None
        value = float(v[0])
        return {"value": value, "ci_low": value * math.exp(-half) if half is not None else None,
                "ci_high": value * math.exp(half) if half is not None else None, "spread": None,
                "trials": 1, "ci_basis": "within-trial", "log_se": se}
    logs = np.log(v)
    mean, s = float(logs.mean()), float(logs.std(ddof=1))
    half = t_quantile(1 - (1 - level) / 2, v.size - 1) * s / math.sqrt(v.size)
    return {"value": math.exp(mean), "ci_low": math.exp(mean - half), "ci_high": math.exp(mean + half),
            "spread": s, "trials": int(v.size), "ci_basis": "trials", "log_se": s / math.sqrt(v.size)}


def stability_flags(result: dict, threshold: float | None = None) -> list[str]:
    """Flags of a (combined) result: unstable, timed_out, max_samples (see the module notes)."""
    threshold = unstable_threshold() if threshold is None else threshold
    flags = set(result.get("flags") or [])
    trials = result.get("trials") or []
    for t in trials:
        flags.update(f for f in t.get("flags") or [] if f in ("timed_out", "max_samples"))
    z = NormalDist().inv_cdf(1 - (1 - LEVEL) / 2)
    noise = [z * t["log_se"] for t in trials if isinstance(t.get("log_se"), (int, float))]
    spread = (result.get("metric") or {}).get("spread")
    if any(n > threshold for n in noise) or (isinstance(spread, (int, float)) and spread > threshold):
        flags.add("unstable")
    return sorted(flags)


def result_units(result: dict) -> tuple[list[float], list[float]]:
    """(trial figures, their log standard errors) of an ok result: what comparisons use. A result
    of an earlier schema (no trials) is one trial: its figure, and the standard error of its
    samples' log median."""
    if result.get("status") != "ok":
        return [], []
    metric = result.get("metric") or {}
    trials = [t for t in result.get("trials") or [] if t.get("status", "ok") == "ok"]
    nan = float("nan")

    def se_of(x) -> float:
        return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else nan

    if trials:
        pairs = [(float(t["value"]), se_of(t.get("log_se"))) for t in trials
                 if isinstance(t.get("value"), (int, float)) and math.isfinite(t["value"]) and t["value"] > 0]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    value = metric.get("value")
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return [], []
    from gpuparity.measure.stats import log_median_se
    from gpuparity.results.schema import metric_samples

    se = metric.get("log_se")
    return [float(value)], [se_of(se) if se is not None else log_median_se(metric_samples(result))]
