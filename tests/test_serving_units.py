"""Serving benchmark parts without a server: the response parser (fuzzed), the summary's
arithmetic, load shaping, datasets, and comparisons at equal interactivity with intervals."""

from __future__ import annotations

import gzip
import json
import math
import random
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuparity.comparison.serving_compare import serving_at_equal_interactivity
from gpuparity.comparison.sides import side_from_runs
from gpuparity.errors import UserError
from gpuparity.results.serving_summary import merge_summaries, summarize_point
from gpuparity.workloads.serving.client import arrival_times
from gpuparity.workloads.serving.wire import (
    BodyDecoder,
    EventStream,
    ProtocolError,
    one_line,
    parse_chunk,
    parse_models,
)

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
CONTROL = set(chr(c) for c in range(32) if chr(c) not in "\t\n") | {"\x7f"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**15, 10**15) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["choices", "text", "delta", "content", "usage", "prompt_tokens", "completion_tokens",
                         "finish_reason", "error", "message", "reasoning_content", "x"]), inner, max_size=5),
    max_leaves=25)


@FUZZ
@given(json_values)
def test_any_json_chunk_is_an_event_or_a_protocol_error(value):
    try:
        ev = parse_chunk(json.dumps(value))
    except ProtocolError as exc:
        assert "\n" not in str(exc) and not CONTROL & set(str(exc))
        return
    assert isinstance(ev.text, str) and isinstance(ev.finished, bool)
    if ev.usage is not None:
        for v in (ev.usage.prompt_tokens, ev.usage.completion_tokens):
            assert v is None or (type(v) is int and 0 <= v <= 10**9)
    if ev.error is not None:
        assert not CONTROL & set(ev.error)


GOOD = b'data: {"choices": [{"text": "hi", "finish_reason": null}]}\n\n'


@FUZZ
@given(st.binary(max_size=300), st.integers(0, len(GOOD)), st.integers(1, 64))
def test_mutated_byte_streams_never_escape_the_parser(noise, at, split):
    data = GOOD[:at] + noise + GOOD[at:] + b'data: {"choices": [], "usage": {"completion_tokens": 1}}\n'
    stream = EventStream(max_line=256)
    try:
        for i in range(0, len(data), split):
            for payload in stream.feed(data[i:i + split]):
                if payload != "[DONE]":
                    parse_chunk(payload)
    except ProtocolError:
        pass


@FUZZ
@given(st.binary(max_size=400))
def test_models_body_fuzz(body):
    try:
        cards = parse_models(body).data
    except ProtocolError:
        return
    assert cards and all(isinstance(c.id, str) and c.id for c in cards)


def test_parser_reads_both_endpoints_and_rejects_bad_usage():
    ev = parse_chunk('{"choices": [{"delta": {"content": "a"}, "finish_reason": null}]}')
    assert ev.text == "a" and not ev.finished
    ev = parse_chunk('{"choices": [{"text": "b", "finish_reason": "length"}], "usage": {"completion_tokens": 3}}')
    assert ev.text == "b" and ev.finished and ev.usage.completion_tokens == 3
    for bad in ('{"usage": {"completion_tokens": -590}}', '{"usage": {"completion_tokens": 1e13}}',
                '{"usage": {"completion_tokens": true}}', '{"usage": {"completion_tokens": NaN}}',
                '{"choices": 5}', '[1]', 'null', '{"choices": [{"text": 7}]}'):
        with pytest.raises(ProtocolError):
            parse_chunk(bad)
    err = parse_chunk('{"error": {"message": "boom\\u0000\\u001b[2J\\ud800"}}').error
    assert "boom" in err and not CONTROL & set(err)
    err.encode("utf-8")  # no lone surrogate left: storable anywhere


def test_event_stream_splits_lines_across_reads_and_caps_them():
    s = EventStream(max_line=64)
    assert s.feed(b"data: {\"a\"") == [] and s.feed(b": 1}\r\n: comment\nevent: x\n\ndata: [DONE]\n") == [
        '{"a": 1}', "[DONE]"]
    with pytest.raises(ProtocolError, match="over 64 bytes"):
        EventStream(max_line=64).feed(b"data: " + b"x" * 100)
    with pytest.raises(ProtocolError, match="UTF-8"):
        EventStream().feed(b"data: \xff\n")


