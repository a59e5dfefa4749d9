"""The report's serving section on InferenceX's axes, drawn in a real Chromium: total and output
tokens/s per GPU against tokens/s per user with 95% intervals on the points, each side's envelope
over every run (configuration), the envelope's points named by configuration, cost per million
tokens from the price book; the envelope math (comparison/envelope.py) on its own; and the
equal-interactivity table saying why two ranges do not overlap and which concurrencies would."""

from __future__ import annotations

import os

import numpy as np
import pytest
from test_compare import make_result, make_run, noisy
from test_report import ARGS, CHROMIUM, _screenshot_dir

from gpuparity.comparison.envelope import closing_loads, compare_at_interactivity, envelope, throughput_at


def point(c: int, tput: float, inter: float, seed: int, se: float = 0.04) -> dict:
    """A serving sweep point per GPU (the layout workloads/serving writes), throughput `tput` x c^0.7
    and interactivity `inter` / sqrt(c), with within-round standard errors (its intervals)."""
    x, y = inter / c ** 0.5, tput * c ** 0.7
    s = {"completed": 8 * c, "failed": 0, "errors": 0, "timeouts": 0, "duration_s": 10.0, "gpus": 1,
         "request_throughput": 0.8 * c, "output_throughput_per_gpu": y, "throughput_per_gpu": y,
         "total_throughput_per_gpu": 5 * y, "interactivity": x, "log_se": se, "interactivity_log_se": se / 2,
         "ttft_ms": {"mean": 50.0, "median": 45.0}, "tpot_ms": {"mean": 1e3 / x, "median": 1e3 / x}}
    return make_result("serving", {"concurrency": c}, noisy(y, 0.01, 5, seed), dtype=None, unit="tokens/s/GPU",
                       category="serving", info={"curve_key": "llama-70b in=1024 out=1024", "serving": s})


def side(spec_id: str, configs: dict, day0: int, correct: int | None = None) -> list[dict]:
    """One run per configuration {label: (throughput scale, interactivity scale, concurrencies)};
    with `correct`: each run's server identified (vLLM at the label's TP and precision, as
    tp2-fp8 says) and its accuracy eval `correct` of 16 (the first point holds it, as a run does)."""
    runs = []
    for i, (label, (tput, inter, loads)) in enumerate(configs.items()):
        results = [point(c, tput, inter, 10 * i + c) for c in loads]
        if correct is not None:
            tp = int(label.split("-")[0][2:])
            for r in results:
                r["info"]["server_identity"] = {"engine": "vllm", "engine_version": "0.11.0", "model": "llama-70b",
                                                "dtype": "bf16", "quantization": "fp8" if "fp8" in label else "none",
                                                "tensor_parallel": tp, "gpus": tp}
            results[0]["info"]["accuracy"] = {"eval": "gpuparity-basic", "version": 1, "seed": 0, "problems": 16,
                                              "answered": 16, "correct": correct, "score": correct / 16, "errors": 0}
        doc = make_run(results, spec_id=spec_id, run_id=f"{spec_id}-{label}",
                       started_at=f"2026-03-0{day0 + i}T00:00:00+00:00")
        doc["label"] = label
        runs.append(doc)
    return runs


A = {"tp8": (40.0, 60.0, (4, 16, 64)), "tp4": (55.0, 45.0, (4, 16, 64)), "tp2-fp8": (70.0, 35.0, (16, 64, 128))}
B = {"tp8": (50.0, 70.0, (4, 16, 64)), "tp1": (90.0, 30.0, (16, 64, 128))}


def test_the_envelope_and_the_comparison_at_equal_interactivity():
    env = envelope([(10, 100), (10, 90), (20, 50), (15, 40), (5, 120), (30, 10)])
    assert env[0].tolist() == [5, 10, 20, 30] and env[1].tolist() == [120, 100, 50, 10]
    assert throughput_at(env, [15, 40]).tolist()[0] == pytest.approx(75.0) and np.isnan(throughput_at(env, [40])[0])
    other = envelope([(x, 2 * y) for x, y in zip(*env, strict=True)])
    rows = compare_at_interactivity(env, other, 3)
    assert [r["interactivity"] for r in rows] == pytest.approx([5, np.sqrt(150), 30])
    assert all(r["ratio"] == pytest.approx(2.0) for r in rows)
    assert compare_at_interactivity(env, envelope([(50, 1), (60, 1)]), 5) == []
    # A: 20..5 tok/s/user at c=4..64, B: 60..21 at c=1..8: A at c<=2 or B at c>=16 would overlap them
    text = closing_loads([(c, 40 / c ** 0.5) for c in (4, 8, 16, 64)], [(c, 60 / c ** 0.5) for c in (1, 2, 4, 8)])
    assert "A reaches at most 20 tok/s per user, B at least 21.2" in text and "A at c<=2, or B at c>=16" in text


