"""A serving point's summary from its per-request records, in the shape of `vllm bench serve`, and
the figures a serving result carries (curve key, derived rates, the token-count rules, the
interval of a point measured in rounds). One definition in the results layer: the serving
workload makes a point with it (workloads/serving/), recompute holds a stored document to it
without the workload, and the peers' result files (results/peers/) are summarised by it. The
table `show` prints, each figure's definition and the peers' names for it are
results/serving_table.py.

The records (`request_rows`, stored in result info "requests" and written by `gpuparity export
RUN --requests`) hold everything the summary is computed from, so any figure can be redone:
times in integer microseconds since the point's start (start_us, end_us, ttft_us, itl_us),
tokens (input_tokens / output_tokens: the figures used; server_*: the server's usage;
client_output_tokens: what streamed, counted by the client; reencoded_tokens: the streamed text
re-encoded with the served model's tokenizer, a bound, not a count), the stream's evidence
(pieces: chunks with text; empty_chunks: chunks without; text_bytes; delta_tokens: per-chunk
token counts where the server reported them) and `invalid` (the usage figures contradicted it).

Definitions (vLLM's, in ms unless named):
- duration_s: first send to last end over every request of the point (failed ones included).
  rate_duration_s: duration_s less the invalid requests' share of it (at each moment, the share
  of the requests in flight that were invalid), so that an invalid request's time leaves the
  rates with its tokens; equal to duration_s when no request is invalid.
- completed: requests that streamed to their end with usage figures the stream does not
  contradict; failed = errors + timeouts + invalid.
- request / input / output / total throughput: completed requests, their input tokens, their
  output tokens, input + output, each over rate_duration_s; *_per_gpu divides by `gpus` (the
  server's GPUs, when given; None: per server, the same figures).
- TTFT: send to the first piece of text (ttft_from_headers_ms: from the request's headers, after
  any TCP connect, as guidellm's clock starts; where the rows have sent_us). ITL: gaps between pieces (all requests pooled: per gap).
  TPOT: (E2EL - TTFT) / (output tokens - 1) per request with over one output token. E2EL: send to
  end of stream. Each as mean, median, std (population, as numpy / vLLM) and the chosen
  percentiles (numpy's linear interpolation), over completed requests.
- interactivity: 1000 / median TPOT ms, output tokens/s seen by one user.
- goodput: completed requests meeting every SLO given (ttft, tpot, e2el in ms; a request with
  one output token has TPOT 0 here, as vLLM), per second; fraction = good / all requests.
- usage.verified: whether the output counts were held to the bounds the served model's
  tokenizer gives (`token_problem`; without one they are the server's word: the point is flagged
  unverified_tokens and comparisons leave it out).
- log_se (the throughput's within-round standard error of its log): the delta-method standard
  error of log(sum output tokens / sum E2EL) over completed requests, i.e. the request-to-request
  variation of the rate. Rounds (trials: fresh prompts and connections, interleaved with the
  other points) measure what varies from run to run: a point's interval comes from their spread,
  never narrower than the requests' (`point_figure`). interactivity_log_se:
  measure.stats.log_median_se of TPOTs.
"""

from __future__ import annotations

import math

from gpuparity.results.serving_table import LATENCIES, pct_name, summary_table

DEFAULT_PERCENTILES = (50.0, 90.0, 99.0)
RATE_FIELDS = ("request_throughput", "input_throughput", "output_throughput", "total_throughput",
               "input_throughput_per_gpu", "output_throughput_per_gpu", "total_throughput_per_gpu")
INVALID_REQUESTS = "invalid_requests"    # flag: some requests' usage was contradicted by their stream
EVIDENCE = ("reencoded_tokens", "pieces", "empty_chunks", "text_bytes", "delta_tokens")


def request_rows(records, trial: int, counts: list[dict]) -> list[dict]:
    """Export rows of a point's records; counts[i] = record i's token figures and stream evidence
    (input_tokens, output_tokens, input_estimated, server_/client_ input/output tokens, EVIDENCE)."""
    return [{"trial": trial, "i": rec.index, "ok": rec.ok, "error": rec.error, "timeout": rec.timeout,
             "invalid": rec.invalid, "start_us": rec.start_us, "sent_us": rec.sent_us, "end_us": rec.end_us,
             "ttft_us": rec.ttft_us,
             "itl_us": list(rec.itl_us), "max_tokens": rec.max_tokens, **c}
            for rec, c in zip(records, counts, strict=True)]


