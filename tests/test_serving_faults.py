"""A misbehaving server (the project's own, --faults, on loopback): every serving point ends
within its deadline with every request counted, and nothing unstorable is kept."""

from __future__ import annotations

import json
import time

import pytest
from serving_fixtures import CONTROL, run_points, start_own, stop

from gpuparity.demo.serving_server import DEGENERATE, FAULTS, HONEST, LIES, MALFORMED, PARTIAL


@pytest.fixture(scope="module")
def fault_base(tmp_path_factory):
    proc, url = start_own(tmp_path_factory.mktemp("faults"), "faults", "--model", "none", "--faults")
    yield url.rsplit("/v1", 1)[0]
    stop(proc)


def strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from strings(v)


REQUEST_DEADLINE, POINT_DEADLINE = 1.5, 4.0
STALLS = {"trickle", "stall", "slow_headers"}           # only the deadline ends these
# The others end on their own (an error), long before this deadline on the slowest machine: had
# one waited for it, it would be a timeout, not an error.
OWN_END_DEADLINE = 30.0
SLACK_S = 10.0      # start-up and cancellation on a loaded machine; a stall alone lasts for hours


@pytest.mark.parametrize("mode", [m for m in FAULTS if m not in ("slow_models", "refuse_ignore_eos", *LIES, *HONEST, *PARTIAL)])
def test_every_fault_ends_within_the_deadline_with_errors_counted(fault_base, mode):
    request_s, point_s = (REQUEST_DEADLINE, POINT_DEADLINE) if mode in STALLS else (OWN_END_DEADLINE,
                                                                                     2 * OWN_END_DEADLINE)
    t0 = time.monotonic()
    (r,), _ = run_points(url=f"{fault_base}/fault/{mode}/v1", model="fault", concurrency=2, num_prompts=3,
                         input_len=4, output_len=4, warmup=0, tokenizer="none", timeout_s=request_s,
                         point_timeout_s=point_s)
    took = time.monotonic() - t0
    assert took < POINT_DEADLINE + SLACK_S, took
    s = r["info"]["serving"]
    assert r["status"] == "failed" and s["requests"] == 3 and s["completed"] == 0
    assert s["errors"] + s["timeouts"] + s["invalid"] == 3
    if mode in STALLS:
        assert s["timeouts"] == 3 and "deadline" in r["reason"]
    elif mode == "usage_too_many":      # well-formed, but more tokens than max_tokens: a lie, not an error
        assert s["invalid"] == 3 and s["errors"] == s["timeouts"] == 0, r["reason"]
    else:
        assert s["errors"] == 3 and s["timeouts"] == 0, (took, r["reason"])
    if mode in MALFORMED and mode.startswith("usage"):
        assert "usage" in r["reason"]
    doc = json.dumps(r)      # strict JSON, nothing PostgreSQL would refuse (a NUL escape)
    assert "\\u0000" not in doc and all(not CONTROL.search(s) for s in strings(r))


def test_point_deadline_counts_running_and_unsent_requests(fault_base):
    t0 = time.monotonic()
    (r,), _ = run_points(url=f"{fault_base}/fault/trickle/v1", model="fault", concurrency=1, num_prompts=4,
                         input_len=4, output_len=4, warmup=1, tokenizer="none", timeout_s=30, point_timeout_s=1.0)
    assert time.monotonic() - t0 < 1.0 + SLACK_S          # the point's deadline, not the requests' 30 s
    s = r["info"]["serving"]
    assert s["requests"] == 4 and s["completed"] == 0 and s["deadline_hit"]
    kinds = {e["error"] for e in s["error_kinds"]}
    assert any("not sent" in k for k in kinds) or any("still running" in k for k in kinds)


def test_refused_ignore_eos_is_named_and_the_point_fails(fault_base):
    url = f"{fault_base}/fault/refuse_ignore_eos/v1"
    (r,), _ = run_points(url=url, model="fault", concurrency=1, num_prompts=2, output_len=3, warmup=0,
                         tokenizer="none", ignore_eos="true")
    assert r["status"] == "failed" and "server refused ignore_eos (HTTP 422" in r["reason"]
    (ok,), _ = run_points(url=url, model="fault", concurrency=1, num_prompts=2, output_len=3, warmup=0,
                          tokenizer="none")
    assert ok["status"] == "ok" and ok["params"]["dataset"] == "random_words"
    assert ok["info"]["serving"]["usage"]["client_counts"] == "streamed chunks"


def test_slow_models_ends_in_time(cli, tmp_db, fault_base):
    url = f"{fault_base}/fault/slow_models/v1"
    t0 = time.monotonic()
    p = cli("run", "serving", "--set", f"url={url}", "--set", "timeout_s=1", "--no-store")
    assert p.returncode == 2 and "could not list models" in p.stderr and "pass --set model=" in p.stderr
    assert time.monotonic() - t0 < 60
    (r,), _ = run_points(url=url, model="fault", concurrency=1, num_prompts=1, output_len=2, warmup=0,
                         tokenizer="none", timeout_s=1)
    assert r["info"]["server_note"].startswith("/models not read")