def test_body_decoder_stops_a_gzip_bomb_at_its_cap():
    bomb = gzip.compress(b"\0" * (64 << 20))          # 64 MiB in ~64 KiB
    assert len(bomb) < 100_000
    d = BodyDecoder("gzip", cap=1 << 20)
    with pytest.raises(ProtocolError, match="cap"):
        for i in range(0, len(bomb), 4096):
            d.feed(bomb[i:i + 4096])
    assert d.total <= (1 << 20) + 1
    ok = BodyDecoder("deflate", cap=100)
    assert ok.feed(zlib.compress(b"hello")) == b"hello"
    with pytest.raises(ProtocolError, match="not supported"):
        BodyDecoder("br", cap=10)
    with pytest.raises(ProtocolError, match="compressed"):
        BodyDecoder("gzip", cap=10).feed(b"not gzip at all")


def test_one_line_makes_server_text_storable():
    s = one_line("a\x00b\x1b[31m\nc\ud800" + "x" * 500, limit=40)
    assert len(s) <= 43 and "\x00" not in s and "\n" not in s and "\\x00" in s
    s.encode("utf-8")


# -- the summary ---------------------------------------------------------------------------------
def row(i, start, ttft, itl, out, ok=True, inp=10, timeout=False, error=None):
    end = start + ttft + sum(itl) + 50
    return {"trial": 1, "i": i, "ok": ok, "error": error, "timeout": timeout, "start_us": start, "end_us": end,
            "ttft_us": ttft if ok else None, "itl_us": itl, "max_tokens": out, "input_tokens": inp,
            "output_tokens": out, "input_estimated": False, "server_input_tokens": inp, "server_output_tokens": out,
            "client_input_tokens": inp, "client_output_tokens": out}


def test_summary_matches_hand_computed_figures():
    rows = [row(0, 0, 100_000, [10_000, 20_000, 30_000], 4), row(1, 50_000, 200_000, [40_000, 40_000, 40_000], 4),
            row(2, 60_000, 0, [], 0, ok=False, error="HTTP 500: x")]
    s = summarize_point(rows, gpus=2, percentiles=(50, 90), slos={"ttft": 150.0})
    end = max(r["end_us"] for r in rows)
    duration = end / 1e6
    assert s["duration_s"] == pytest.approx(duration)
    assert s["completed"] == 2 and s["failed"] == s["errors"] == 1 and s["timeouts"] == 0
    assert s["output_throughput"] == pytest.approx(8 / duration)
    assert s["total_throughput_per_gpu"] == pytest.approx((8 + 20) / duration / 2)
    assert s["throughput_per_gpu"] == s["output_throughput_per_gpu"]
    e2el = [(r["end_us"] - r["start_us"]) / 1e3 for r in rows[:2]]
    assert s["e2el_ms"]["mean"] == pytest.approx(np.mean(e2el)) and s["e2el_ms"]["std"] == pytest.approx(np.std(e2el))
    tpots = [(e - t) / 3 for e, t in zip(e2el, (100, 200), strict=True)]
    assert s["tpot_ms"]["median"] == pytest.approx(np.median(tpots))
    assert s["interactivity"] == pytest.approx(1000 / np.median(tpots))
    assert s["itl_ms"]["p90"] == pytest.approx(np.percentile([10, 20, 30, 40, 40, 40], 90))
    assert s["ttft_ms"]["p50"] == pytest.approx(150.0)
    g = s["goodput"]
    assert g["good_requests"] == 1 and g["fraction"] == pytest.approx(1 / 3) and g["slos"] == {"ttft_ms": 150.0}
    assert s["error_kinds"] == [{"error": "HTTP 500: x", "count": 1}]
    assert s["peak_concurrency"] == 3
    assert s["log_se"] is not None and s["log_se"] > 0


def test_nothing_completed_gives_empty_latencies_not_errors():
    s = summarize_point([row(0, 0, 0, [], 0, ok=False, timeout=True, error="t")], gpus=1)
    assert s["completed"] == 0 and s["timeouts"] == 1 and s["ttft_ms"]["mean"] is None
    assert s["interactivity"] is None and s["output_throughput"] == 0.0


def test_merged_summary_uses_the_geometric_mean_of_trial_rates():
    a = summarize_point([row(0, 0, 1000, [1000] * 3, 4)], gpus=1)
    b = summarize_point([row(0, 0, 1000, [3000] * 3, 4)], gpus=1)
    pooled = summarize_point([row(0, 0, 1000, [1000] * 3, 4), row(1, 0, 1000, [3000] * 3, 4)], gpus=1)
    m = merge_summaries([a, b], pooled, figure=123.0)
    assert m["request_throughput"] == pytest.approx(math.sqrt(a["request_throughput"] * b["request_throughput"]))
    assert m["throughput_per_gpu"] == 123.0 and m["duration_s"] == pytest.approx(a["duration_s"] + b["duration_s"])
    assert len(m["trials"]) == 2 and m["completed"] == 2