# -- the token counts: what streamed, what the server says, and when that is a lie -------------------
# How far a server's prompt count may be from the client's: a chat template differs a little from
# server to server. Output counts are not held to an equality: streamed text re-encodes to fewer
# tokens where the model chose unusual pieces (degenerate, repeated text), so the re-encoding is
# only a floor, with this slack for merges and splits at the pieces' edges.
OUTPUT_TOLERANCE = (4, 0.10)       # tokens + share of the re-encoded count
PROMPT_TOLERANCE = (32, 0.10)


def beyond(server: int, client: int, tolerance: tuple[int, float]) -> bool:
    return abs(server - client) > tolerance[0] + tolerance[1] * client


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def streamed_count(pieces: int, delta_tokens: int | None) -> int:
    """The client's own count of what streamed: the server's per-chunk token counts where it
    reported them (cumulative usage on text chunks), else one token per chunk of text (vLLM,
    SGLang, llama.cpp, TGI stream a token per chunk; a server that sends several per chunk is
    counted low here, which only matters without usage)."""
    return delta_tokens if delta_tokens is not None else pieces


def counted_output(row: dict) -> int:
    """The output tokens a completed request counts: the server's usage where it sent one (held to
    `token_problem`), else the larger of what streamed and its re-encoding, within max_tokens."""
    server = _int(row.get("server_output_tokens"))
    if server is not None:
        return server
    known = [v for v in (_int(row.get("client_output_tokens")), _int(row.get("reencoded_tokens"))) if v is not None]
    best = max(known) if known else 0
    cap = _int(row.get("max_tokens"))
    return min(best, cap) if cap is not None else best


def token_problem(row: dict, tokenizer: bool) -> str | None:
    """Evidence that a finished request's output count lies, in one line (None: none). A request
    is invalid only on such evidence, never for text that re-encodes differently:
    - fewer tokens than chunks of text streamed (each carries at least one), or than the server's
      own per-chunk counts; more than max_tokens;
    - with the served model's tokenizer: more tokens than the streamed text can hold (one byte
      each at the least, plus the chunks without text, plus an end-of-sequence token), or fewer
      than its re-encoding less OUTPUT_TOLERANCE.
    Fields a row lacks (rows of earlier versions) are not checked."""
    n = _int(row.get("server_output_tokens"))
    if n is None:
        return None
    pieces, delta = _int(row.get("pieces")), _int(row.get("delta_tokens"))
    if pieces is not None and n < pieces:
        return f"usage says {n} output tokens, but {pieces} chunks of text streamed"
    if delta is not None and n < delta:
        return f"usage says {n} output tokens, but its own chunks counted {delta}"
    cap = _int(row.get("max_tokens"))
    if cap is not None and n > cap:
        return f"usage says {n} output tokens for max_tokens={cap}"
    if not tokenizer:
        return None
    size, empty = _int(row.get("text_bytes")), _int(row.get("empty_chunks")) or 0
    if size is not None and n > size + empty + 1:
        return f"usage says {n} output tokens, but the {size} bytes of text streamed can hold at most {size + empty + 1}"
    again = _int(row.get("reencoded_tokens"))
    if again is not None and n < again and beyond(n, again, OUTPUT_TOLERANCE):
        return f"usage says {n} output tokens, but the streamed text re-encodes to {again}"
    return None


# -- the summary ---------------------------------------------------------------------------------
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


def invalid_share_s(sent: list[dict]) -> float:
    """Seconds of the point's wall time that were the invalid requests': at each moment, the share
    of the requests in flight that were invalid (a request alone in flight: all its time)."""
    events = sorted((t, step, bool(r.get("invalid"))) for r in sent
                    for t, step in ((r["start_us"], 1), (r["end_us"], -1)))
    share = 0.0
    flying = bad = 0
    last = None
    for t, step, invalid in events:
        if last is not None and flying:
            share += (t - last) * bad / flying
        flying += step
        bad += step if invalid else 0
        last = t
    return share / 1e6


