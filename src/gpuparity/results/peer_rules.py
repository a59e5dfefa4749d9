"""A serving point's figures as each peer defines and computes them, from gpuparity's request rows
(results/serving_summary.py's shape), so that `show --names PEER` puts the peer's own number
under the peer's name, beside gpuparity's (whose definitions stay under its own names). Each
rule below is read from the peer's source at the version named, and held to the peer's own files
by tests (tests/data/peers: the figures equal the file's to its rounding).

- guidellm 0.8.1 (schemas/base/statistics.py, request_stats.py, benchmark/schemas/metrics.py):
  a distribution is values with weights; duplicates merged, probabilities = weight / total;
  mean = sum(value x probability), std_dev the population one, median = p50, and a percentile
  q is the smallest value whose cumulative probability reaches q (nearest rank on the
  cumulative sum: numpy searchsorted, side left). Per successful request: TTFT = first token -
  request start (guidellm's request start is after the connection: gpuparity's sent_us where the
  rows have it); ITL = (last token - first token) / (output tokens - 1), weighted by output
  tokens - 1 (requests of one token weigh 0); TPOT = (last token - start) / output tokens,
  weighted by output tokens; request latency (s) = end - start. Rates: successful requests'
  tokens over the benchmark, first start to last end (its rate distribution's mean is exactly that).
- aiperf 0.13.0 (metrics/metric_dicts.py, metrics/types/*): avg = sum / n, std the population
  one, percentiles 1 5 10 25 50 75 90 95 99 by linear interpolation (numpy's default). Per
  request: TTFT = first content response - request start; request latency = the last content
  response - start (the end of the request's content, not of the stream); ITL =
  (request latency - TTFT) / (output length - 1) for output length >= 2; inter-chunk latency:
  the gaps between content responses, pooled; output token throughput per user = mean of 1 / ITL.
  Rates over the profiling window (the aggregate's end_time - start_time where the file gives
  it, else first start to last response).
- vLLM (`vllm bench serve`): gpuparity's own definitions are vLLM's (numpy's linear
  percentiles, population std, TPOT = (E2EL - TTFT) / (output tokens - 1), pooled ITL, E2EL to
  the end of the stream); its rates are over its benchmark duration, which also holds its set-up
  before the first send, so an imported file's own rates are taken where it states them.
"""

from __future__ import annotations

import numpy as np

LATENCIES = ("ttft", "tpot", "itl", "e2el")
GUIDELLM_QUANTILES = {"p0.1": 0.001, "p1": 0.01, "p5": 0.05, "p10": 0.1, "p25": 0.25, "p50": 0.5, "p75": 0.75,
                      "p90": 0.9, "p95": 0.95, "p99": 0.99, "p99.9": 0.999}
AIPERF_PERCENTILES = (1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0)
# the statistics each peer prints or writes beyond the point's own percentiles (guidellm's p95)
EXTRA_STATS = {"guidellm": ("p95",), "aiperf": ("p95",), "vllm": ()}


def nearest_rank(values, weights=None) -> dict | None:
    """guidellm's distribution summary of (weighted) values: mean, median, std and its percentiles."""
    v = np.asarray(values, dtype=float)
    if not len(v):
        return None
    w = np.ones_like(v) if weights is None else np.asarray(weights, dtype=float)
    order = np.argsort(v)
    v, w = v[order], w[order]
    unique, inverse = np.unique(v, return_inverse=True)
    merged = np.zeros_like(unique)
    np.add.at(merged, inverse, w)
    keep = merged > 0
    unique, merged = unique[keep], merged[keep]
    if not len(unique):
        return None
    prob = merged / merged.sum()
    cdf = np.cumsum(prob)
    mean = float(np.sum(unique * prob))
    out = {"mean": mean, "std": float(np.sqrt(np.sum((unique - mean) ** 2 * prob)))}
    out.update({name: float(unique[min(np.searchsorted(cdf, q, side="left"), len(unique) - 1)])
                for name, q in GUIDELLM_QUANTILES.items()})
    out["median"] = out["p50"]
    return out


def linear(values) -> dict | None:
    """aiperf's (and vLLM's) summary: avg, population std, linearly interpolated percentiles."""
    v = np.asarray(values, dtype=float)
    if not len(v):
        return None
    out = {"mean": float(v.sum() / len(v)), "std": float(v.std())}
    out.update({f"p{q:g}": float(np.percentile(v, q)) for q in AIPERF_PERCENTILES})
    out["median"] = out["p50"]
    return out


