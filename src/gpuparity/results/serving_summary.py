"""A serving point's summary from its per-request records, in the shape of `vllm bench serve`, and
the figures a serving result carries (curve key, derived rates, the table `show` prints, the token
count tolerances). One definition in the results layer: the serving workload makes a point with
it (workloads/serving/) and recompute holds a stored document to it, without the workload.

The records (`request_rows`, stored in result info "requests" and written by `gpuparity export
RUN --requests`) hold everything the summary is computed from, so any figure can be redone:
times in integer microseconds since the point's start (start_us, end_us, ttft_us, itl_us),
tokens (input_tokens / output_tokens: the figures used; server_* from the server's usage,
client_* counted here with the served model's tokenizer, or streamed pieces without one).

Definitions (vLLM's, in ms unless named):
- duration_s: first send to last end over every request of the point (failed ones included).
- completed: requests that streamed to their end with consistent usage; failed = errors + timeouts.
- request / input / output / total throughput: completed requests, their input tokens, their
  output tokens, input + output, each over duration_s; *_per_gpu divides by `gpus`.
- TTFT: send to the first piece of text. ITL: gaps between pieces (all requests pooled).
  TPOT: (E2EL - TTFT) / (output tokens - 1) for requests with over one output token. E2EL:
  send to end of stream. Each as mean, median, std (population, as numpy / vLLM) and the chosen
  percentiles (numpy's linear interpolation), over completed requests.
- interactivity: 1000 / median TPOT ms, output tokens/s seen by one user.
- goodput: completed requests meeting every SLO given (ttft, tpot, e2el in ms; a request with
  one output token has TPOT 0 here, as vLLM), per second; fraction = good / all requests.
- usage.verified: whether the output counts were checked against the served model's tokenizer
  (without one they are the server's word: the point is flagged unverified_tokens and
  comparisons leave it out).
- log_se (the throughput's within-trial standard error of its log): the delta-method standard
  error of log(sum output tokens / sum E2EL) over completed requests, i.e. the request-to-request
  variation of the rate (closed-loop requests share batches, so it understates the run-to-run
  spread that repeated trials measure). interactivity_log_se: measure.stats.log_median_se of TPOTs.
"""

from __future__ import annotations

import math

LATENCIES = ("ttft", "tpot", "itl", "e2el")
DEFAULT_PERCENTILES = (50.0, 90.0, 99.0)
RATE_FIELDS = ("request_throughput", "input_throughput", "output_throughput", "total_throughput",
               "input_throughput_per_gpu", "output_throughput_per_gpu", "total_throughput_per_gpu")


def pct_name(q: float) -> str:
    return f"p{q:g}"


def request_rows(records, trial: int, counts: list[dict]) -> list[dict]:
    """Export rows of a point's records; counts[i] = record i's token figures (input_tokens,
    output_tokens, input_estimated, server_/client_ input/output tokens)."""
    return [{"trial": trial, "i": rec.index, "ok": rec.ok, "error": rec.error, "timeout": rec.timeout,
             "start_us": rec.start_us, "end_us": rec.end_us, "ttft_us": rec.ttft_us, "itl_us": list(rec.itl_us),
             "max_tokens": rec.max_tokens, **c} for rec, c in zip(records, counts, strict=True)]


def tpot_s(row: dict) -> float | None:
    if not row["ok"] or row["output_tokens"] <= 1:
        return None
    return (row["end_us"] - row["start_us"] - row["ttft_us"]) / 1e6 / (row["output_tokens"] - 1)


def dist_ms(values_s: list[float], percentiles) -> dict:
    import numpy as np

    if not values_s:
        return {"mean": None, "median": None, "std": None, **{pct_name(q): None for q in percentiles}}
    x = np.asarray(values_s, dtype=float) * 1e3
    out = {"mean": float(x.mean()), "median": float(np.median(x)), "std": float(x.std())}
    out.update({pct_name(q): float(np.percentile(x, q)) for q in percentiles})
    return out


def _log_rate_se(tokens: list[int], e2el: list[float]) -> float | None:
    """Delta-method SE of log(mean tokens / mean e2el) over requests."""
    import numpy as np

    if len(tokens) < 2:
        return None
    t, e = np.asarray(tokens, dtype=float), np.asarray(e2el, dtype=float)
    if t.mean() <= 0 or e.mean() <= 0:
        return None
    z = t / t.mean() - e / e.mean()
    return float(z.std(ddof=1) / math.sqrt(len(z)))