# -- load shaping ----------------------------------------------------------------------------------
def test_arrivals_poisson_gamma_and_ramps():
    rng = random.Random(3)
    gaps = np.diff(arrival_times(4000, 10.0, 1.0, rng))
    assert gaps.mean() == pytest.approx(0.1, rel=0.06) and gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.08)
    bursty = np.diff(arrival_times(4000, 10.0, 0.25, rng))       # gamma shape 0.25: cv = 2
    assert bursty.mean() == pytest.approx(0.1, rel=0.12) and bursty.std() / bursty.mean() == pytest.approx(2.0, rel=0.15)
    assert arrival_times(5, math.inf, 1.0, rng) is None
    ramp = np.diff(arrival_times(3000, 0, 1.0, rng, ("linear", 1.0, 100.0)))
    assert ramp[:300].mean() > 5 * ramp[-300:].mean()


# -- datasets ----------------------------------------------------------------------------------------
def test_sharegpt_file_is_validated(tmp_path):
    from gpuparity.workloads.serving.datasets import load_sharegpt, sharegpt_prompts

    good = tmp_path / "s.json"
    good.write_text(json.dumps([{"conversations": [{"from": "human", "value": "hello there friend"},
                                                   {"from": "gpt", "value": "hi " * 9}]},
                                {"conversations": [{"from": "gpt", "value": "orphan"}]}]))
    pairs = load_sharegpt(str(good))
    assert pairs == [("hello there friend", "hi " * 9)]
    assert sharegpt_prompts(random.Random(0), None, pairs, 1, None) == [("hello there friend", 9)]
    with pytest.raises(UserError, match="only 1 usable"):
        sharegpt_prompts(random.Random(0), None, pairs, 2, None)
    for text in ("{", '{"a": 1}', '[{"conversations": [{"from": 3, "value": "x"}]}]', "[]"):
        (tmp_path / "b.json").write_text(text)
        with pytest.raises(UserError):
            load_sharegpt(str(tmp_path / "b.json"))


def test_random_token_prompts_have_exact_lengths_with_the_served_tokenizer():
    from gpuparity.workloads.serving.datasets import (
        as_prompts,
        load_tokenizer,
        prefix_prompts,
        random_prompts,
    )

    tok = load_tokenizer(None, "smollm2")
    if tok is None:
        pytest.skip("SmolLM2 is not prepared on this machine (the server tests prepare it)")
    pairs = random_prompts(random.Random(1), tok, 6, 37, 5, 0.0)
    assert [len(tok.encode(t, special=False)) for t, _ in pairs] == [37] * 6
    assert {m for _, m in pairs} == {5}
    prompts = as_prompts(pairs, chat=True, tok=tok)
    assert all(p.tokens > 37 for p in prompts)  # the chat template adds its tokens, as the server sees them
    shared = prefix_prompts(random.Random(2), tok, 8, 40, 4, 30, 2)
    assert len({t[:60] for t, _ in shared}) <= 2


# -- equal interactivity with intervals ----------------------------------------------------------
def _serving_doc(run_id: str, scale: float, trials: int, spread: float, seed: int) -> dict:
    """A run of a concurrency sweep: throughput per GPU scale * 50 c^0.7 at interactivity 100 / sqrt(c),
    each of `trials` trials off by a log-normal `spread`."""
    from gpuparity import SCHEMA_VERSION
    from gpuparity.results.schema import new_result

    rng = np.random.default_rng(seed)
    results = []
    for c in (1, 4, 16, 64):
        x0, y0 = 100.0 / c ** 0.5, scale * 50.0 * c ** 0.7
        per = [{"interactivity": x0 * math.exp(rng.normal(0, spread)),
                "throughput_per_gpu": y0 * math.exp(rng.normal(0, spread)),
                "log_se": 0.01, "interactivity_log_se": 0.01, "errors": 0, "timeouts": 0} for _ in range(trials)]
        r = new_result("serving", "serving", {"concurrency": c, "dataset": "random"}, None)
        value = math.exp(np.mean([math.log(t["throughput_per_gpu"]) for t in per]))
        r["metric"] = {"name": "tokens", "unit": "tokens/s/GPU", "value": value, "higher_is_better": True}
        r["info"] = {"curve_key": "random in=1024 out=1024 completions",
                     "serving": {**per[0], "throughput_per_gpu": value, "trials": per}}
        results.append(r)
    fp = {"host": "h", "backend": "cuda", "spec": None, "telemetry": {"method": "none"}}
    return {"schema_version": SCHEMA_VERSION, "benchmark_version": 1, "run_id": run_id,
            "started_at": "2026-01-01T00:00:00+00:00", "status": "complete", "host": "h", "fingerprint": fp,
            "results": results}


