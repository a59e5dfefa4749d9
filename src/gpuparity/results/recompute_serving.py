"""A serving point recomputed (results/recompute.py): each trial's summary from its request rows,
then the point's summary, figure, samples, derived figures and table from those.
"""

from __future__ import annotations

from typing import Any

from gpuparity.results.recompute_checker import _Checker, _close, _num, _show
from gpuparity.results.recompute_figures import _counted, _distinct, _figure, _flags, _summary

SERVING_FIELDS = ("requests", "completed", "failed", "errors", "timeouts", "duration_s", "total_input_tokens",
                  "total_output_tokens", "request_throughput", "input_throughput", "output_throughput",
                  "total_throughput", "input_throughput_per_gpu", "output_throughput_per_gpu",
                  "total_throughput_per_gpu", "throughput_per_gpu", "interactivity", "log_se",
                  "interactivity_log_se", "peak_concurrency", "invalid", "rate_duration_s")


def _serving(r: dict, chk: _Checker, where: str) -> None:
    """Each trial's summary from its request rows, the point's summary, figure, samples, derived
    figures and table from those, as the serving workload's execute and merge_trials make them."""
    from gpuparity.results import serving_summary as sv
    from gpuparity.results.figure import UNVERIFIED_TOKENS

    info = r["info"]
    stated = info["serving"]
    rows = [row for row in info["requests"] if isinstance(row, dict)]
    by_trial: dict[Any, list] = {}
    for row in rows:
        by_trial.setdefault(row.get("trial"), []).append(row)
    numbers = sorted(by_trial, key=lambda t: t if isinstance(t, int) and not isinstance(t, bool) else -1)
    try:
        gpus = int(stated["gpus"]) if stated.get("gpus") is not None else None     # None: per server
        pct = [float(q) for q in stated["percentiles"]]
        slos = {k[:-3]: v for k, v in ((stated.get("goodput") or {}).get("slos") or {}).items()}
        tokenizer = (stated.get("usage") or {}).get("tokenizer")
        summaries = [sv.summarize_point(by_trial[t], gpus, pct, slos, tokenizer) for t in numbers]
        pooled = sv.summarize_point(rows, gpus, pct, slos, tokenizer)
        curve = sv.curve_key(r["params"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError) as exc:
        chk.refuse(where, f"its request rows cannot be summarised ({type(exc).__name__}: {str(exc)[:80]})")
    _distinct([[repr(sorted((k, str(v)) for k, v in row.items() if k != "trial")) for row in by_trial[t]]
               for t in numbers], chk, where)
    for row in rows:
        _request(row, tokenizer, chk, where)
    if info.get("curve_key") != curve:
        chk.differ(where, f"info.curve_key states {_show(info.get('curve_key'))}, its params give {curve}")
        info["curve_key"] = curve
    stated_trials = [t for t in stated.get("trials") or [] if isinstance(t, dict)]
    if stated_trials and len(stated_trials) != len(summaries):
        chk.refuse(where, f"states {len(stated_trials)} trial summaries for {len(summaries)} trials of requests")
    for t, s_t in zip(stated_trials or [stated], summaries, strict=False):
        s_t.update(warmup=t.get("warmup"), deadline_hit=t.get("deadline_hit"))
    units = [(s["throughput_per_gpu"], _num(s["log_se"])) for s in summaries if s["completed"]]
    if not units or len(units) != len(summaries):
        chk.refuse(where, "status ok, but a trial of the point has no completed request")
    counted = [t for t in r.get("trials") or [] if _counted(t)]
    if counted and len(counted) != len(units):
        chk.refuse(where, f"{len(counted)} trials with a figure, but {len(units)} trials of requests")
    if r.get("metric") is None:
        r["metric"] = {}
    _figure(r, units, chk, where, sv.point_figure)
    c = sv.point_figure([u[0] for u in units], [u[1] for u in units])
    merged = sv.merge_summaries(summaries, pooled, c["value"])
    merged["log_se"] = c.get("log_se")
    if stated_trials:
        for j, (t, s_t) in enumerate(zip(stated_trials, summaries, strict=True)):
            _serving_fields(t, s_t, chk, f"{where} trial {j + 1}")
        _serving_fields(stated, merged, chk, where)
    else:                               # a point summary without per-trial ones: one trial
        _serving_fields(stated, summaries[0], chk, where)
    e2el = [(row["end_us"] - row["start_us"]) / 1e6 for t in numbers for row in by_trial[t] if row.get("ok")]
    samples = r.get("samples") or []
    if len(samples) != len(e2el) or not all(_close(a, b) for a, b in zip(samples, e2el, strict=True)):
        chk.differ(where, f"samples: its {len(samples)} E2E latencies are not the {len(e2el)} its request rows give")
        r["samples"] = e2el
    _summary(r, chk, where)
    probe = {"info": {"curve_key": info["curve_key"]}, "params": r["params"], "metric": r["metric"]}
    sv.fill_derived(probe, merged)
    sv.table_of(probe, merged)
    stated_d = r.setdefault("derived", {})
    for field in ("tokens_per_s", "interactivity"):
        if not chk.same(where, f"derived.{field}", stated_d.get(field), probe["derived"].get(field)):
            stated_d[field] = probe["derived"].get(field)
    # the table is the summary rendered (serving_table), not a figure: rendered again, whatever
    # an earlier version wrote (its figures are each checked above)
    info["table"] = probe["info"]["table"]
    if chk.fix:
        info["serving"] = merged
    _flags(r, ([UNVERIFIED_TOKENS] if (merged.get("usage") or {}).get("verified") is False else [])
           + ([sv.INVALID_REQUESTS] if merged.get("invalid") else []), chk, where)


def _request(row: dict, tokenizer: str | None, chk: _Checker, where: str) -> None:
    """A completed request's token figures are the counts beside them, as the client chose them
    (serving_summary.counted_output), and nothing beside them contradicts its usage
    (serving_summary.token_problem, the client's own rules); never past max_tokens."""
    from gpuparity.results.serving_summary import counted_output, token_problem

    if not row.get("ok"):
        return
    s_out, c_out, out = row.get("server_output_tokens"), row.get("client_output_tokens"), row.get("output_tokens")
    what = f"{where} request {row.get('trial')}/{row.get('i')}"
    if out != counted_output(row):
        chk.refuse(what, f"output_tokens {_show(out)} is not the count beside it (server {s_out}, client {c_out})")
    if isinstance(row.get("max_tokens"), int) and isinstance(out, int) and out > row["max_tokens"]:
        chk.refuse(what, f"output_tokens {out} is past its max_tokens {row['max_tokens']}")
    problem = token_problem(row, bool(tokenizer))
    if problem:
        chk.refuse(what, f"marked ok, but {problem}")
    s_in, c_in = row.get("server_input_tokens"), row.get("client_input_tokens")
    if (c_in is not None or s_in is not None) and row.get("input_tokens") != (c_in if c_in is not None else s_in):
        chk.refuse(what, f"input_tokens {_show(row.get('input_tokens'))} is not the count beside it "
                         f"(client {c_in}, server {s_in})")


def _serving_fields(stated: dict, derived: dict, chk: _Checker, where: str) -> None:
    for field in SERVING_FIELDS:
        if field in derived and not chk.same(where, f"info.serving.{field}", stated.get(field), derived[field]):
            stated[field] = derived[field]