def summarize_point(rows: list[dict], gpus: int, percentiles=DEFAULT_PERCENTILES, slos: dict | None = None,
                    tokenizer: str | None = None) -> dict:
    """The point's summary dict (see the module notes) from its request rows."""
    import numpy as np

    from gpuparity.measure.stats import log_median_se

    good = [r for r in rows if r["ok"]]
    sent = [r for r in rows if r["start_us"] is not None and r["end_us"] is not None]
    duration = (max(r["end_us"] for r in sent) - min(r["start_us"] for r in sent)) / 1e6 if sent else 0.0
    per_s = (lambda x: x / duration) if duration > 0 else (lambda x: 0.0)
    n_in = sum(r["input_tokens"] for r in good)
    n_out = sum(r["output_tokens"] for r in good)
    ttft = [r["ttft_us"] / 1e6 for r in good]
    e2el = [(r["end_us"] - r["start_us"]) / 1e6 for r in good]
    tpots = [t for t in (tpot_s(r) for r in good) if t is not None]
    itl = [g / 1e6 for r in good for g in r["itl_us"]]
    med_tpot = float(np.median(tpots)) if tpots else None
    s = {
        "requests": len(rows), "completed": len(good), "failed": len(rows) - len(good),
        "errors": sum(1 for r in rows if not r["ok"] and not r["timeout"]),
        "timeouts": sum(1 for r in rows if r["timeout"]),
        "duration_s": duration, "gpus": gpus,
        "total_input_tokens": n_in, "total_output_tokens": n_out,
        "input_tokens_estimated": any(r["input_estimated"] for r in good),
        "request_throughput": per_s(len(good)),
        "input_throughput": per_s(n_in), "output_throughput": per_s(n_out), "total_throughput": per_s(n_in + n_out),
    }
    for name in ("input", "output", "total"):
        s[f"{name}_throughput_per_gpu"] = s[f"{name}_throughput"] / gpus
    s["throughput_per_gpu"] = s["output_throughput_per_gpu"]
    s["interactivity"] = 1.0 / med_tpot if med_tpot else None
    s["mean_input_tokens"] = n_in / len(good) if good else 0.0
    s["mean_output_tokens"] = n_out / len(good) if good else 0.0
    s["peak_concurrency"] = peak_concurrency(sent)
    s["percentiles"] = [float(q) for q in percentiles]
    for name, values in zip(LATENCIES, (ttft, tpots, itl, e2el), strict=True):
        s[f"{name}_ms"] = dist_ms(values, percentiles)
    s["goodput"] = goodput(good, rows, slos, per_s, gpus) if slos else None
    s["usage"] = {
        "tokenizer": tokenizer,
        "requests_with_server_usage": sum(1 for r in good if r["server_output_tokens"] is not None),
        "server_input_tokens": _sum_known(good, "server_input_tokens"),
        "client_input_tokens": _sum_known(good, "client_input_tokens"),
        "server_output_tokens": _sum_known(good, "server_output_tokens"),
        "client_output_tokens": _sum_known(good, "client_output_tokens"),
        "client_counts": "tokenizer" if tokenizer else "streamed pieces",
        # the output counts were checked against the served model's tokenizer (workloads/serving/client.verify_output)
        "verified": bool(tokenizer),
    }
    s["log_se"] = _log_rate_se([r["output_tokens"] for r in good], e2el)
    s["interactivity_log_se"] = log_median_se(tpots) if len(tpots) >= 2 else None
    s["error_kinds"] = error_kinds(rows)
    return s


def _sum_known(rows: list[dict], field: str) -> int | None:
    values = [r[field] for r in rows if r[field] is not None]
    return sum(values) if values else None


def peak_concurrency(rows: list[dict]) -> int:
    events = sorted([(r["start_us"], 1) for r in rows] + [(r["end_us"], -1) for r in rows],
                    key=lambda e: (e[0], e[1]))
    peak = level = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def goodput(good: list[dict], rows: list[dict], slos: dict, per_s, gpus: int) -> dict:
    limits = {k: v / 1e3 for k, v in slos.items()}   # ms -> s

    def meets(r: dict) -> bool:
        got = {"ttft": r["ttft_us"] / 1e6, "tpot": tpot_s(r) or 0.0, "e2el": (r["end_us"] - r["start_us"]) / 1e6}
        return all(got[name] <= limit for name, limit in limits.items())

    met = [r for r in good if meets(r)]
    return {"slos": {f"{k}_ms": v for k, v in slos.items()}, "good_requests": len(met),
            "request_goodput": per_s(len(met)), "fraction": len(met) / len(rows) if rows else 0.0,
            "output_throughput_per_gpu": per_s(sum(r["output_tokens"] for r in met)) / gpus}


