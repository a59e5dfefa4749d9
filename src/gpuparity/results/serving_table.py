"""The table a serving point shows (`show`, `run`, info.table), in `vllm bench serve` order: every
row names its unit, each latency its definition, and, asked for (`show --names guidellm`), the
name the same figure has in vLLM's, guidellm's or aiperf's output and the figure as that peer
computes it (results/peer_rules.py: its percentile rule and its definitions), so their tables
line up number for number; gpuparity's own figure stays in the value column under its own name.

The definitions (results/serving_summary.py computes them):
- TTFT: per request, from the send (the clock starts before the TCP connect, as vLLM's and
  aiperf's; guidellm starts at the request's headers) to the first streamed text.
- TPOT: vLLM's, per request, first token excluded: (E2EL - TTFT) / (output tokens - 1). guidellm
  calls this ITL (its own TPOT is E2EL / output tokens, TTFT included) and aiperf ITL.
- ITL: per gap, the gaps between chunks of streamed text pooled over requests (vLLM's ITL,
  aiperf's inter-chunk latency; guidellm has no per-gap figure).
- E2EL: per request, send to the end of the stream (guidellm, aiperf: request latency).
- Throughput: completed requests' tokens over the point's duration (first send to last end, less
  the invalid requests' share); per GPU only where the server's GPUs were given (gpus=), else
  per server.
Peers' statistics differ in places: guidellm weighs its ITL and TPOT distributions by tokens
and takes percentiles as samples (not interpolated); the names say where a figure has no peer.
"""

from __future__ import annotations

LATENCIES = ("ttft", "tpot", "itl", "e2el")
PEERS = ("vllm", "guidellm", "aiperf")
DEFAULTS_NOTE = ("Defaults that differ from the peers': the clock starts at the send, before any TCP connect "
                 "(vLLM, aiperf; guidellm at the request's headers); 2 warm-up requests, not counted (guidellm, "
                 "vLLM: none; --set warmup=0); ignore_eos off (vLLM's random dataset and guidellm with fixed "
                 "output tokens: on; --set ignore_eos=true); throughput per server unless --set gpus=N.")
# {figure: (label, unit, definition)}; the latencies' rows carry their definition as a header row.
LATENCY_TEXT = {
    "ttft": ("TTFT", "send to first text, per request"),
    "tpot": ("TPOT", "(E2EL - TTFT) / (tokens - 1), per request (vLLM's)"),
    "itl": ("ITL", "gaps between text chunks, per gap"),
    "e2el": ("E2EL", "send to end of stream, per request"),
}
# {figure: {peer: its name for the figure there, or "-" where it has none}}
NAMES = {
    "completed": {"vllm": "Successful requests", "guidellm": "request_totals.successful",
                  "aiperf": "request_count"},
    "failed": {"vllm": "Failed requests", "guidellm": "request_totals.errored + incomplete",
               "aiperf": "error_request_count"},
    "duration": {"vllm": "Benchmark duration (s)", "guidellm": "duration (s)", "aiperf": "benchmark_duration (s)"},
    "input_total": {"vllm": "Total input tokens", "guidellm": "prompt_token_count.successful.total_sum",
                    "aiperf": "total_isl"},
    "output_total": {"vllm": "Total generated tokens", "guidellm": "output_token_count.successful.total_sum",
                     "aiperf": "total_osl"},
    "request_rate": {"vllm": "Request throughput (req/s)", "guidellm": "requests_per_second (mean)",
                     "aiperf": "request_throughput"},
    "output_rate": {"vllm": "Output token throughput (tok/s)", "guidellm": "output_tokens_per_second (mean)",
                    "aiperf": "output_token_throughput"},
    "total_rate": {"vllm": "Total token throughput (tok/s)", "guidellm": "tokens_per_second (mean)",
                   "aiperf": "total_token_throughput"},
    "interactivity": {"vllm": "-", "guidellm": "-",
                      "aiperf": "output_token_throughput_per_user (its mean of 1/ITL, not 1/median)"},
    "peak": {"vllm": "Peak concurrent requests", "guidellm": "request_concurrency (max)", "aiperf": "-"},
    "ttft": {"vllm": "ttft", "guidellm": "time_to_first_token_ms", "aiperf": "time_to_first_token"},
    "tpot": {"vllm": "tpot", "guidellm": "inter_token_latency_ms", "aiperf": "inter_token_latency"},
    "itl": {"vllm": "itl", "guidellm": "-", "aiperf": "inter_chunk_latency"},
    "ttft_headers": {"vllm": "-", "guidellm": "time_to_first_token_ms (mean / median)", "aiperf": "-"},
    "e2el": {"vllm": "e2el", "guidellm": "request_latency", "aiperf": "request_latency"},
}
STATS = {"guidellm": {"std": "std_dev"}, "aiperf": {"mean": "avg"}}      # their names for mean, std


def pct_name(q: float) -> str:
    return f"p{q:g}"