def test_equal_interactivity_ratio_with_trials_covers_the_truth():
    """The issue's example: B at 0.927 x A's throughput at every interactivity, 3 trials a side."""
    hits, entries = 0, 0
    for world in range(20):
        a = side_from_runs([_serving_doc("a", 1.0, 3, 0.02, 100 + world)], "A")
        b = side_from_runs([_serving_doc("b", 0.927, 3, 0.02, 200 + world)], "B")
        out = serving_at_equal_interactivity(a, b, 0.05, draws=400)
        assert out and all(e["ci_low"] <= e["ratio"] <= e["ci_high"] for e in out)
        assert all(e["ci_basis"] == {"a": "trials", "b": "trials"} for e in out)
        entries += len(out)
        hits += sum(e["ci_low"] <= 0.927 <= e["ci_high"] for e in out)
        if world == 0:
            assert all(abs(e["ratio"] - 0.927) < 0.05 for e in out)
    assert hits / entries >= 0.85


def test_equal_interactivity_single_trial_assumes_a_floor_and_equal_sides_are_not_slower():
    a = side_from_runs([_serving_doc("a", 1.0, 1, 0.0, 1)], "A")
    b = side_from_runs([_serving_doc("b", 1.0, 1, 0.0, 2)], "B")
    out = serving_at_equal_interactivity(a, b, 0.05, floor=0.03, draws=400)
    assert out and all(e["verdict"] in ("parity", "inconclusive") for e in out)
    assert all("+ 3% run-to-run spread" in e["ci_basis"]["a"] for e in out)
    wide = serving_at_equal_interactivity(a, b, 0.05, floor=0.2, draws=400)
    assert all(w["ci_high"] - w["ci_low"] > e["ci_high"] - e["ci_low"] for w, e in zip(wide, out, strict=True))
    far = side_from_runs([_serving_doc("c", 3.0, 1, 0.0, 3)], "C")     # the 10% default with 2 df: a t
    assert all(e["verdict"] == "faster" for e in serving_at_equal_interactivity(a, far, 0.05, draws=400))


def test_usage_is_checked_against_what_was_received():
    """The prompt count against what was sent (the client, before any tokenizer): a lie makes the
    request invalid, not an error; a server's 0 is no count."""
    from gpuparity.workloads.serving.client import Record, check_usage
    from gpuparity.workloads.serving.datasets import Prompt
    from gpuparity.workloads.serving.wire import Usage

    prompt = Prompt("a b c", max_tokens=4, tokens=3)
    cases = [(Usage(prompt_tokens=3, completion_tokens=4), True), (Usage(prompt_tokens=10**6, completion_tokens=3), False),
             (Usage(prompt_tokens=0, completion_tokens=3), True)]
    for usage, ok in cases:
        rec = Record(0, 4, pieces=3, usage=usage)
        check_usage(rec, prompt)
        assert rec.ok is ok and rec.invalid is (not ok), usage
    assert usage.prompt_tokens is None          # a server's 0 prompt tokens is not a count: dropped
    words = Prompt("a b c", max_tokens=4, tokens=None)          # no tokenizer: the prompt's bytes bound it
    rec = Record(0, 4, pieces=3, usage=Usage(prompt_tokens=5000))
    check_usage(rec, words)
    assert not rec.ok and rec.invalid and "bytes" in rec.error


def stream_row(server, pieces, text_bytes=None, reencoded=None, empty=0, delta=None, max_tokens=64):
    return {"server_output_tokens": server, "client_output_tokens": delta if delta is not None else pieces,
            "pieces": pieces, "empty_chunks": empty, "text_bytes": text_bytes, "reencoded_tokens": reencoded,
            "delta_tokens": delta, "max_tokens": max_tokens}