def summarize_point(rows: list[dict], gpus: int | None, percentiles=DEFAULT_PERCENTILES, slos: dict | None = None,
                    tokenizer: str | None = None) -> dict:
    """The point's summary dict (see the module notes) from its request rows. gpus: the server's
    GPUs where known (None: figures per server)."""
    import numpy as np

    from gpuparity.measure.stats import log_median_se

    good = [r for r in rows if r["ok"]]
    sent = [r for r in rows if r["start_us"] is not None and r["end_us"] is not None]
    duration = (max(r["end_us"] for r in sent) - min(r["start_us"] for r in sent)) / 1e6 if sent else 0.0
    n_invalid = sum(1 for r in rows if r.get("invalid"))
    rate_s = max(duration - invalid_share_s(sent), 0.0) if n_invalid else duration
    per_s = (lambda x: x / rate_s) if rate_s > 0 else (lambda x: 0.0)
    per = gpus or 1
    n_in = sum(r["input_tokens"] for r in good)
    n_out = sum(r["output_tokens"] for r in good)
    ttft = [r["ttft_us"] / 1e6 for r in good]
    e2el = [(r["end_us"] - r["start_us"]) / 1e6 for r in good]
    tpots = [t for t in (tpot_s(r) for r in good) if t is not None]
    itl = [g / 1e6 for r in good for g in r["itl_us"]]
    med_tpot = float(np.median(tpots)) if tpots else None
    s = {
        "requests": len(rows), "completed": len(good), "failed": len(rows) - len(good),
        "errors": sum(1 for r in rows if not r["ok"] and not r["timeout"] and not r.get("invalid")),
        "timeouts": sum(1 for r in rows if r["timeout"]), "invalid": n_invalid,
        "duration_s": duration, "rate_duration_s": rate_s, "gpus": gpus,
        "total_input_tokens": n_in, "total_output_tokens": n_out,
        "input_tokens_estimated": any(r["input_estimated"] for r in good),
        "request_throughput": per_s(len(good)),
        "input_throughput": per_s(n_in), "output_throughput": per_s(n_out), "total_throughput": per_s(n_in + n_out),
    }
    for name in ("input", "output", "total"):
        s[f"{name}_throughput_per_gpu"] = s[f"{name}_throughput"] / per
    s["throughput_per_gpu"] = s["output_throughput_per_gpu"]
    s["interactivity"] = 1.0 / med_tpot if med_tpot else None
    s["mean_input_tokens"] = n_in / len(good) if good else 0.0
    s["mean_output_tokens"] = n_out / len(good) if good else 0.0
    s["peak_concurrency"] = peak_concurrency(sent)
    s["percentiles"] = [float(q) for q in percentiles]
    for name, values in zip(LATENCIES, (ttft, tpots, itl, e2el), strict=True):
        s[f"{name}_ms"] = dist_ms(values, percentiles)
    # TTFT from the request's headers (after any connect), as guidellm starts its clock: where known
    sent = [(r["start_us"] + r["ttft_us"] - r["sent_us"]) / 1e6 for r in good if isinstance(r.get("sent_us"), int)]
    s["ttft_from_headers_ms"] = dist_ms(sent, percentiles) if sent and len(sent) == len(good) else None
    s["goodput"] = goodput(good, rows, slos, per_s, per) if slos else None
    s["usage"] = {
        "tokenizer": tokenizer,
        "requests_with_server_usage": sum(1 for r in good if r["server_output_tokens"] is not None),
        "server_input_tokens": _sum_known(good, "server_input_tokens"),
        "client_input_tokens": _sum_known(good, "client_input_tokens"),
        "server_output_tokens": _sum_known(good, "server_output_tokens"),
        "client_output_tokens": _sum_known(good, "client_output_tokens"),
        "reencoded_output_tokens": _sum_known(good, "reencoded_tokens"),
        "client_counts": "streamed chunks",
        # the output counts were held to the tokenizer's bounds (token_problem)
        "verified": bool(tokenizer),
    }
    s["log_se"] = _log_rate_se([r["output_tokens"] for r in good], e2el)
    s["interactivity_log_se"] = log_median_se(tpots) if len(tpots) >= 2 else None
    s["error_kinds"] = error_kinds(rows)
    return s


def _sum_known(rows: list[dict], field: str) -> int | None:
    values = [r[field] for r in rows if r.get(field) is not None]
    return sum(values) if values else None


def peak_concurrency(rows: list[dict]) -> int:
    events = sorted([(r["start_us"], 1) for r in rows] + [(r["end_us"], -1) for r in rows],
                    key=lambda e: (e[0], e[1]))
    peak = level = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def goodput(good: list[dict], rows: list[dict], slos: dict, per_s, per: int) -> dict:
    limits = {k: v / 1e3 for k, v in slos.items()}   # ms -> s

    def meets(r: dict) -> bool:
        got = {"ttft": r["ttft_us"] / 1e6, "tpot": tpot_s(r) or 0.0, "e2el": (r["end_us"] - r["start_us"]) / 1e6}
        return all(got[name] <= limit for name, limit in limits.items())

    met = [r for r in good if meets(r)]
    return {"slos": {f"{k}_ms": v for k, v in slos.items()}, "good_requests": len(met),
            "request_goodput": per_s(len(met)), "fraction": len(met) / len(rows) if rows else 0.0,
            "output_throughput_per_gpu": per_s(sum(r["output_tokens"] for r in met)) / per}