def test_a_nul_in_an_error_body_is_stored_shown_and_exported(cli, tmp_db, tmp_path, fault_base):
    p = cli("run", "serving", "--set", f"url={fault_base}/fault/nul_error/v1", "--set", "model=fault",
            "--set", "concurrency=1", "--set", "num_prompts=2", "--set", "warmup=0", "--set", "tokenizer=none")
    assert "Traceback" not in p.stderr
    shown = cli("show", "--json")
    assert shown.returncode == 0 and "\\u0000" not in shown.stdout
    (r,) = json.loads(shown.stdout)["results"]
    assert r["status"] == "failed" and "broke\\x00 here \\x1b[31mred" in r["reason"]
    out = tmp_path / "reqs.csv"
    assert cli("export", "latest", "--requests", "-o", str(out)).returncode == 0
    assert "\x00" not in out.read_text()


@pytest.fixture(scope="module")
def tokenizer_dir():
    from gpuparity.models import gguf

    return str(gguf.prepare(gguf.smollm2_gguf()))    # SmolLM2's tokenizer, as the client would load it


LIE_POINT = dict(model="fault", concurrency=2, num_prompts=4, input_len=8, output_len=8, warmup=0)


@pytest.mark.parametrize("mode", list(LIES))
def test_a_server_lying_about_usage_never_gives_an_ok_figure(fault_base, tokenizer_dir, mode):
    """Completion inflated (one piece, max_tokens claimed), a huge prompt, zero counts: with the
    client's tokenizer every lie makes its requests invalid; without one only the inflated count
    cannot be seen, and that point is flagged unverified."""
    for tok in (tokenizer_dir, "none"):
        (r,), _ = run_points(url=f"{fault_base}/fault/{mode}/v1", tokenizer=tok, **LIE_POINT)
        s = r["info"]["serving"]
        assert s["usage"]["verified"] is (tok != "none")
        if r["status"] == "ok":
            assert tok == "none" and mode == "lie_completion", (tok, mode)
            assert "unverified_tokens" in r["flags"] and s["completed"] == 4
            assert any("unverified" in row[1] for row in r["info"]["table"]["rows"])
            from gpuparity.report.onerun import highlights
            from gpuparity.results.figure_text import figure

            assert [h["text"] for h in highlights([r])] == ["serving: no figure claimed (1 point with token "
                                                            "counts no tokenizer checked)"], figure(r["metric"]["value"])
        else:        # invalid, not errors: their time leaves the rates with their tokens
            assert s["completed"] == 0 and s["invalid"] == 4 and s["errors"] == 0, r["reason"]
            assert "usage says" in r["reason"] and "4 invalid" in r["reason"]
            assert "unverified_tokens" not in (r.get("flags") or [])


def test_an_unverified_point_makes_no_claim_in_a_comparison(fault_base):
    from test_compare import make_run

    from gpuparity.comparison.compare import compare_runs

    (a,), _ = run_points(url=f"{fault_base}/fault/lie_completion/v1", tokenizer="none", **LIE_POINT)
    (b,), _ = run_points(url=f"{fault_base}/fault/refuse_ignore_eos/v1", tokenizer="none", **LIE_POINT)
    assert a["status"] == b["status"] == "ok" and a["key"] == b["key"]
    out = compare_runs([make_run([a], run_id="liar")], [make_run([b], run_id="honest", spec_id="h100-sxm")])
    (row,) = out["rows"]
    assert row["verdict"] == "inconclusive"           # no verdict rests on counts nobody checked
    assert out["serving"] == []                       # nor a serving comparison


def test_an_unverified_point_reaches_no_headline(fault_base, capsys, monkeypatch):
    """The inflated count is the only figure the point has: the one-run report (HTML, markdown)
    states no figure from it in the headline, marks it unverified where it is shown, and the
    terminal table says so too. The same point with its counts checked is claimed (the control)."""
    from test_compare import make_run
    from test_report import _html_sections, _md_sections

    from gpuparity.cli.tables import print_run_rows
    from gpuparity.report import context, html, onerun
    from gpuparity.report.markdown import render_markdown
    from gpuparity.results.figure_text import figure

    (r,), _ = run_points(url=f"{fault_base}/fault/lie_completion/v1", tokenizer="none", **LIE_POINT)
    assert r["status"] == "ok" and "unverified_tokens" in r["flags"]
    shown = figure(r["metric"]["value"])          # every view's one spelling of it (results/figure_text)

    def rendered(result):
        ctx = context.build([make_run([result], spec_id="cpu", run_id="liar")])
        page, md = html.render_html(ctx), render_markdown(ctx)
        at = page.index('<ul id="highlights">')
        heads = (onerun.headline_text([result]), page[at:page.index("</ul>", at)],
                 md[md.index("**What this machine reached"):md.index(" results ok")])
        return heads, page, md

    heads, page, md = rendered(r)
    for head in heads:
        assert shown not in head and "serving: no figure claimed" in head, head
    (row,) = _html_sections(page)["serving"]
    assert row["figure"] == shown and row["unit"] == "tokens/s (unverified)"
    assert "no tokenizer checked" in row["flags"]
    (line,) = _md_sections(md)["Serving"]
    assert "tokens/s (unverified)" in line and "no tokenizer checked" in line

    monkeypatch.setenv("COLUMNS", "100")
    print_run_rows(make_run([r], spec_id="cpu", run_id="liar"))
    out = capsys.readouterr().out
    assert f"{shown} tokens/s (unverified)" in out and "no tokenizer checked them" in out

    honest = {**r, "flags": [f for f in r["flags"] if f != "unverified_tokens"]}
    heads, _, _ = rendered(honest)
    assert all(f"serving {shown} tokens/s" in head for head in heads), heads