def test_the_output_count_is_invalid_only_on_evidence_of_a_lie():
    from gpuparity.results.serving_summary import counted_output, token_problem

    honest = [stream_row(64, 64, 250, 52),            # degenerate text: re-encodes to 81%, one token per chunk
              stream_row(64, 16, 250, 60),            # several tokens per chunk (stream interval)
              stream_row(64, 50, 200, 64, empty=14),  # ignore_eos: special tokens stream as empty chunks
              stream_row(10, 10, 40, 9, delta=10)]    # per-chunk counts that agree
    for r in honest:
        assert token_problem(r, tokenizer=True) is None and token_problem(r, tokenizer=False) is None, r
    lies = {"chunks of text streamed": stream_row(3, 4, 20, 4), "for max_tokens": stream_row(65, 64, 300, 64),
            "own chunks counted": stream_row(8, 5, 40, 8, delta=9),
            "can hold at most": stream_row(8, 1, 4, 1, empty=1, max_tokens=8),     # the lie_completion fault
            "re-encodes to": stream_row(20, 20, 400, 90)}                          # a count far below its text
    for what, r in lies.items():
        assert what in (token_problem(r, tokenizer=True) or ""), (what, r)
    # without a tokenizer only what needs none: the count within the chunks and max_tokens
    assert token_problem(lies["can hold at most"], tokenizer=False) is None
    assert "chunks of text" in token_problem(lies["chunks of text streamed"], tokenizer=False)
    # the figure a request counts: the server's, else what streamed or its re-encoding (the larger), capped
    assert counted_output(stream_row(64, 50, 200, 52)) == 64
    assert counted_output(stream_row(None, 64, 250, 52)) == 64 and counted_output(stream_row(None, 16, 250, 60)) == 60
    assert counted_output(stream_row(None, 16, 250, 90, max_tokens=64)) == 64
    assert counted_output({"server_output_tokens": None, "client_output_tokens": 7}) == 7   # an earlier version's row


def test_an_invalid_request_takes_its_share_of_the_time_with_it():
    """Serial requests: the invalid one's time leaves the rates whole; two in flight at once: half
    of the time they share. Errors stay in the duration (vLLM's)."""
    serial = [row(0, 0, 100_000, [10_000] * 3, 4), row(1, 200_000, 100_000, [10_000] * 3, 4),
              row(2, 400_000, 100_000, [10_000] * 3, 4)]
    serial[1].update(ok=False, invalid=True, error="usage says 9 output tokens, but ...")
    s = summarize_point(serial, gpus=None)
    busy = serial[1]["end_us"] - serial[1]["start_us"]
    assert s["invalid"] == 1 and s["errors"] == 0 and s["failed"] == 1 and s["completed"] == 2
    assert s["rate_duration_s"] == pytest.approx(s["duration_s"] - busy / 1e6)
    assert s["output_throughput"] == pytest.approx(8 / s["rate_duration_s"])
    assert s["gpus"] is None and s["output_throughput_per_gpu"] == s["output_throughput"]
    overlap = [row(0, 0, 100_000, [10_000] * 3, 4), row(1, 0, 100_000, [10_000] * 3, 4)]
    overlap[1].update(ok=False, invalid=True, error="x")
    s = summarize_point(overlap, gpus=1)
    assert s["rate_duration_s"] == pytest.approx(s["duration_s"] / 2)
    errored = [row(0, 0, 100_000, [10_000] * 3, 4), row(1, 200_000, 100_000, [10_000] * 3, 4, ok=False, error="HTTP 500")]
    s = summarize_point(errored, gpus=1)
    assert s["errors"] == 1 and s["invalid"] == 0 and s["rate_duration_s"] == s["duration_s"]


def test_rounds_give_the_interval_with_the_requests_as_a_floor_and_judge_stability():
    from gpuparity.results.figure import combine
    from gpuparity.results.serving_summary import point_figure, round_flags

    close = point_figure([100.0, 101.0, 99.5], [0.08, 0.09, 0.07])      # rounds agree, requests vary (c=4)
    spread = combine([100.0, 101.0, 99.5], [0.08, 0.09, 0.07])
    floor = math.sqrt(0.08 ** 2 + 0.09 ** 2 + 0.07 ** 2) / 3
    assert close["ci_floor"] == "requests" and close["log_se"] == pytest.approx(floor)
    assert close["ci_high"] / close["value"] == pytest.approx(math.exp(1.959964 * floor), rel=1e-5)
    assert close["ci_high"] > spread["ci_high"] and close["value"] == spread["value"]
    apart = point_figure([100.0, 130.0, 80.0], [0.01, 0.01, 0.01])     # rounds disagree: their spread sets it
    assert "ci_floor" not in apart and apart["ci_high"] == combine([100.0, 130.0, 80.0], [0.01] * 3)["ci_high"]
    assert point_figure([100.0], [0.1])["ci_basis"] == "within-trial"
    noisy_requests = {"flags": ["unstable", "unverified_tokens"], "metric": {"spread": 0.01},
                      "trials": [{"trial": 1, "log_se": 0.2}, {"trial": 2, "log_se": 0.2}]}
    assert round_flags(noisy_requests) == ["unverified_tokens"]          # requests vary: not unstable
    assert "unstable" in round_flags({"flags": [], "metric": {"spread": 0.3}, "trials": []})