def error_kinds(rows: list[dict], top: int = 5) -> list[dict]:
    from collections import Counter

    counts = Counter(r["error"] for r in rows if r["error"])
    return [{"error": e, "count": n} for e, n in counts.most_common(top)]


def merge_summaries(trial_summaries: list[dict], pooled: dict, figure: float | None) -> dict:
    """The point's summary over rounds: latency figures and counts from the pooled requests
    (`pooled` = summarize_point of every round's rows), durations summed, each rate the geometric
    mean of the rounds' (the arithmetic mean where a round's is 0), the figure the result's."""
    ok = [t for t in trial_summaries if t["completed"]]
    out = dict(pooled, duration_s=sum(t["duration_s"] for t in trial_summaries),
               rate_duration_s=sum(t.get("rate_duration_s", t["duration_s"]) for t in trial_summaries))
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


def point_figure(values: list[float], log_ses: list[float | None]) -> dict:
    """The figure of a point measured in rounds and its interval (results.figure.combine): with two
    or more rounds from their spread, never narrower than the requests' own interval (the rounds'
    within-round standard errors combined, as for their mean: sqrt(sum se^2) / n); `ci_floor` says
    when that floor set it. One round: the requests' interval (within-trial)."""
    from statistics import NormalDist

    from gpuparity.results.figure import LEVEL, combine

    c = combine(values, log_ses)
    ses = [s for s in log_ses if isinstance(s, (int, float)) and math.isfinite(s)]
    if c["trials"] < 2 or len(ses) != c["trials"] or c["value"] is None:
        return c
    floor = math.sqrt(sum(s * s for s in ses)) / len(ses)
    z = NormalDist().inv_cdf(1 - (1 - LEVEL) / 2)
    if z * floor > math.log(c["ci_high"] / c["value"]):
        c.update(ci_low=c["value"] * math.exp(-z * floor), ci_high=c["value"] * math.exp(z * floor),
                 log_se=floor, ci_floor="requests")
    return c


def round_flags(result: dict) -> list[str]:
    """A serving point's stability flags: "unstable" judged on the rounds' spread alone (the
    request-to-request variation of one round is the point's interval floor, not instability:
    concurrent requests share batches, so their times differ by design)."""
    from gpuparity.results.figure import stability_flags

    probe = {"flags": [f for f in result.get("flags") or [] if f != "unstable"], "metric": result.get("metric"),
             "trials": [{k: v for k, v in t.items() if k != "log_se"} for t in result.get("trials") or []]}
    return stability_flags(probe)


def load_label(params: dict) -> str:
    if "concurrency" in params:
        return f"c={params['concurrency']}"
    if params.get("ramp_up"):
        return f"ramp {params['ramp_up']} {params['ramp_start_rps']:g}->{params['ramp_end_rps']:g}/s"
    rate = params.get("request_rate")
    label = "rate=inf" if rate == "inf" else f"rate={float(rate):g}/s"
    return label + (f" cap={params['max_concurrency']}" if params.get("max_concurrency") else "")


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
    """info.table: the summary `show` prints (results/serving_table.py)."""
    metric = result.get("metric") or {}
    title = f"{result['info']['curve_key']} {load_label(result['params'])}"
    result["info"]["table"] = summary_table(title, s, (metric.get("ci_low"), metric.get("ci_high")))


def fill_derived(result: dict, s: dict) -> None:
    result["derived"] = {
        "tokens_per_s": result["metric"]["value"] * (s["gpus"] or 1), "interactivity": s["interactivity"],
        **{f"{lat}_ms": s[f"{lat}_ms"]["median"] for lat in ("ttft", "tpot", "itl", "e2el")}}


def figure_unit(gpus: int | None) -> str:
    """The unit of a serving point's figure: per GPU only where the server's GPUs are known."""
    return "tokens/s/GPU" if gpus else "tokens/s"


EXPORT_FIELDS = ("run_id", "key", "curve_key", "load", "trial", "i", "ok", "error", "timeout", "invalid", "start_us",
                 "sent_us", "end_us", "ttft_us", "itl_us", "max_tokens", "input_tokens", "output_tokens", "input_estimated",
                 "server_input_tokens", "server_output_tokens", "client_input_tokens", "client_output_tokens",
                 *EVIDENCE)


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