def _times(row: dict, from_headers: bool) -> tuple[float, float, float, float]:
    """(start, first token, last token, end) of a completed request row, in seconds from its point's
    start; the last token from the row's own record of it, else the first plus its gaps."""
    start = row["start_us"]
    first = start + row["ttft_us"]
    last = row.get("last_token_us")
    if not isinstance(last, int):
        last = first + sum(row.get("itl_us") or [])
    if from_headers and isinstance(row.get("sent_us"), int):
        start = row["sent_us"]
    return start / 1e6, first / 1e6, last / 1e6, row["end_us"] / 1e6


def _rates(done: int, tokens_in: int, tokens_out: int, window: float) -> dict:
    if window <= 0:
        return {}
    return {"duration": window, "request_rate": done / window, "output_rate": tokens_out / window,
            "total_rate": (tokens_in + tokens_out) / window}


def guidellm(rows: list[dict]) -> dict:
    good = [r for r in rows if r.get("ok")]
    sent = [r for r in rows if isinstance(r.get("start_us"), int) and isinstance(r.get("end_us"), int)]
    t = [_times(r, True) for r in good]
    out = [r["output_tokens"] for r in good]
    figures = {
        "completed": len(good), "failed": len(rows) - len(good),
        "input_total": sum(r["input_tokens"] for r in good), "output_total": sum(out),
        "ttft": nearest_rank([1e3 * (f - s) for s, f, _, _ in t]),
        "tpot": nearest_rank([1e3 * (last - f) / (n - 1) if n > 1 else 0.0 for (_, f, last, _), n in zip(t, out, strict=True)],
                             [max(n - 1, 0) for n in out]),
        "e2el": nearest_rank([e - s for s, _, _, e in t]),
        "peer_tpot": nearest_rank([1e3 * (last - s) / n if n else 0.0 for (s, _, last, _), n in zip(t, out, strict=True)],
                                  out),
    }
    if sent:
        window = (max(r["end_us"] for r in sent) - min(r["start_us"] for r in sent)) / 1e6
        figures.update(_rates(len(good), figures["input_total"], figures["output_total"], window))
    return figures


def aiperf(rows: list[dict], window_s: float | None = None) -> dict:
    good = [r for r in rows if r.get("ok")]
    t = [_times(r, False) for r in good]
    out = [r["output_tokens"] for r in good]
    itl = [1e3 * (last - f) / (n - 1) for (_, f, last, _), n in zip(t, out, strict=True) if n >= 2]
    figures = {
        "completed": len(good), "failed": len(rows) - len(good),
        "input_total": sum(r["input_tokens"] for r in good), "output_total": sum(out),
        "ttft": linear([1e3 * (f - s) for s, f, _, _ in t]), "tpot": linear(itl),
        "itl": linear([g / 1e3 for r in good for g in r.get("itl_us") or []]),
        "e2el": linear([1e3 * (last - s) for s, _, last, _ in t]),
        "interactivity": float(np.mean([1e3 / x for x in itl if x > 0])) if any(x > 0 for x in itl) else None,
    }
    if window_s is None and t:
        window_s = max(last for _, _, last, _ in t) - min(s for s, _, _, _ in t)
    if window_s:
        figures.update(_rates(len(good), figures["input_total"], figures["output_total"], window_s))
    return figures


def vllm(summary: dict, stated: dict | None = None) -> dict:
    """vLLM's figures are gpuparity's (the summary), its own rates where the file states them."""
    figures = {"completed": summary.get("completed"), "failed": summary.get("failed"),
               "input_total": summary.get("total_input_tokens"), "output_total": summary.get("total_output_tokens"),
               "duration": summary.get("duration_s"), "request_rate": summary.get("request_throughput"),
               "output_rate": summary.get("output_throughput"), "total_rate": summary.get("total_throughput")}
    for name in LATENCIES:
        figures[name] = dict(summary.get(f"{name}_ms") or {}) or None
    stated = stated or {}
    for mine, theirs in (("duration", "duration"), ("request_rate", "request_throughput"),
                         ("output_rate", "output_throughput"), ("total_rate", "total_token_throughput")):
        if isinstance(stated.get(theirs), (int, float)):
            figures[mine] = stated[theirs]
    return figures


def peer_figures(peer: str, rows: list[dict] | None, summary: dict, stated: dict | None = None) -> dict:
    """The point's figures by `peer`'s rules (the module notes): {figure: value or {stat: value}};
    latencies in ms but guidellm's request latency (s). Without request rows only vLLM's (the
    summary's) can be given."""
    stated = stated or {}
    if peer == "vllm":
        return vllm(summary, stated)
    if not rows:
        return {}
    if peer == "guidellm":
        return guidellm(rows)
    window = stated.get("window_s")
    return aiperf(rows, window if isinstance(window, (int, float)) and window > 0 else None)
