"""One round of a serving point (workloads/serving/workload.py runs it): its requests' token
counts held to serving_summary's rules, live progress, and the round's figure, samples and status
from its summary."""

from __future__ import annotations

import math
import time

from gpuparity.results.schema import mark
from gpuparity.results.serving_summary import fill_derived, table_of
from gpuparity.workloads.base import Context


def token_counts(records, prompts, tokenizer) -> list[dict]:
    """Per record: the token figures and stream evidence of its export row, and each finished
    request held to the output count's rules (serving_summary.token_problem: a request whose
    usage the stream contradicts is invalid). Output: the server's usage where it sent one, else
    what streamed (serving_summary.counted_output); input: the client's count (as vLLM), else the
    server's, else the prompt's words (estimated). Without a tokenizer the counts are unverified
    (the point is flagged, serving_summary)."""
    from gpuparity.results.serving_summary import counted_output, streamed_count, token_problem

    out = []
    for rec, prompt in zip(records, prompts, strict=True):
        s_in = rec.usage.prompt_tokens if rec.usage else None
        s_out = rec.usage.completion_tokens if rec.usage else None
        c_in = prompt.tokens
        text = rec.text
        row = {"server_output_tokens": s_out, "client_output_tokens": streamed_count(rec.pieces, rec.delta_tokens),
               "reencoded_tokens": tokenizer.count_output(text) if tokenizer is not None and rec.ok else None,
               "pieces": rec.pieces, "empty_chunks": rec.empty_chunks, "text_bytes": len(text.encode("utf-8")),
               "delta_tokens": rec.delta_tokens, "max_tokens": rec.max_tokens}
        problem = token_problem(row, tokenizer is not None) if rec.ok else None
        if problem:
            rec.fail(problem, invalid=True)
        tin = c_in if c_in is not None else s_in
        words = len((prompt.body if isinstance(prompt.body, str) else " ".join(m["content"] for m in prompt.body)).split())
        row.pop("max_tokens")
        out.append({"input_tokens": tin if tin is not None else words,
                    "output_tokens": counted_output(dict(row, max_tokens=rec.max_tokens)),
                    "input_estimated": tin is None, "server_input_tokens": s_in, "client_input_tokens": c_in, **row})
    return out


class Progress:
    """Live status of a point through ctx.say: requests done/failed, throughput so far, ETA."""

    def __init__(self, ctx: Context, label: str, total: int):
        self.ctx, self.label, self.total = ctx, label, total
        self.done_n = self.failed = self.pieces = 0
        self.t0 = time.perf_counter()
        self.last = 0.0

    def done(self, rec) -> None:
        self.done_n += 1
        self.failed += not rec.ok
        self.pieces += rec.pieces if rec.ok else 0
        now = time.perf_counter()
        if now - self.last < 0.25 and self.done_n < self.total:
            return
        self.last = now
        elapsed = now - self.t0
        eta = elapsed / self.done_n * (self.total - self.done_n)
        self.ctx.say(f"{self.label}: {self.done_n}/{self.total} done, {self.failed} failed, "
                     f"{self.pieces / elapsed:.1f} tok/s, ETA {eta:.0f} s")


def finish(result: dict, s: dict, params: dict) -> dict:
    """Figure, samples and status of one round from its summary."""
    from gpuparity.measure.stats import summarize
    from gpuparity.results.figure import LEVEL, UNVERIFIED_TOKENS, set_metric
    from gpuparity.results.serving_summary import INVALID_REQUESTS, figure_unit

    rows = result["info"]["requests"]
    counts = f"{s['errors']} errors, {s['timeouts']} timeouts, {s['invalid']} invalid"
    if not s["completed"]:
        table_of(result, s)
        first = s["error_kinds"][0]["error"] if s["error_kinds"] else "no request was sent"
        return mark(result, "failed", f"all {s['requests']} requests failed ({counts}); first: {first}")
    set_metric(result, "tokens", s["throughput_per_gpu"], s["log_se"])
    result["metric"]["unit"] = figure_unit(s["gpus"])
    if s["usage"]["verified"] is False:       # no claim rests on counts nobody checked (compare leaves it out)
        result["flags"].append(UNVERIFIED_TOKENS)
    if s["invalid"]:                          # the stream contradicted a usage figure: every view says so
        result["flags"].append(INVALID_REQUESTS)
    e2el = [(r["end_us"] - r["start_us"]) / 1e6 for r in rows if r["ok"]]
    result["samples"] = e2el
    summary = summarize(e2el)
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1 - (1 - LEVEL) / 2)
    summary.update(of="E2E latency (s)", rel_noise=math.expm1(z * s["log_se"]) if s["log_se"] is not None
                   else summary["rel_noise"])
    result["summary"] = summary
    fill_derived(result, s)
    table_of(result, s)
    if s["failed"]:
        result["info"]["warning"] = (f"{counts} of {s['requests']} requests (not in the throughput); "
                                     f"first: {s['error_kinds'][0]['error']}")
    return result