def error_kinds(rows: list[dict], top: int = 5) -> list[dict]:
    from collections import Counter

    counts = Counter(r["error"] for r in rows if r["error"])
    return [{"error": e, "count": n} for e, n in counts.most_common(top)]


def merge_summaries(trial_summaries: list[dict], pooled: dict, figure: float | None) -> dict:
    """The point's summary over trials: latency figures and counts from the pooled requests
    (`pooled` = summarize_point of every trial's rows), duration summed, each rate the geometric
    mean of the trials' (the arithmetic mean where a trial's is 0), the figure the result's."""
    ok = [t for t in trial_summaries if t["completed"]]
    out = dict(pooled, duration_s=sum(t["duration_s"] for t in trial_summaries))
    for name in RATE_FIELDS:
        vals = [t[name] for t in ok]
        out[name] = _gmean(vals)
    if figure is not None:
        out["throughput_per_gpu"] = out["output_throughput_per_gpu"] = figure
    if out.get("goodput") and all(t.get("goodput") for t in ok):
        g = dict(out["goodput"])
        for name in ("request_goodput", "output_throughput_per_gpu"):
            g[name] = _gmean([t["goodput"][name] for t in ok])
        out["goodput"] = g
    out["peak_concurrency"] = max(t["peak_concurrency"] for t in trial_summaries)
    out["deadline_hit"] = any(t.get("deadline_hit") for t in trial_summaries)
    warm = [t["warmup"] for t in trial_summaries if t.get("warmup")]
    out["warmup"] = {k: sum(w[k] for w in warm) for k in ("requests", "completed")} if warm else None
    out["trials"] = [{k: v for k, v in t.items() if k != "trials"} for t in trial_summaries]
    return out


def _gmean(values: list[float]) -> float:
    if not values:
        return 0.0
    if all(v > 0 for v in values):
        return math.exp(sum(math.log(v) for v in values) / len(values))
    return sum(values) / len(values)


def load_label(params: dict) -> str:
    if "concurrency" in params:
        return f"c={params['concurrency']}"
    if params.get("ramp_up"):
        return f"ramp {params['ramp_up']} {params['ramp_start_rps']:g}->{params['ramp_end_rps']:g}/s"
    rate = params.get("request_rate")
    label = "rate=inf" if rate == "inf" else f"rate={float(rate):g}/s"
    return label + (f" cap={params['max_concurrency']}" if params.get("max_concurrency") else "")


def summary_table(title: str, s: dict, ci: tuple | None = None) -> dict:
    """The summary as a two-column table in `vllm bench serve` order (what `show` prints)."""
    def num(v, digits=2):
        return "" if v is None else f"{v:,.{digits}f}"

    rows = [["Successful requests", str(s["completed"])],
            ["Failed requests", f"{s['failed']} ({s['errors']} errors, {s['timeouts']} timeouts)"]]
    if len(s.get("trials") or []) > 1:
        rows.append(["Trials", str(len(s["trials"]))])
    rows += [["Benchmark duration (s)", num(s["duration_s"])],
             ["Total input tokens", str(s["total_input_tokens"]) + (" (estimated)" if s["input_tokens_estimated"] else "")],
             ["Total generated tokens", str(s["total_output_tokens"])],
             ["Request throughput (req/s)", num(s["request_throughput"])],
             ["Output token throughput (tok/s)", num(s["output_throughput"])],
             ["Output token throughput per GPU (tok/s)", num(s["output_throughput_per_gpu"])]]
    if ci and ci[0] is not None:
        rows.append(["  95% CI", f"{num(ci[0])} .. {num(ci[1])}"])
    rows += [["Total token throughput (tok/s)", num(s["total_throughput"])],
             ["Total token throughput per GPU (tok/s)", num(s["total_throughput_per_gpu"])],
             ["Interactivity (tok/s/user)", num(s["interactivity"])],
             ["Peak concurrent requests", str(s["peak_concurrency"])]]
    g = s.get("goodput")
    if g:
        slos = ", ".join(f"{k[:-3].upper()} <= {v:g} ms" for k, v in g["slos"].items())
        rows.append([f"Request goodput (req/s) [{slos}]", f"{num(g['request_goodput'])} ({100 * g['fraction']:.0f}%)"])
    names = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2el": "E2EL"}
    for lat in LATENCIES:
        d = s[f"{lat}_ms"]
        rows += [[f"{label} {names[lat]} (ms)", num(d[key])]
                 for label, key in [("Mean", "mean"), ("Median", "median"), ("Std", "std")]
                 + [(f"P{q:g}", pct_name(q)) for q in s["percentiles"]]]
    u = s["usage"]
    rows.append(["Input tokens: server usage / client count",
                 f"{_opt(u['server_input_tokens'])} / {_opt(u['client_input_tokens'])}"])
    rows.append(["Output tokens: server usage / client count",
                 f"{_opt(u['server_output_tokens'])} / {_opt(u['client_output_tokens'])} ({u['client_counts']})"
                 + ("" if u.get("verified", True) else "; unverified: no tokenizer, no throughput claim")])
    for e in s["error_kinds"][:3]:
        rows.append([f"Error x{e['count']}", e["error"][:120]])
    return {"title": title, "columns": ["metric", "value"], "rows": rows}


