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
  cannot know the run-to-run spread; comparisons take it from other runs, the store's history or
  RUN_SPREAD_DEFAULTS, see comparison.estimate).
- Flags: "unstable" when a trial's within-trial relative CI half-width (z * se_t) or the trials'
  spread (s) is above GPUPARITY_UNSTABLE (default 10%, as pyperf's warning); "timed_out" /
  "max_samples" when a trial stopped before reaching its noise target; "host_bound" when the host
  could not keep the device queue full (the figure may measure launches: like "unstable", its
  comparisons are at most inconclusive); "throttled" when more samples were taken under power or
  thermal throttling than the loop could drop (measure.loop); "peak_exceeded" when the figure is
  above its spec peak (that peak is wrong for it: no % of peak, no per-peak ratio).
- % of peak (derive_rates, and every view through `unit_peak` / `pct_of_peak`): the figure over
  its spec peak in the figure's unit; a tokens/s figure uses the FLOP per token its peak kind
  carries (`peak_kind_for`).
A document from elsewhere is checked against these same functions (results/recompute.py).
"""

from __future__ import annotations

import math
from statistics import NormalDist

from gpuparity.results.schema import UNITS, primary_metric
from gpuparity.results.work import bus_factor

LEVEL = 0.95
UNSTABLE_DEFAULT = 0.10
# Run-to-run spread of one trial's figure assumed for a side with one run of a key when the store
# holds no earlier runs of its product and stack on other occasions (comparison/history.py), taken
# with 2 prior degrees of freedom (comparison/priors.py: a t, not a z). Measured repeat-run data:
# GPUs of one SKU differ by 8% on average (up to 22%) running the same kernels (Sinha et al., "Not
# All GPUs Are Created Equal", SC22, arXiv:2208.11035; V100 and MI60 clusters): the kernel and model
# default. Runs back to back on one system vary far less (MLPerf Training v5.0/v5.1 llama2_70b_lora,
# 10 runs per system: 0.02-0.74% in throughput), which is why history must span occasions.
# Serving (a server, its scheduler and HTTP on top) and communication (fabric, topology) have more
# moving parts; their defaults are that figure raised, not measured. tests/test_calibration.py
# holds one-run A/A comparisons to <= 5% false faster/slower per key up to 2x (and at 15% for kernels).
RUN_SPREAD_DEFAULTS = {"kernel": 0.08, "model": 0.08, "serving": 0.10, "comm": 0.12}
RUN_SPREAD_DEFAULT = 0.08       # any other category


def unstable_threshold() -> float:
    from gpuparity.validate import env_float

    return env_float("GPUPARITY_UNSTABLE", UNSTABLE_DEFAULT, lo=0.0, hi=10.0)


def run_spread_env() -> float | None:
    """GPUPARITY_RUN_SPREAD when set (it overrides history and the defaults, as --run-spread)."""
    import os

    from gpuparity.validate import env_float

    if not os.environ.get("GPUPARITY_RUN_SPREAD", "").strip():
        return None
    return env_float("GPUPARITY_RUN_SPREAD", RUN_SPREAD_DEFAULT, lo=0.0, hi=1.0)


def run_spread_default(category: str | None = None) -> float:
    """The run-to-run spread assumed for a category without history: GPUPARITY_RUN_SPREAD, else
    RUN_SPREAD_DEFAULTS."""
    env = run_spread_env()
    if env is not None:
        return env
    return RUN_SPREAD_DEFAULTS.get(category or "", RUN_SPREAD_DEFAULT)


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
    recorded = peak_kind_for(peak, result["work"])
    if recorded:
        result.setdefault("info", {})["peak_kind"] = recorded
    derive_rates(result, spec)


# -- % of peak: the one rule every view applies (run table, show, compare, report, CSV/JSON, load) --
PEAK_EXCEEDED = "peak_exceeded"      # flag: the figure is above its peak, so that peak is wrong for it
UNVERIFIED_TOKENS = "unverified_tokens"     # flag: a serving point's token counts are the server's word alone
FIGURE_SCALE = {unit: scale for unit, scale in UNITS.values()}


def unverified(result: dict) -> bool:
    """Flagged UNVERIFIED_TOKENS: no tokenizer checked the counts its figure rests on, so every view
    labels that figure "(unverified)" and no claim rests on it."""
    return UNVERIFIED_TOKENS in (result.get("flags") or [])


def peak_kind_for(peak: str | None, work: dict) -> str | None:
    """The peak kind a result records (platform/specs.peak_for's kinds). A figure in another unit
    than its peak (tokens/s against a FLOP/s peak) carries its work per unit after a bar, so that
    every view can put the peak in the figure's unit: 'flop:bf16|123456789.0' (FLOP per token).
    None where the work lacks what the peak counts."""
    if not peak:
        return None
    pm = primary_metric(work or {})
    base = "flop" if peak.startswith("flop:") else "bytes"
    if pm is None or pm[0] == base:
        return peak
    if not work.get(base) or not work.get(pm[0]):
        return None
    return f"{peak}|{float(work[base]) / float(work[pm[0]])!r}"


def unit_peak(spec: dict | None, kind: str | None, unit: str | None) -> float | None:
    """The spec peak a result is measured against, in the unit of its figure (TFLOP/s, GB/s, or
    tokens/s from the FLOP per token its kind carries); None when unknown or the units do not meet
    (an older tokens/s result whose kind names a FLOP/s peak only)."""
    from gpuparity.platform.specs import peak_for

    if not spec or not kind or not unit:
        return None
    base, _, per_unit = kind.partition("|")
    found = peak_for(spec, base)
    if not found:
        return None
    peak, peak_unit = found
    if not per_unit:
        return float(peak) if peak_unit == unit else None
    try:
        factor = float(per_unit)
    except ValueError:
        return None
    if unit not in FIGURE_SCALE or not math.isfinite(factor) or factor <= 0:
        return None
    return float(peak) * FIGURE_SCALE[peak_unit] / factor / FIGURE_SCALE[unit]


def pct_of_peak(value, peak):
    """(% of peak, exceeded) of a figure against its peak in the same unit; scalars or numpy arrays.
    % of peak is None (NaN in arrays) where unknown, and where the figure exceeds the peak: then
    the peak, not the measurement, is wrong for this result, and `exceeded` is True."""
    import numpy as np

    v, p = np.asarray(value, dtype=float), np.asarray(peak, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = 100.0 * v / p
    known = np.isfinite(pct) & (pct > 0)
    exceeded = known & (pct > 100.0)
    pct = np.where(known & ~exceeded, pct, np.nan)
    if pct.ndim == 0:
        return (float(pct) if math.isfinite(float(pct)) else None), bool(exceeded)
    return pct, exceeded


def derive_rates(result: dict, spec: dict | None) -> None:
    """tflops / gbs / tokens_per_s and % of the spec peak, all from the metric's value: the time an
    invocation takes at that figure is work[kind] / value, and every other rate follows from it.
    A figure above its peak gets the PEAK_EXCEEDED flag and no % of peak."""
    from gpuparity.platform.specs import peak_for

    metric = result.get("metric") or {}
    pm = primary_metric(result.get("work") or {})
    if not metric.get("value") or pm is None:
        return
    kind, unit, scale = pm
    seconds = result["work"][kind] / (metric["value"] * scale)
    d = result.setdefault("derived", {})
    for name, field, div in (("flop", "tflops", 1e12), ("bytes", "gbs", 1e9), ("tokens", "tokens_per_s", 1.0)):
        if result["work"].get(name):
            d[field] = result["work"][name] / seconds / div
    d.pop("pct_peak", None)
    d.pop("peak", None)
    flags = [f for f in result.get("flags") or [] if f != PEAK_EXCEEDED]
    peak_kind = (result.get("info") or {}).get("peak_kind")
    in_unit = unit_peak(spec, peak_kind, metric.get("unit") or unit)
    if in_unit:
        base_peak, base_unit = peak_for(spec, peak_kind.partition("|")[0])
        pct, exceeded = pct_of_peak(metric["value"], in_unit)
        d["peak"] = {"value": base_peak, "unit": base_unit, "kind": peak_kind, "estimated": bool(spec.get("estimated")),
                     "in_figure_unit": in_unit}
        if exceeded:
            d["peak"]["exceeded"] = True
            flags.append(PEAK_EXCEEDED)
        elif pct is not None:
            d["pct_peak"] = pct
    result["flags"] = flags


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


TRIAL_FLAGS = ("timed_out", "max_samples", "host_bound", "throttled")   # a trial's flag is its result's


def stability_flags(result: dict, threshold: float | None = None) -> list[str]:
    """Flags of a (combined) result: unstable, timed_out, max_samples, host_bound, throttled (see
    the module notes)."""
    threshold = unstable_threshold() if threshold is None else threshold
    flags = set(result.get("flags") or [])
    trials = result.get("trials") or []
    for t in trials:
        flags.update(f for f in t.get("flags") or [] if f in TRIAL_FLAGS)
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


# -- the figures a workload states beside the rates (report columns) ------------------------------
# One formula each, called by the workload when it measures and merges trials and by
# results/recompute.py when a document comes in, so the two cannot drift apart.
WORKLOAD_FIGURES = {
    "training": ("mfu", "mfu_estimated"),
    "llm": ("decode_tokens_per_s", "ttft_s", "prefill_tokens_per_s", "tpot_s", "e2e_s", "output_tokens_per_s"),
    "collectives": ("algbw_gbs", "busbw_gbs", "bus_factor", "latency_us"),
    "scaling": ("tokens_per_s_per_rank",),
}


def bandwidths(op: str, size_bytes: float, seconds: float, n: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s for one iteration of `op` on a per-rank buffer of size_bytes."""
    algbw = size_bytes / seconds / 1e9
    return algbw, algbw * bus_factor(op, n)


def _count(v) -> int | None:
    """A whole number >= 1 (params and info of a document from elsewhere may hold anything)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else None


def workload_figures(result: dict) -> dict:
    """{field: value} of the workload's own figures (WORKLOAD_FIGURES) from a (merged) result's
    samples, params, info and derived rates; None where the result cannot give one (then it must
    not state it)."""
    import numpy as np

    w, d = result.get("workload"), result.get("derived") or {}
    p, info = result.get("params") or {}, result.get("info") or {}
    x = [float(s) for s in result.get("samples") or []]
    med = float(np.median(x)) if x else None
    out: dict = dict.fromkeys(WORKLOAD_FIGURES.get(w, ()))
    if w == "training" and d.get("pct_peak") is not None:
        # MFU is % of the dtype's dense peak; "estimated" when the spec's peak is
        out.update(mfu=d["pct_peak"] / 100.0, mfu_estimated=bool((d.get("peak") or {}).get("estimated")))
    elif w == "llm":
        out["decode_tokens_per_s"] = d.get("tokens_per_s")
        b, n_in, n_out = _count(p.get("batch")), _count(p.get("input_len")), _count(p.get("output_len"))
        if med and n_out and n_out > 1:
            out["tpot_s"] = med / (n_out - 1)
        pre = info.get("prefill_samples")
        # TTFT and end-to-end need each repetition's prefill time beside its decode time
        if b and n_in and n_out and isinstance(pre, list) and pre and len(pre) == len(x):
            ttft = float(np.median([float(s) for s in pre]))
            e2e = float(np.median([float(a) + s for a, s in zip(pre, x, strict=True)]))
            if ttft > 0 and e2e > 0:
                out.update(ttft_s=ttft, prefill_tokens_per_s=b * n_in / ttft, e2e_s=e2e,
                           output_tokens_per_s=b * n_out / e2e)
    elif w == "collectives" and med and med > 0:
        op, n, size = p.get("op"), _count(info.get("world_size")), info.get("size_bytes")
        if n and op in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast") \
                and isinstance(size, (int, float)) and not isinstance(size, bool) and size > 0:
            algbw, busbw = bandwidths(op, size, med, n)
            out.update(algbw_gbs=algbw, busbw_gbs=busbw, bus_factor=bus_factor(op, n), latency_us=med * 1e6)
    elif w == "scaling" and d.get("tokens_per_s") and _count(p.get("ranks")):
        out["tokens_per_s_per_rank"] = d["tokens_per_s"] / p["ranks"]
    return out


def state(derived: dict, field: str, value) -> None:
    """derived[field] = value, or no such field where value is None (a figure nothing gives is not stated)."""
    if value is None:
        derived.pop(field, None)
    else:
        derived[field] = value


def fill_workload_figures(result: dict) -> None:
    """Set the workload's own figures in result["derived"]; drop those it cannot give."""
    d = result.setdefault("derived", {})
    for field, value in workload_figures(result).items():
        state(d, field, value)


def weak_scaling(results: list[dict]) -> list[tuple[float, float] | None]:
    """Per scaling result: (the 1-rank tokens/s per rank of the same model in this run, weak-scaling
    efficiency = (tokens/s of k ranks / k) / that), or None without such a baseline."""
    from gpuparity.results.schema import canonical

    def model(r: dict) -> str:          # the case but its rank count (and the nodes those span)
        return canonical({k: v for k, v in (r.get("params") or {}).items() if k not in ("ranks", "nodes")})

    def per_rank(r: dict):
        v = (r.get("derived") or {}).get("tokens_per_s_per_rank") if r.get("status") == "ok" else None
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None

    base = {model(r): per_rank(r) for r in results if (r.get("params") or {}).get("ranks") == 1 and per_rank(r)}
    out: list[tuple[float, float] | None] = []
    for r in results:
        b = base.get(model(r)) if per_rank(r) else None
        out.append((b, per_rank(r) / b) if b else None)
    return out