def test_an_empty_overlap_says_which_concurrencies_would_close_it():
    from gpuparity.comparison.compare import compare_runs
    from gpuparity.report import context
    from gpuparity.report import html as report_html

    slow = side("mi300x", {"big-batch": (60.0, 120.0, (16, 32, 64))}, 1)
    fast = side("h100-sxm", {"low-latency": (20.0, 200.0, (1, 2, 4))}, 5)
    (entry,) = compare_runs(slow, fast)["serving"]
    assert entry["ratio"] is None and entry["verdict"] is None
    assert entry["note"].startswith("no common level: A reaches at most 30 tok/s per user, B at least 100")
    assert entry["note"].endswith("to overlap, run A at c<=1, or B at c>=64")
    from html import escape

    assert escape(entry["note"], quote=False) in report_html.render_html(context.build(slow, fast))


def test_the_serving_section_on_inferencex_axes_in_chromium(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium not installed (apt-get install -y chromium)")
    from gpuparity.platform.prices import PriceBook
    from gpuparity.report import context, html

    ctx = context.build(side("mi300x", A, 1, correct=15), side("h100-sxm", B, 5, correct=16),
                        prices=PriceBook(use_config=False, overrides={"mi300x": 1.5}))
    anchors = [c["anchor"] for c in ctx["charts"]]
    assert anchors[-3:] == ["serving-total", "serving-output", "serving-cost"]
    ids = {a: f"chart-{anchors.index(a)}" for a in anchors[-3:]}
    page_html = html.render_html(ctx)
    total = next(c["fig"] for c in ctx["charts"] if c["anchor"] == "serving-total")
    points = [tr for tr in total.data if tr.mode == "markers+text"]
    assert len(points) == 2 and all(tr.error_y and tr.error_x for tr in points)
    # the envelope over every configuration: B's top at low interactivity is tp1's, at high tp8's
    named = [x for x in points[1].text if x]     # each point named by its server's configuration
    assert any(x.startswith("vllm 0.11.0 bf16 TP1 1 GPU c=128") for x in named)
    assert any(x.startswith("vllm 0.11.0 bf16 TP8 8 GPUs c=4") for x in named)
    errors = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.set_content(page_html, wait_until="load")
        page.wait_for_function("ids => ids.every(id => document.querySelectorAll('#' + id + ' .point').length > 0)",
                               arg=list(ids.values()), timeout=30000)
        for anchor, cid in ids.items():
            assert page.locator(f"#{cid} .point").count() >= 9, anchor       # every run's points
        assert page.locator(f"#{ids['serving-total']} .errorbar").count() >= 15        # intervals on the points
        assert page.locator(f"#{ids['serving-total']} .textpoint").filter(has_text="fp8 TP2").count() >= 1
        # each side's server and accuracy beside its throughput, and the checks' conclusions
        servers = page.locator("#serving-servers-table")
        assert servers.is_visible() and servers.locator("tr").count() == 3
        text = servers.inner_text()
        assert "45/48 correct (94%) on gpuparity-basic v1 over 3 runs" in text and "32/32 correct (100%)" in text
        assert "best output tok/s per GPU" in text and "TP 8" in text
        checks = page.locator("#serving-checks").inner_text()
        assert "accuracy: A 45/48 (94%), B 32/32 (100%)" in checks and "the servers differ in" in checks
        # the equal-interactivity table names the configuration of each side's envelope at each level
        assert page.locator("th").filter(has_text="A config").count() == 1
        assert page.locator("td").filter(has_text="vllm 0.11.0 bf16 TP1 1 GPU").count() >= 1
        assert page.locator(f"#{ids['serving-total']} .legendtext").filter(
            has_text="envelope over its runs").count() == 2
        assert "total (input + output) tokens/s per GPU" in page.locator(f"#{ids['serving-total']}").inner_text()
        assert page.locator(f"#{ids['serving-cost']} .legendtext").filter(has_text="$1.5/GPU-h").count() >= 1
        top = page.evaluate("document.getElementById('serving').getBoundingClientRect().top + window.scrollY")
        height = page.evaluate("document.body.scrollHeight") - top
        page.screenshot(path=os.path.join(_screenshot_dir(tmp_path), "report-serving.png"), full_page=True,
                        clip={"x": 0, "y": top, "width": 1300, "height": min(height, 2600)})
        browser.close()
    assert not errors, errors