def _opt(v) -> str:
    return "-" if v is None else str(v)


def curve_key(params: dict) -> str:
    """What a curve's points share: everything that defines the workload except the load."""
    p = params
    parts = [p["dataset"]]
    if "dataset_sha" in p:
        parts.append(f"{p['dataset_file']}@{p['dataset_sha']}")
    if "input_len" in p:
        parts.append(f"in={p['input_len']}")
    parts.append(f"out={p.get('output_len', 'dataset')}")
    if p.get("range_ratio"):
        parts.append(f"range={p['range_ratio']:g}")
    if "prefix_len" in p:
        parts.append(f"prefix={p['prefix_len']}x{p['num_prefixes']}")
    parts.append(p["endpoint"])
    if p["ignore_eos"]:
        parts.append("ignore_eos")
    if "concurrency" not in p:
        parts.append("ramp" if p.get("ramp_up") else "rate")
        if p.get("max_concurrency"):
            parts.append(f"cap={p['max_concurrency']}")
        if p.get("burstiness"):
            parts.append(f"burst={p['burstiness']:g}")
    if p.get("seed"):
        parts.append(f"seed={p['seed']}")
    return " ".join(parts)


def table_of(result: dict, s: dict) -> None:
    metric = result.get("metric") or {}
    title = f"{result['info']['curve_key']} {load_label(result['params'])}"
    result["info"]["table"] = summary_table(title, s, (metric.get("ci_low"), metric.get("ci_high")))


def fill_derived(result: dict, s: dict) -> None:
    result["derived"] = {
        "tokens_per_s": result["metric"]["value"] * s["gpus"], "interactivity": s["interactivity"],
        **{f"{lat}_ms": s[f"{lat}_ms"]["median"] for lat in ("ttft", "tpot", "itl", "e2el")}}


# How far a server's usage may be from the client's own count before the request is invalid:
# re-tokenizing streamed text can merge or split a few tokens, a chat template differs a little
# from server to server, an EOS token may be counted or not.
OUTPUT_TOLERANCE = (4, 0.10)       # tokens + share of the client's count
PROMPT_TOLERANCE = (32, 0.10)


def beyond(server: int, client: int, tolerance: tuple[int, float]) -> bool:
    return abs(server - client) > tolerance[0] + tolerance[1] * client


EXPORT_FIELDS = ("run_id", "key", "curve_key", "load", "trial", "i", "ok", "error", "timeout", "start_us", "end_us",
                 "ttft_us", "itl_us", "max_tokens", "input_tokens", "output_tokens", "input_estimated",
                 "server_input_tokens", "server_output_tokens", "client_input_tokens", "client_output_tokens")


def exported_requests(doc: dict) -> list[dict]:
    """Every serving request row of a run document, each with its run, result key, curve and load."""
    out = []
    for r in doc.get("results") or []:
        info = r.get("info") or {}
        if r.get("category") != "serving" or not isinstance(info.get("requests"), list):
            continue
        ident = {"run_id": doc.get("run_id"), "key": r.get("key"), "curve_key": info.get("curve_key"),
                 "load": load_label(r.get("params") or {})}
        out += [{**ident, **{k: row.get(k) for k in EXPORT_FIELDS if k not in ident}}
                for row in info["requests"] if isinstance(row, dict)]
    return out