# What differs in a peer's figure of the same name (shown on the figure's header row).
NOTES = {("ttft", "guidellm"): "its clock starts at the request's headers, after any connect",
         ("tpot", "guidellm"): "to the last token, weighted by tokens; its TPOT is E2EL / tokens",
         ("tpot", "aiperf"): "to the last response", ("e2el", "guidellm"): "in seconds"}


def per_label(gpus) -> str:
    """'per GPU' where the server's GPUs are known, else 'per server'."""
    return "per GPU" if gpus else "per server"


def _num(v, digits=2) -> str:
    return "" if v is None else f"{v:,.{digits}f}"


def _opt(v) -> str:
    return "-" if v is None else str(v)


def _rows(s: dict, ci: tuple | None) -> list[tuple[str | None, str, str]]:
    """(figure the row shows or None, label, value) in `vllm bench serve` order."""
    gpus, invalid = s.get("gpus"), s.get("invalid") or 0
    ci_text = f"{_num(ci[0])} .. {_num(ci[1])}" if ci and ci[0] is not None else None
    rows = [("completed", "Successful requests", str(s["completed"])),
            ("failed", "Failed requests", f"{s['failed']} ({s['errors']} errors, {s['timeouts']} timeouts, "
                                          f"{invalid} invalid)")]
    if invalid:
        rows.append((None, "Invalid requests (usage contradicted by the stream)",
                     f"{invalid}: their time and tokens are left out of the rates"))
    if len(s.get("trials") or []) > 1:
        rows.append((None, "Rounds (fresh connections, interleaved)", str(len(s["trials"]))))
    rows.append(("duration", "Benchmark duration (s)", _num(s["duration_s"])))
    if invalid:
        rows.append((None, "Duration the rates are over (s, less the invalid requests' share)",
                     _num(s.get("rate_duration_s"))))
    rows += [("input_total", "Total input tokens (tokens)",
              str(s["total_input_tokens"]) + (" (estimated)" if s["input_tokens_estimated"] else "")),
             ("output_total", "Total generated tokens (tokens)", str(s["total_output_tokens"])),
             ("request_rate", "Request throughput (req/s)", _num(s["request_throughput"])),
             ("output_rate", "Output token throughput (tok/s)", _num(s["output_throughput"]))]
    if gpus:
        rows.append((None, "Output token throughput per GPU (tok/s/GPU)", _num(s["output_throughput_per_gpu"])))
    if ci_text:
        rows.append((None, f"  95% CI ({'tok/s/GPU' if gpus else 'tok/s'})", ci_text))
    rows.append(("total_rate", "Total token throughput (tok/s)", _num(s["total_throughput"])))
    if gpus:
        rows.append((None, "Total token throughput per GPU (tok/s/GPU)", _num(s["total_throughput_per_gpu"])))
    rows += [("interactivity", "Interactivity (tok/s/user: 1000 / median TPOT)", _num(s["interactivity"])),
             ("peak", "Peak concurrent requests (requests)", str(s["peak_concurrency"]))]
    g = s.get("goodput")
    if g:
        slos = ", ".join(f"{k[:-3].upper()} <= {v:g} ms" for k, v in g["slos"].items())
        rows.append((None, f"Request goodput (req/s) [{slos}]", f"{_num(g['request_goodput'])} ({100 * g['fraction']:.0f}%)"))
    for lat in LATENCIES:
        name, definition = LATENCY_TEXT[lat]
        d = s[f"{lat}_ms"]
        rows.append((lat, f"{name}: {definition}", ""))
        rows += [(lat, f"{label} {name} (ms)", _num(d.get(key)))
                 for label, key in [("Mean", "mean"), ("Median", "median"), ("Std", "std")]
                 + [(f"P{q:g}", pct_name(q)) for q in s["percentiles"]]]
        if lat == "ttft" and s.get("ttft_from_headers_ms"):
            h = s["ttft_from_headers_ms"]
            rows.append(("ttft_headers", "TTFT from the request's headers, mean / median (ms: after any connect)",
                         f"{_num(h['mean'])} / {_num(h['median'])}"))
    u = s["usage"]
    rows.append((None, "Input tokens: server usage / client count (tokens)",
                 f"{_opt(u['server_input_tokens'])} / {_opt(u['client_input_tokens'])}"))
    unverified = "" if u.get("verified", True) else " (unverified: no tokenizer, no throughput claim)"
    rows.append((None, "Output tokens: server usage (tokens)", _opt(u["server_output_tokens"]) + unverified))
    rows.append((None, "Output tokens: streamed (tokens, one per text chunk)", _opt(u["client_output_tokens"])))
    if u.get("reencoded_output_tokens") is not None:
        rows.append((None, "Output text re-encoded (tokens: a bound, not a count)", str(u["reencoded_output_tokens"])))
    for e in s["error_kinds"][:3]:
        rows.append((None, f"Error x{e['count']}", e["error"][:120]))
    return rows