def test_degenerate_text_is_counted_whole(fault_base, tokenizer_dir):
    """One token per chunk of text that re-encodes to 4 tokens in 5 (a small model's repeated
    syllables): every request valid with the tokenizer's bounds, throughput = tokens / duration,
    and the re-encoding shown as what it is. (The check this replaced, usage within 4 + 10% of the
    re-encoding, rejected these: 64 vs 52.)"""
    from transformers import AutoTokenizer

    n = 64
    text = "".join(DEGENERATE[i % len(DEGENERATE)] for i in range(n))
    again = len(AutoTokenizer.from_pretrained(tokenizer_dir).encode(text, add_special_tokens=False))
    assert 0.75 * n <= again <= 0.85 * n          # the server's stream really re-encodes to ~80%
    (r,), _ = run_points(url=f"{fault_base}/fault/degenerate/v1", model="fault", tokenizer=tokenizer_dir,
                         concurrency=2, num_prompts=6, input_len=8, output_len=n, warmup=0)
    s = r["info"]["serving"]
    assert r["status"] == "ok" and s["completed"] == 6 and s["failed"] == s["invalid"] == 0, r.get("reason")
    assert s["usage"]["verified"] and not set(r["flags"]) & {"unverified_tokens", "invalid_requests"}
    assert s["total_output_tokens"] == 6 * n and s["usage"]["client_output_tokens"] == 6 * n
    assert s["usage"]["reencoded_output_tokens"] == 6 * again
    assert s["output_throughput"] == pytest.approx(6 * n / s["duration_s"], rel=1e-12)
    assert s["rate_duration_s"] == s["duration_s"]
    rows = dict(r["info"]["table"]["rows"])
    assert rows[next(k for k in rows if k.startswith("Output text re-encoded"))] == str(6 * again)
    assert any("a bound, not a count" in k for k in rows)


def test_some_invalid_requests_leave_with_their_time_and_every_view_counts_them(fault_base, tokenizer_dir, capsys):
    """Every second request claims 8 tokens for one chunk of 4 bytes: those are invalid, the point
    is still measured from the others, their time leaves the rates with their tokens, and the flag
    and the count are in the result, the summary table, the run table's notes and the report."""
    from test_compare import make_run

    from gpuparity.cli.tables import print_run_rows
    from gpuparity.report.context import build
    from gpuparity.report.markdown import render_markdown

    (r,), _ = run_points(url=f"{fault_base}/fault/lie_some/v1", tokenizer=tokenizer_dir, model="fault",
                         concurrency=1, num_prompts=4, input_len=8, output_len=8, warmup=0)
    s = r["info"]["serving"]
    assert r["status"] == "ok" and s["invalid"] == 2 and s["completed"] == 2 and s["errors"] == 0
    assert "invalid_requests" in r["flags"] and "2 invalid" in r["info"]["warning"]
    assert s["rate_duration_s"] < s["duration_s"]
    assert s["output_throughput"] == pytest.approx(16 / s["rate_duration_s"], rel=1e-12)
    rows = dict(r["info"]["table"]["rows"])
    assert rows["Invalid requests (usage contradicted by the stream)"].startswith("2:")
    print_run_rows(make_run([r], spec_id="cpu", run_id="some"))
    assert "2 request(s) whose usage their stream contradicts" in capsys.readouterr().out
    md = render_markdown(build([make_run([r], spec_id="cpu", run_id="some")]))
    head = next(line for line in md[md.index("### Serving:"):].splitlines() if line.startswith("| load"))
    assert "invalid" in head
    # a document from elsewhere is held to the same rules: as measured it passes; the flag dropped, or an
    # invalid request passed off as completed, it is refused
    import copy

    from gpuparity.errors import UserError
    from gpuparity.results.document import validate_run

    doc = make_run([r], spec_id="cpu", run_id="some")
    validate_run(copy.deepcopy(doc))
    forged = copy.deepcopy(doc)
    forged["results"][0]["flags"].remove("invalid_requests")
    with pytest.raises(UserError, match="invalid_requests"):
        validate_run(forged)
    forged = copy.deepcopy(doc)
    row = next(x for x in forged["results"][0]["info"]["requests"] if x["invalid"])
    row.update(ok=True, invalid=False, error=None, ttft_us=row["end_us"] - row["start_us"] - 1)
    with pytest.raises(UserError, match="bytes of text"):
        validate_run(forged)