def summary_table(title: str, s: dict, ci: tuple | None = None, names: str | None = None,
                  peer: dict | None = None) -> dict:
    """The summary as a table (what `show` prints); names: a peer (PEERS) whose name for each
    figure is a third column and, with `peer` (results/peer_rules.peer_figures), the figure as
    that peer computes it a fourth: the peer's number under the peer's name, gpuparity's under its own."""
    rows = _rows(s, ci)
    if names is None:
        return {"title": title, "columns": ["metric", "value"], "rows": [[label, value] for _, label, value in rows]}
    peer = peer if peer is not None else {}
    out = []
    for figure, label, value in rows:
        out.append([label, value, _peer_name(figure, label, names), _peer_value(figure, label, names, peer)])
        if figure in LATENCY_TEXT and label.startswith("P") and _is_last_stat(rows, figure, label):
            out += _extra_stats(figure, names, peer, s)     # the peer's own percentiles gpuparity's table lacks
    if names == "guidellm" and peer.get("peer_tpot"):
        out.append(["guidellm's TPOT: (last token - start) / tokens, weighted by tokens", "", "time_per_output_token_ms",
                    ""])
        out += [[f"{label} guidellm TPOT (ms)", "-", f"time_per_output_token_ms {STATS['guidellm'].get(k, k)}",
                 _num(peer["peer_tpot"].get(k))] for label, k in (("Mean", "mean"), ("Median", "median"),
                                                                  ("Std", "std"), ("P95", "p95"))]
    head = {"guidellm": "guidellm 0.8.1's value", "aiperf": "aiperf 0.13.0's value", "vllm": "vLLM's value"}[names]
    return {"title": title, "columns": ["metric", "value", names, head], "rows": out}


def _stat_of(label: str) -> str:
    """mean, median, std, p90, ... of a latency row's label ("P90 TTFT (ms)")."""
    return label.split()[0].lower()


def _peer_name(figure: str | None, label: str, names: str) -> str:
    if figure is None:
        return "-"
    name = NAMES[figure][names]
    if figure not in LATENCY_TEXT or name == "-":
        return name
    if label.startswith(LATENCY_TEXT[figure][0] + ":"):        # the figure's header row: what differs
        note = NOTES.get((figure, names))
        return f"{name} ({note})" if note else name
    stat = _stat_of(label)
    if names == "vllm":                                        # its result JSON's keys: mean_ttft_ms
        return f"{stat}_{name}_ms"
    if names == "aiperf" and stat == "median":
        stat = "p50"
    return f"{name} {STATS.get(names, {}).get(stat, stat)}"


def _peer_value(figure: str | None, label: str, names: str, peer: dict) -> str:
    """The figure as the peer computes it, at the table's rounding ("" where it has none)."""
    if figure is None or NAMES.get(figure, {}).get(names, "-") == "-" or not peer:
        return ""
    if figure in LATENCY_TEXT:
        if label.startswith(LATENCY_TEXT[figure][0] + ":"):
            return ""
        dist = peer.get(figure) or {}
        return _num(dist.get(_stat_of(label))) if dist.get(_stat_of(label)) is not None else "-"
    key = {"ttft_headers": None}.get(figure, figure)
    v = peer.get(key) if key else None
    if isinstance(v, int) and figure in ("completed", "failed", "input_total", "output_total"):
        return str(v)
    return _num(v) if isinstance(v, (int, float)) else ""


def _is_last_stat(rows: list, figure: str, label: str) -> bool:
    later = [lb for f, lb, _ in rows if f == figure]
    return later[-1] == label


def _extra_stats(figure: str, names: str, peer: dict, s: dict) -> list[list[str]]:
    """Rows of the peer's statistics the point's percentiles leave out (guidellm's and aiperf's p95)."""
    from gpuparity.results.peer_rules import EXTRA_STATS

    dist = peer.get(figure) or {}
    name = LATENCY_TEXT[figure][0]
    have = {pct_name(q) for q in s.get("percentiles") or []}
    return [[f"P{stat[1:]} {name} (ms)", "-", _peer_name(figure, f"P{stat[1:]} {name}", names), _num(dist.get(stat))]
            for stat in EXTRA_STATS.get(names, ()) if stat not in have and dist.get(stat) is not None
            and NAMES[figure][names] != "-"]


def named_table(result: dict, names: str) -> dict | None:
    """A serving result's table with `names`' (a peer's) name beside each figure (`show --names`,
    `export --names`); None for a result that is not a serving point."""
    info = result.get("info") or {}
    serving, table = info.get("serving"), info.get("table") or {}
    if result.get("category") != "serving" or not isinstance(serving, dict):
        return None
    from gpuparity.results.peer_rules import peer_figures

    m = result.get("metric") or {}
    rows = info.get("requests") if isinstance(info.get("requests"), list) else None
    stated = (info.get("imported") or {}).get("stated") if isinstance(info.get("imported"), dict) else None
    peer = peer_figures(names, rows, serving, stated if isinstance(stated, dict) else None)
    return summary_table(table.get("title", ""), serving, (m.get("ci_low"), m.get("ci_high")), names, peer)
