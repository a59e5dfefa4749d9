"""report: self-contained HTML rendered in a real headless Chromium at a desktop and a narrow width
(screenshots inspected: no horizontal overflow, every chart drawn, the headline), markdown, and
the pieces behind them (headline, short labels, fingerprint diff, serving summaries, tables)."""

from __future__ import annotations

import base64
import json
import os
import re
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_compare import main_inprocess, make_result, make_run, noisy

from gpuparity.platform.specs import all_specs
from gpuparity.results.figure import derive_rates, fill_workload_figures

PAYLOAD = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned2 = 1">MI300X'
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WIDTHS = (1400, 800)
HEADLINE = re.compile(r"^B is 1\.(4[89]|5[0-2])x A on kernels \[1\.\d\d, 1\.\d\d\]: faster; on models "
                      r"(0\.9\d|1\.0\d)x \[(0\.9\d|1\.00), 1\.0\d\]: parity; on serving 1\.(19|2[01])x "
                      r"\[1\.\d\d, 1\.\d\d\]: faster; on all results \(categories weighted equally\) 1\.\d\dx "
                      r"\[1\.\d\d, 1\.\d\d\]: faster; 3 runs x 1 trial a side\.$")


def _gemm(m: int, dtype: str, tflops: float, spec_id: str, seed: int, flags: list | None = None) -> dict:
    r = make_result("gemm", {"m": m, "n": m, "k": m, "layout": "nn"}, noisy(tflops, 0.01, 9, seed), dtype=dtype,
                    flags=flags)
    r["work"] = {"flop": 2.0 * m ** 3}
    r["info"]["peak_kind"] = f"flop:{dtype}"
    derive_rates(r, all_specs()[spec_id])        # TFLOP/s and % of peak as `run` derives them
    return r


def _memory(op: str, gbs: float, spec_id: str, seed: int) -> dict:
    r = make_result("memory", {"op": op}, noisy(gbs, 0.01, 9, seed), dtype="fp32", unit="GB/s")
    r["work"] = {"bytes": 3 * 2 ** 28}
    r["info"]["peak_kind"] = "bytes:hbm"
    derive_rates(r, all_specs()[spec_id])
    return r


def _latency(median_ms: float) -> dict:
    return {"mean": 1.1 * median_ms, "median": median_ms, "std": 0.2 * median_ms, "p90": 1.8 * median_ms,
            "p99": 2.5 * median_ms}


def _serving_point(c: int, scale: float, seed: int) -> dict:
    """A sweep point in the layout workloads/serving/workload.py writes (vllm bench serve's summary)."""
    inter = 100.0 / c ** 0.5
    tput = scale * 50.0 * c ** 0.7
    summary = {"completed": 8 * c, "failed": 0, "errors": 0, "timeouts": 0, "duration_s": 10.0, "gpus": 1,
               "request_throughput": 0.8 * c, "output_throughput_per_gpu": tput, "throughput_per_gpu": tput,
               "total_throughput_per_gpu": 3 * tput, "interactivity": inter, "ttft_ms": _latency(40.0 * c ** 0.3),
               "tpot_ms": _latency(1000 / inter), "itl_ms": _latency(1000 / inter), "e2el_ms": _latency(900.0),
               "goodput": {"slos": {"ttft_ms": 500.0}, "good_requests": 7 * c, "request_goodput": 0.7 * c,
                           "fraction": 0.9, "output_throughput_per_gpu": 0.9 * tput},
               "trials": [{"completed": 8 * c}]}
    return make_result("serving", {"concurrency": c}, noisy(tput, 0.01, 7, seed), dtype=None, unit="tokens/s/GPU",
                       category="serving", info={"curve_key": "llama-8b in=1024 out=256", "serving": summary})


def _run(spec_id: str, kernel: float, serving: float, run_id: str, day: int, product: str | None = None) -> dict:
    """One run: kernels at `kernel` x (the fp32 GEMM flagged unstable), the model at parity (1x),
    serving at `serving` x; every figure below its datasheet peak (above it: flagged peak_exceeded)."""
    s = 10 * day
    results = [_gemm(m, dt, kernel * base * (m / 8192) ** 0.1, spec_id, s + i, flags=["unstable"] if dt == "fp32" else None)
               for i, (m, dt, base) in enumerate([(4096, "bf16", 600), (8192, "bf16", 650), (8192, "fp32", 40)])]
    results += [_memory("copy", kernel * 2000, spec_id, s + 3), _memory("triad", kernel * 2100, spec_id, s + 4)]
    results.append(make_result("llm", {"model": "llama-3.1-8b", "batch": 32}, noisy(2500.0, 0.003, 15, s + 5),
                               dtype="bf16", unit="tokens/s", category="model"))
    results += [_serving_point(c, serving, s + 6 + i) for i, c in enumerate((1, 4, 16, 64))]
    results.append(make_result("attention", {"seq": 4096}, [], status="failed", reason="<b>kernel</b> crashed"))
    return make_run(results, spec_id=spec_id, run_id=run_id, product=product,
                    started_at=f"2026-03-0{day}T00:00:00+00:00",
                    stack={"rocm_version": "6.4.1", "hip_version": "6.4"} if spec_id == "mi300x" else
                    {"cuda_version": "12.8"})


@pytest.fixture
def run_files(tmp_path):
    """Side A: three MI300X runs (one product name carries an HTML payload); side B: three H100 runs."""
    files = {}
    for side, spec_id, kernel, serving in (("a", "mi300x", 1.0, 1.0), ("b", "h100-sxm", 1.5, 1.2)):
        docs = [_run(spec_id, kernel, serving, f"run-{side}{i}", i + 1 + 3 * (side == "b"),
                     product=PAYLOAD if side == "a" else None) for i in range(3)]
        path = tmp_path / f"{side}.json"
        path.write_text(json.dumps(docs))
        files[side] = str(path)
    return files


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


OVERFLOW_JS = """() => {
  const W = document.documentElement.clientWidth, bad = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('#js-plotly-tester')) continue;       // plotly's off-screen text measurer
    const r = el.getBoundingClientRect();
    if (r.width > 0 && (r.right > W + 1 || r.left < -1))     // SVG's className is an object: read the attribute
      bad.push(el.tagName + ' ' + (el.id || el.getAttribute('class') || '') + ' in #' +
               ((el.closest('section') || {}).id || '?') + ' ' + (el.textContent || '').slice(0, 40));
  }
  return {width: W, scroll: document.documentElement.scrollWidth, bad: bad.slice(0, 20)};
}"""

# Decodes a screenshot in the browser and counts the pixels of a colour inside a rectangle: the
# test looks at what was painted, not only at the DOM.
PIXELS_JS = """async ([png, rect, rgb]) => {
  const img = new Image();
  img.src = 'data:image/png;base64,' + png;
  await img.decode();
  const c = document.createElement('canvas');
  c.width = img.width; c.height = img.height;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const d = g.getImageData(rect.x, rect.y, rect.width, rect.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4)
    if (Math.abs(d[i] - rgb[0]) < 24 && Math.abs(d[i + 1] - rgb[1]) < 24 && Math.abs(d[i + 2] - rgb[2]) < 24) n++;
  return n;
}"""


def _screenshot_dir(tmp_path) -> str:
    """Where the screenshots go: $GPUPARITY_SCREENSHOTS to keep them, else the test's tmp dir."""
    path = os.environ.get("GPUPARITY_SCREENSHOTS") or str(tmp_path / "screenshots")
    os.makedirs(path, exist_ok=True)
    return path


def test_report_in_chromium_at_two_widths(run_files, tmp_path, tmp_db, capsys):
    playwright = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium not installed (apt-get install -y chromium)")
    out = str(tmp_path / "report.html")
    code, _, err = main_inprocess(["report", run_files["a"], run_files["b"], "-o", out, "--price", "mi300x=1.5"],
                                  capsys)
    assert code == 0, err
    html_text = open(out, encoding="utf-8").read()
    assert "<script>window.__pwned" not in html_text and "onerror=\"window" not in html_text
    charts = re.findall(r'<div id="(chart-\d+)" class="chart">', html_text)
    assert len(charts) == 7         # forest, normalised, roofline, GEMM by dtype, serving: total, output, cost
    shots = _screenshot_dir(tmp_path)
    errors, requests = [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for width in WIDTHS:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            page.on("request", lambda r: requests.append(r.url))
            page.set_content(html_text, wait_until="load")
            # every chart drawn: an SVG with painted points, not an empty box
            page.wait_for_function(
                "ids => ids.every(id => document.querySelector('#' + id + ' .main-svg')"
                " && document.querySelectorAll('#' + id + ' .point').length > 0)", arg=charts, timeout=30000)
            page.wait_for_timeout(300)                       # responsive relayout after the first paint
            headline = page.locator("#headline").inner_text()
            assert HEADLINE.match(headline), headline
            layout = page.evaluate(OVERFLOW_JS)
            assert layout["scroll"] <= layout["width"] and not layout["bad"], (width, layout)
            for cid in charts:
                box = page.locator(f"#{cid}").bounding_box()
                assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (cid, box)
            forest = page.locator("#chart-0")
            assert forest.locator(".ytick text").filter(has_text="kernel: geomean of 5").count() == 1
            assert forest.locator(".ytick text").filter(has_text="gemm m=n=k=4096 bf16").count() == 1
            assert page.locator("#chart-0 .xtick text").filter(has_text=re.compile(r"^1x$")).count() == 1
            assert page.locator("#chart-2 .textpoint").count() >= 6         # roofline points are named
            assert page.locator("#results ~ table td.inconclusive").filter(has_text="(unstable)").count() == 1
            png = page.screenshot(full_page=True)
            with open(os.path.join(shots, f"report-{width}.png"), "wb") as fh:
                fh.write(png)
            shot_w, shot_h = _png_size(png)
            assert shot_w == width and shot_h > 3000         # nothing wider than the window
            rect = page.locator("#chart-0").bounding_box()
            scroll_y = page.evaluate("window.scrollY")
            rect = {"x": int(rect["x"]), "y": int(rect["y"] + scroll_y), "width": int(rect["width"]),
                    "height": int(rect["height"])}
            faster = page.evaluate(PIXELS_JS, [base64.b64encode(png).decode(), rect, [0x2C, 0xA0, 0x2C]])
            parity = page.evaluate(PIXELS_JS, [base64.b64encode(png).decode(), rect, [0x17, 0xBE, 0xCF]])
            assert faster > 200 and parity > 50, (faster, parity)   # green points and the model's parity mark
            if width == WIDTHS[0]:
                page.evaluate("Plotly.Fx.hover('chart-0', [{curveNumber: 0, pointNumber: 0}])")
                assert page.locator("#chart-0 .hoverlayer .hovertext").count() >= 1
                pwned = page.evaluate("[typeof window.__pwned, typeof window.__pwned2]")
                product = page.locator("#platforms + table td").nth(1).inner_text()
                failed_reason = page.get_by_text("<b>kernel</b> crashed").count()
                latency = page.locator("#serving ~ details table").first.inner_text()
                fp = page.locator("#fingerprints + p + table").inner_text()
            page.close()
        browser.close()
    assert not errors, errors
    assert all(u.startswith(("data:", "about:")) for u in requests), requests
    assert pwned == ["undefined", "undefined"]
    assert "<script>window.__pwned = 1</script>" in product and "<img src=x" in product
    assert failed_reason == 2                      # failed on both sides, listed as text
    assert "TTFT" in latency and "p99" in latency and "E2EL" in latency
    assert "rocm_version\t6.4.1" in fp and "12.8" in fp and "spec.memory_gb" not in fp   # datasheet: folded


def test_report_sections_without_data_are_left_out(run_files, tmp_path, tmp_db, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = main_inprocess(["report", run_files["a"], run_files["b"], "-o", "-", "--no-claims"], capsys)
    assert code == 0, err
    assert out.startswith("<!DOCTYPE html>") and not os.path.exists(tmp_path / "-")    # '-' is stdout
    assert 'id="claims"' not in out and ">Claims<" not in out       # --no-claims: no empty heading
    assert "<h3>Per dollar</h3>" in out                              # prices known for both
    # nothing measured power on either side: the per-watt table is the datasheet TDP, said so
    assert "(tdp)" in out
    # one side only: no comparison sections at all
    code, out, err = main_inprocess(["report", run_files["b"], "-o", "-", "--no-claims"], capsys)
    assert code == 0, err
    assert '<h2 id="results">' not in out and '<h2 id="forest">' not in out and "<h3>Per dollar</h3>" not in out
    assert '<h2 id="roofline">' in out and "One platform" in out


def test_report_markdown_headline_and_claims_failure(run_files, tmp_path, tmp_db, capsys, monkeypatch):
    from gpuparity.evidence import claims

    def boom(store, claims_file=None, **kw):
        raise RuntimeError("claims file unreadable")

    from gpuparity.results.store import Store

    Store(tmp_db).close()                          # claims read a store: report never creates one
    monkeypatch.setattr(claims, "evaluate_claims", boom)
    monkeypatch.chdir(tmp_path)
    code, out, err = main_inprocess(["report", run_files["a"], run_files["b"], "--format", "markdown", "--claims"],
                                    capsys)
    assert code == 0, err                          # markdown goes to stdout when -o is not given
    first = next(line for line in out.splitlines() if line.startswith("**"))
    assert HEADLINE.match(re.sub(r"\\(.)", r"\1", first.strip("*"))), first     # as rendered: escapes gone
    assert "claims not evaluated: RuntimeError: claims file unreadable" in out
    assert "### Geometric means" in out and "| serving |" in out
    assert "\\<script\\>" in out and "<script>" not in out
    assert "### Serving at equal interactivity" in out
    serving = out[out.index("### Serving: A (mi300x)"):]
    assert "| load | completed | failed | output tok/s/GPU |" in serving and "| c=64 | 512 | 0 |" in serving


def test_report_claims_with_reasoning_and_bad_format(run_files, tmp_path, tmp_db, capsys, monkeypatch):
    from gpuparity.evidence import claims

    def fake(store, claims_file=None, **kw):
        return [{"id": "c1", "text": "MI300X <b>beats</b> H100", "verdict": "untested",
                 "reasoning": "no MI300X FP4 rows: CDNA3 has no FP4 unit", "evidence": [],
                 "command": "gpuparity run gemm --dtype fp4",
                 "rows": [{"workload": "gemm", "ratio": 1.25, "verdict": "faster"}]}]

    from gpuparity.results.store import Store

    Store(tmp_db).close()                          # claims read a store: report never creates one
    monkeypatch.setattr(claims, "evaluate_claims", fake)
    out_file = str(tmp_path / "c.html")
    code, _, err = main_inprocess(["report", run_files["a"], run_files["b"], "-o", out_file, "--claims"], capsys)
    assert code == 0, err
    text = open(out_file, encoding="utf-8").read()
    # after the results, collapsed under their own heading
    assert text.index('id="results"') < text.index('<h2 id="claims">') < text.index('<details id="claims-body">')
    assert "no MI300X FP4 rows: CDNA3 has no FP4 unit" in text and "MI300X &lt;b&gt;beats&lt;/b&gt; H100" in text
    assert "1 row behind it" in text and '<td class="faster">faster</td>' in text
    code, _, err = main_inprocess(["report", run_files["a"], "-o", out_file, "--format", "pdf"], capsys)
    assert code == 2 and "'pdf' is not one of 'html', 'markdown'" in err


def test_report_from_store_filters(tmp_path, tmp_db, capsys):
    from gpuparity.results.store import Store

    with Store(tmp_db) as s:
        s.save_run(_run("mi300x", 1.0, 1.0, "run-a", 1))
        s.save_run(_run("h100-sxm", 0.5, 0.5, "run-b", 2))
    out = str(tmp_path / "s.html")
    code, _, err = main_inprocess(["report", "gpu=mi300x", "--gpu-b", "h100-sxm", "-o", out, "--no-claims"], capsys)
    assert code == 0, err
    text = open(out, encoding="utf-8").read()
    assert len(re.findall(r'class="chart"', text)) == 7     # 4 + serving: total, output, cost (B's price)
    assert '<td class="slower">slower</td>' in text and "B is 0.50x A on kernels" in text


def test_script_json_cannot_close_the_script():
    from gpuparity.report.html import _script_json

    text = _script_json({"name": "</script><script>alert(1)</script>", "x": "a & b \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text)["name"].startswith("</script>")


# -- the pieces -------------------------------------------------------------------------------
def _doc(rows: list[dict], geomean: dict, **extra) -> dict:
    return {"rows": rows, "geomean": geomean, "tolerance": 0.05, **extra}


def _row(verdict: str, **kw) -> dict:
    return {"workload": "gemm", "params": {}, "dtype": "bf16", "verdict": verdict, "ratio": 1.0, **kw}


def test_headline_sentence_per_category_and_trials():
    from gpuparity.comparison.headline import headline

    geo = {"kernel": {"ratio": 1.8, "ci_low": 1.6, "ci_high": 2.0, "verdict": "faster", "n": 4},
           "model": {"ratio": 1.01, "ci_low": 0.98, "ci_high": 1.03, "verdict": "parity", "n": 2},
           "serving": {"ratio": 0.5, "ci_low": 0.3, "ci_high": 1.2, "verdict": "inconclusive", "n": 3},
           "all": {"ratio": 1.2, "ci_low": 1.0, "ci_high": 1.3, "verdict": "inconclusive", "n": 9}}
    rows = [_row("faster", a_trials=3, b_trials=3)] * 4 + [_row("parity", a_trials=3, b_trials=3)] * 2
    h = headline(_doc(rows, geo))
    assert h["text"] == ("B is 1.80x A on kernels [1.60, 2.00]: faster; on models 1.01x [0.98, 1.03]: parity; "
                         "on serving 0.50x [0.30, 1.20]: inconclusive; 3 trials a side.")
    assert h["counts"] == {"faster": 4, "parity": 2} and not h["aa"]
    # unequal trials; runs when the document has no trial counts; A/A
    rows = [_row("faster", a_trials=3, b_trials=1)]
    assert headline(_doc(rows, {"kernel": geo["kernel"]}))["trials"] == "3 trials on A, 1 trial on B"
    rows = [_row("faster", a_runs=1, b_runs=1), _row("faster", a_runs=2, b_runs=1)]
    assert headline(_doc(rows, {}))["text"] == "B and A share 2 results, none with a confidence interval; " \
                                               "1-2 runs on A, 1 run on B."
    parity_first = {"model": geo["model"]}
    h = headline(_doc([], parity_first, aa={"identical": True, "differences": []}))
    assert h["text"].startswith("B is 1.01x A on models [0.98, 1.03]: parity") and h["aa"]
    assert headline(_doc([], {"kernel": {**geo["kernel"], "ratio": 123.0, "ci_low": 100.0, "ci_high": 150.0}})
                    )["text"].startswith("B is 123x A on kernels [100, 150]: faster")


def test_headline_uses_adjusted_counts_contention_scope_and_labels():
    """The fields the comparison adds (counts with their method, contended sides, scope, each side's
    run spread) reach the headline when present; documents without them read as before."""
    from gpuparity.comparison.headline import counts_text, headline

    geo = {"kernel": {"ratio": 0.58, "ci_low": 0.44, "ci_high": 0.76, "verdict": "slower", "n": 3},
           "model": {"ratio": 0.55, "ci_low": 0.34, "ci_high": 0.89, "verdict": "inconclusive", "n": 2}}
    rows = [_row("slower", a_trials=3, b_trials=3)] * 3 + [_row("inconclusive", a_trials=3, b_trials=3)] * 2
    sides = {"a": {"labels": ["aa-A1"]}, "b": {"labels": ["aa-A2"]}}
    plain = headline(_doc(rows, geo, sides=sides))
    assert plain["text"] == ("B (aa-A2) is 0.58x A (aa-A1) on kernels [0.44, 0.76]: slower; on models 0.55x "
                             "[0.34, 0.89]: inconclusive; 3 trials a side.")
    assert counts_text(plain) == "5 results compared: 3 slower, 2 inconclusive"
    doc = _doc(rows, geo, sides={"a": {"labels": ["x", "y"]}, "b": {}},
               counts={"faster": 0, "slower": 1, "parity": 0, "inconclusive": 4, "method": "Holm-adjusted"},
               contended=[{"side": "B", "reasons": ["other processes used 80% of the CPUs"]}],
               scope="Each side is one box: its figures speak for that box, not for the product.")
    h = headline(doc)
    assert h["text"].startswith("B is 0.58x A on kernels")               # two labels on A: no side title
    assert h["text"].endswith("Side B ran on a busy machine (other processes used 80% of the CPUs): no faster "
                              "or slower verdict is given.")
    assert counts_text(h) == "5 results compared: 1 slower, 4 inconclusive (Holm-adjusted)"
    assert h["scope"].startswith("Each side is one box")


def test_compare_and_report_show_the_comparison_extras(run_files, tmp_path, tmp_db, capsys, monkeypatch):
    """compare's terminal output, the HTML report and its markdown say which side was contended,
    the counts' method, the scope and each side's run spread, from the comparison document."""
    from gpuparity.comparison import compare as compare_mod

    real = compare_mod.compare_sides

    def with_extras(*args, **kwargs):
        doc = real(*args, **kwargs)
        doc.update(counts={"faster": 2, "slower": 0, "parity": 1, "inconclusive": 3, "method": "BH-adjusted"},
                   contended=[{"side": "A", "reasons": ["load 9.1 on 8 CPUs"]}], scope="One box a side.")
        doc["sides"]["a"]["run_spread"] = "from 4 earlier runs of MI300X"
        return doc

    monkeypatch.setattr(compare_mod, "compare_sides", with_extras)
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = main_inprocess(["compare", run_files["a"], run_files["b"]], capsys)
    assert code == 0, err
    text = " ".join(out.split())
    assert "Side A ran on a busy machine (load 9.1 on 8 CPUs): no faster or slower verdict is given." in text
    assert "(BH-adjusted)" in text and "One box a side." in text and "run spread: from 4 earlier runs" in text
    code, html_text, err = main_inprocess(["report", run_files["a"], run_files["b"], "-o", "-"], capsys)
    assert code == 0, err
    assert '<ul class="warn" id="contended"><li>Side A ran on a busy machine' in html_text
    assert "BH-adjusted" in html_text and '<p id="scope">One box a side.</p>' in html_text
    assert "from 4 earlier runs of MI300X" in html_text
    code, md, err = main_inprocess(["report", run_files["a"], run_files["b"], "-f", "markdown"], capsys)
    assert code == 0, err
    assert "no faster or slower verdict is given" in md and "(BH-adjusted)" in md and "| run-to-run spread |" in md


def test_short_labels_name_what_varies():
    from gpuparity.report.plots import short_labels

    rows = [{"workload": "gemm", "params": {"m": 4096, "n": 4096, "k": 4096, "layout": "nt"}, "dtype": "bf16"},
            {"workload": "gemm", "params": {"m": 8192, "n": 8192, "k": 8192, "layout": "nt"}, "dtype": "fp8"},
            {"workload": "memory", "params": {"op": "copy"}, "dtype": "fp32"},
            {"workload": "llm", "params": {"model": "x" * 80}, "dtype": "bf16"},
            {"workload": "llm", "params": {"model": "<b>y</b>"}, "dtype": "bf16"},
            {"workload": "memory", "params": {"op": "copy"}, "dtype": "fp32"}]
    labels = short_labels(rows)
    assert labels[:2] == ["gemm m=n=k=4096 bf16", "gemm m=n=k=8192 fp8"]          # layout is constant: left out
    assert labels[2] == "memory #1" and labels[5] == "memory #2"                   # same twice: numbered
    assert len(labels[3]) <= 44 and labels[3].endswith("…")
    assert labels[4] == "llm model=&lt;b&gt;y&lt;/b&gt;"                            # escaped for plotly


def test_fingerprint_diff_platform_first_datasheet_folded():
    from gpuparity.report.fingerprint import diff, flatten

    a = {"product": "MI300X", "torch_version": "2.6.0", "env": ["HIP_VISIBLE_DEVICES=0"], "spec": {"memory_gb": 192},
         "cpu": {"cores": 64}, "driver_version": None}
    b = {"product": "H100", "torch_version": "2.6.0", "env": [], "spec": {"memory_gb": 80}, "cpu": {"cores": 64},
         "nccl_version": "2.21"}
    d = diff(a, b)
    assert d["different"] == [("product", "MI300X", "H100"), ("env", "HIP_VISIBLE_DEVICES=0", ""),
                              ("nccl_version", "", "2.21")]
    assert d["datasheet"] == [("spec.memory_gb", "192", "80")]
    assert ("torch_version", "2.6.0") in d["same"] and ("cpu.cores", "64") in d["same"]
    assert flatten({"a": {"b": [{"c": 1}]}}) == {"a.b": '[{"c":1}]'}
    assert diff(a, a)["different"] == [] and diff(a, a)["datasheet"] == []


def test_serving_points_read_both_layouts():
    from gpuparity.report.serving import curves, latency, latency_stats, point

    new = _serving_point(4, 1.0, 1)
    p = point(new)
    assert p["load"] == "c=4" and p["completed"] == 32 and p["failed"] == 0
    assert list(p["latency"]["TTFT"]) == ["mean", "median", "std", "p90", "p99"]
    assert p["goodput"] == "2.8 req/s (90%) within TTFT <= 500 ms"
    assert p["trials"] == 1
    old = {"ttft_mean_s": 0.1, "ttft_p50_s": 0.08, "ttft_p99_s": 0.3, "e2e_p50_s": 2.0, "tpot_p90_s": None,
           "goodput": {"requests_per_s": 1.5, "fraction": 0.5, "slo_tpot_ms": 50.0}}
    assert latency(old, "ttft") == {"mean": 100.0, "median": 80.0, "p99": 300.0}
    assert latency(old, "e2el") == {"median": 2000.0}
    assert point({"category": "serving", "info": {"serving": old}})["goodput"] == "1.5 req/s (50%) within TPOT <= 50 ms"
    rate = make_result("serving", {"request_rate": "inf", "max_concurrency": 16}, [1.0], dtype=None,
                       category="serving", info={"serving": {"errors": 2, "timeouts": 1}})
    assert point(rate)["load"] == "rate=inf (c<=16)" and point(rate)["failed"] == 3
    assert point(make_result("gemm", {"m": 1}, [1.0])) is None
    by_curve = curves([_serving_point(c, 1.0, c) for c in (16, 1, 4)] + [rate])
    assert [q["load"] for q in by_curve["llama-8b in=1024 out=256"]] == ["c=1", "c=4", "c=16"]
    assert latency_stats(by_curve["llama-8b in=1024 out=256"]) == ["mean", "median", "std", "p90", "p99"]
    unchecked = dict(new, flags=["unverified_tokens"])     # the server's counts: every label says so
    assert point(unchecked)["load"] == "c=4 (unverified)" and point(unchecked)["unverified"]
    assert not p["unverified"]


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                    max_size=3), max_leaves=12)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.dictionaries(st.sampled_from(["ttft_ms", "tpot_ms", "e2el_ms", "ttft_p50_s", "e2e_p99_s", "goodput",
                                        "slos", "completed", "failed", "errors", "interactivity"]), JSONISH),
       st.dictionaries(st.sampled_from(["concurrency", "request_rate", "max_concurrency", "x"]), JSONISH))
def test_serving_summary_reader_never_raises(summary, params):
    from gpuparity.report.serving import point

    p = point({"category": "serving", "params": params, "info": {"serving": summary}})
    assert isinstance(p["load"], str)
    for lat in p["latency"].values():
        assert all(isinstance(v, float) for v in lat.values())


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=120))
def test_soft_breaks_keep_the_text(text):
    import html

    from gpuparity.report.grid import soft

    out = str(soft(text))
    assert "<" not in out.replace("<wbr>", "")
    assert html.unescape(out.replace("<wbr>", "")) == text
    assert all(len(run) <= 16 for chunk in html.unescape(out).split() for run in chunk.split("<wbr>")
               if len(chunk) > 12 and "<" not in run and ">" not in run and "&" not in run)


def test_tables_drop_empty_columns_and_cost_tables_need_both_sides():
    from gpuparity.report.grid import grid
    from gpuparity.report.tables import cost_tables

    t = grid([{"a": 1, "b": None}, {"a": 2.5, "b": ""}], [("A", lambda r: r["a"], "num"), ("B", lambda r: r["b"],
                                                                                          "text")])
    assert t["headers"] == ["A"] and t["rows"] == [[("1", "num")], [("2.5", "num")]]
    rows = [{"workload": "gemm", "params": {}, "a_per_dollar": 10.0, "b_per_dollar": None, "a_per_watt": None,
             "b_per_watt": None}]
    assert cost_tables(rows) == (None, None)
    rows[0].update(b_per_dollar=12.0, ratio_per_dollar=1.2, ci_low_per_dollar=1.1, ci_high_per_dollar=1.3,
                   verdict_per_dollar="faster")
    per_dollar, per_watt = cost_tables(rows)
    assert per_watt is None and "A $/M tokens" not in per_dollar["headers"]
    assert per_dollar["rows"][0][-1] == ("faster", "faster")


def test_forest_plot_marks_flagged_results_open():
    from gpuparity.report.plots import forest_chart

    rows = [{"workload": "gemm", "category": "kernel", "params": {"m": m}, "dtype": "bf16", "ratio": 1.3,
             "ci_low": 1.2, "ci_high": 1.4, "verdict": "faster", "flags": flags}
            for m, flags in ((1, []), (2, ["unstable"]))]
    geo = {"kernel": {"ratio": 1.3, "ci_low": 1.25, "ci_high": 1.35, "verdict": "faster", "n": 2}}
    fig = forest_chart({"rows": rows, "geomean": geo, "tolerance": 0.05})
    points, diamonds = fig.data
    assert list(points.marker.symbol) == ["circle", "circle-open"] and list(diamonds.marker.symbol) == ["diamond"]
    assert list(fig.layout.yaxis.ticktext) == ["<b>kernel: geomean of 2</b>", "gemm m=1", "gemm m=2"]
    assert "unstable" in points.customdata[1][2]


def test_forest_plot_keeps_the_largest_differences_and_a_log_axis():
    from gpuparity.report.plots import forest_chart

    rows = [{"workload": "gemm", "category": "kernel", "params": {"i": i}, "dtype": "bf16",
             "ratio": float(np.exp((i - 100) / 50)), "ci_low": None, "ci_high": None, "verdict": "inconclusive"}
            for i in range(200)]
    fig = forest_chart({"rows": rows, "geomean": {}, "tolerance": 0.05}, limit=40)
    assert fig.layout.meta == {"shown": 40, "rows": 200} and fig.layout.xaxis.type == "log"
    shown = sorted(x for trace in fig.data for x in trace.x)
    assert shown[0] == pytest.approx(np.exp(-2)) and shown[-1] == pytest.approx(np.exp(99 / 50))
    assert list(fig.layout.xaxis.tickvals) == [0.2, 0.5, 1, 2, 5]       # 1-2-5 when the fine set is too dense


# -- one run: every workload's section, every ok result, skipped cases, machine state -----------
def _quick_like_run(run_id: str = "one-1", label: str | None = "box-1") -> dict:
    """A CPU run with the quick suite's workloads (and a user's own), skipped cases and a busy machine."""
    spec = {"id": "cpu", "fp32_tflops": 0.25, "bf16_tflops": 0.55, "estimated": True}

    def res(workload, params, value, unit="TFLOP/s", category="kernel", dtype="bf16", pct=None, seed=0,
            work=None, info=None, mfu=None):
        """A result as `run` states it: its rates, % of peak and the workload's own figures derived
        from its samples, work and info by the functions run uses (pct: whether it has a datasheet
        peak; mfu: the FLOP per token that gives this MFU at its figure)."""
        r = make_result(workload, params, noisy(value, 0.02, 9, seed), dtype=dtype, unit=unit, category=category)
        kind = {"TFLOP/s": "flop", "GB/s": "bytes", "tokens/s": "tokens"}[unit]
        r["work"] = dict(work or {kind: 1e9})
        r["info"].update(info or {})
        if pct is not None:
            r["info"]["peak_kind"] = f"flop:{dtype}"
        if mfu is not None:         # MFU = figure x FLOP per token / the dtype's peak
            per_token = mfu * spec[f"{dtype}_tflops"] * 1e12 / r["metric"]["value"]
            r["work"]["flop"] = r["work"]["tokens"] * per_token
            r["info"]["peak_kind"] = f"flop:{dtype}|{per_token!r}"
        scale = {"flop": 1e12, "bytes": 1e9, "tokens": 1.0}[kind]
        r["samples"] = [r["work"][kind] / (x * scale) for x in r["metric"]["samples"]]    # s per invocation
        derive_rates(r, spec)
        fill_workload_figures(r)
        return r

    results = [res("gemm", {"m": m, "n": m, "k": m, "layout": "nn"}, v, dtype=dt, pct=p, seed=i,
                   work={"flop": 2.0 * m**3})         # the work its params give (import checks it)
               for i, (m, dt, v, p) in enumerate([(512, "fp32", 0.02, 8.0), (512, "bf16", 0.17, 31.0),
                                                  (256, "fp8", 0.04, None)])]
    results.append(make_result("gemm", {"m": 512, "n": 512, "k": 512, "layout": "nn"}, [], dtype="tf32",
                               status="skipped", reason="TF32 is a GPU tensor-core mode; a CPU has no TF32 units"))
    results += [res("memory", {"op": op}, v, unit="GB/s", dtype="fp32", seed=10 + i)
                for i, (op, v) in enumerate([("copy", 6.7), ("triad", 7.4)])]
    results.append(make_result("memory", {"op": "h2d"}, [], dtype="fp32", status="skipped",
                               reason="host<->device copies need a GPU"))
    results += [res("attention", {"seq": 256, "pass": p}, v, pct=q, seed=20 + i)
                for i, (p, v, q) in enumerate([("fwd", 0.08, 14.8), ("bwd", 0.007, 1.3)])]
    results.append(res("moe", {"preset": "mixtral-8x7b", "tokens": 64}, 37045.0, unit="tokens/s", seed=30,
                       work={"tokens": 64, "flop": 64 * 0.0256e12 / 37045.0}))
    results += [res("conv", {"net": "resnet50", "channels_last": cl, "pass": "fwd"}, v, pct=q, seed=40 + i)
                for i, (cl, v, q) in enumerate([(True, 0.0077, 1.4), (False, 0.0030, 0.55)])]
    results.append(res("llm", {"model": "smollm2", "batch": 1, "input_len": 32, "output_len": 16}, 0.94,
                       unit="tokens/s", category="model", dtype="fp32", seed=50, work={"tokens": 15},
                       info={"prefill_samples": [1.68] * 9}))
    results.append(res("training", {"hidden": 128, "seq": 128}, 3108.0, unit="tokens/s", category="model",
                       dtype="fp32", seed=60, work={"tokens": 256}, mfu=0.0705))
    results.append(res("collectives", {"op": "all_reduce", "size": 2 ** 20}, 1.9, unit="GB/s", category="comm",
                       dtype="fp32", seed=70, info={"world_size": 2, "size_bytes": 1e9}))
    results.append(res("my_kernel", {"n": 7}, 42.0, unit="GB/s", dtype="fp32", seed=80))
    results.append(make_result("attention", {"seq": 4096, "pass": "fwd"}, [], status="failed",
                               reason="RuntimeError: out of memory"))
    doc = make_run(results, spec_id="cpu", run_id=run_id)
    doc["fingerprint"]["spec"] = spec
    doc["label"] = label
    doc["machine"] = {"start": {"loadavg": [1.0, 0.5, 0.2], "cpus": 2, "other_cpu_share": 0.6, "governors": []},
                      "end": {"loadavg": [2.0, 1.0, 0.5], "cpus": 2, "other_cpu_share": 0.1, "governors": []}}
    doc["plan"], doc["suite"], doc["duration_s"] = {"trials": 1, "mode": "in-process"}, "quick", 180.0
    return doc


def _html_sections(html_text: str) -> dict[str, list[dict]]:
    """{workload: [row as {header: cell text}]} from the one-run report's workload sections."""
    out = {}
    for w, body in re.findall(r'<section class="workload" id="w-([^"]+)">(.*?)</section>', html_text, re.S):
        table = body[body.index("<table>"):]
        headers = re.findall(r"<th>(.*?)</th>", table)
        rows = [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
                for tr in re.findall(r"<tr>(.*?)</tr>", table, re.S)]
        out[w] = [dict(zip(headers, r, strict=True)) for r in rows if r]
    return out


def _md_sections(md: str) -> dict[str, list[str]]:
    """{section title: its table's data lines} from the markdown twin."""
    out = {}
    for title, body in re.findall(r"^### (.+?)\n(.*?)(?=^### |\Z)", md, re.S | re.M):
        out[title] = [line for line in body.splitlines() if line.startswith("| ") and not line.startswith("| case")]
    return out


def assert_every_ok_result_shown(doc: dict, html_text: str, md: str) -> None:
    """Every ok result of the run is a row of its workload's section (HTML and markdown), with its
    figure and dtype; every skipped or failed one is in the skipped table with its reason."""
    from gpuparity.report.markdown import cell
    from gpuparity.report.onerun import TITLES
    from gpuparity.report.tables import _num

    ok = [r for r in doc["results"] if r["status"] == "ok"]
    html_secs, md_secs = _html_sections(html_text), _md_sections(md)
    for w in {r["workload"] for r in ok}:
        mine = [r for r in ok if r["workload"] == w]
        rows = html_secs[w]
        assert sorted((row["figure"], row.get("dtype", mine[0]["dtype"] or "")) for row in rows) == sorted(
            (_num(r["metric"]["value"]), r["dtype"] or "") for r in mine), w
        lines = md_secs[cell(TITLES.get(w, w))]         # headings are escaped markdown
        assert len(lines) == len(mine), (w, lines)
        for r in mine:
            assert any(f"| {cell(r['metric']['value'])} |" in line for line in lines), (w, r["metric"]["value"])
    skipped = html_text[html_text.index('<h2 id="skipped">'):html_text.index('<h2 id="fingerprints">')]
    skipped = skipped.replace("<wbr>", "")
    for r in doc["results"]:
        if r["status"] != "ok":
            assert str(escape_html(r["reason"])) in skipped and cell(r["reason"]) in md, r["reason"]


def escape_html(text):
    from markupsafe import escape

    return escape(text)


def test_one_run_report_has_every_workload_and_every_ok_result(tmp_path, tmp_db, capsys, monkeypatch):
    from gpuparity.evidence import claims

    def boom(*a, **k):
        raise AssertionError("the default report must not read claims")

    monkeypatch.setattr(claims, "evaluate_claims", boom)
    doc = _quick_like_run()
    path = tmp_path / "one.json"
    path.write_text(json.dumps(doc))
    code, html_text, err = main_inprocess(["report", str(path), "-o", "-"], capsys)
    assert code == 0, err
    code, md, err = main_inprocess(["report", str(path), "-f", "markdown"], capsys)
    assert code == 0, err
    assert_every_ok_result_shown(doc, html_text, md)
    workloads = ["gemm", "memory", "attention", "moe", "conv", "llm", "training", "collectives", "my_kernel"]
    found = re.findall(r'<section class="workload" id="w-([^"]+)">', html_text)
    assert found == workloads                                   # the suite's order, a user's own last
    assert "<title>gpuparity: box-1: Intel" not in html_text   # make_run's cpu spec has no product
    assert "<title>gpuparity: box-1:" in html_text              # the run's label names the report
    # the headline: the best per group against the datasheet, linked to its section
    highlights = re.findall(r'<li><a href="#w-([^"]+)">(.*?)</a></li>', html_text)
    assert [w for w, _ in highlights].count("gemm") == 3 and "attention" in dict(highlights)
    first = highlights[0][1]                                    # bf16 leads the GEMM dtypes
    assert first.startswith("bf16 GEMM 0.1") and re.search(r"= 3\d(\.\d)?% of peak \(estimated\)", first), first
    assert any(re.match(r"training [23],\d{3} tokens/s, MFU 7.05% \(estimated peak\)$", t) for _, t in highlights)
    assert any(t.startswith("LLM decode 0.9") and "TTFT 1,680 ms" in t for _, t in highlights)
    assert "machine busy at start: other processes used 60% of the CPUs" in html_text
    assert 'id="claims"' not in html_text and "### Claims" not in md
    assert "**What this machine reached against its datasheet:**" in md and "### Machine state" in md
    # the section tables carry the workload's own figures
    secs = _html_sections(html_text)
    assert secs["llm"][0]["TTFT ms"] == "1,680" and secs["training"][0]["MFU %"] == "7.05"
    assert float(secs["collectives"][0]["bus GB/s"]) == pytest.approx(1.9, rel=0.01)     # derived from its times
    assert {r["case"] for r in secs["conv"]} == {"channels_last=True", "channels_last=False"}


def test_training_chart_labels_each_bar_with_its_mfu():
    """The training chart draws tokens/s; each bar is labelled with its MFU (the share of the
    datasheet FLOP/s it reached; the table and headline say where that peak is an estimate); other
    charts keep % of peak."""
    from gpuparity.report import context, html, onerun

    ctx = context.build([_quick_like_run()])
    charts = {c["section"]: c["fig"] for c in ctx["charts"] if c.get("section")}
    assert list(charts["training"].data[1].text) == ["MFU 7.05%"]          # the label trace beside the bars
    assert "MFU 7.05%" in html.render_html(ctx)
    attention = list(charts["attention"].data[1].text)
    assert len(attention) == 2 and all(re.fullmatch(r"\d+(\.\d+)?%", x) for x in attention), attention
    gpu = {"workload": "training", "derived": {"pct_peak": 41.0, "mfu": 0.41, "mfu_estimated": False}}
    assert onerun.bar_text(gpu) == "MFU 41%" and onerun.bar_text({**gpu, "workload": "llm"}) == "41%"


@pytest.fixture(scope="module")
def quickstart_run(quick_suite_run):
    """The quickstart's run document (conftest: one quick-suite run per test session)."""
    return quick_suite_run[0]


@pytest.mark.slow
def test_quickstart_report_in_chromium(quickstart_run, tmp_path, capsys):
    """The report a new user sees first: a section (chart and table) for every workload with an ok
    result, the skipped cases with reasons, machine state; screenshots at 1400 and 800 px."""
    playwright = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium not installed (apt-get install -y chromium)")
    doc = quickstart_run
    path = tmp_path / "quick-run.json"
    path.write_text(json.dumps(doc))
    out = str(tmp_path / "report.html")
    code, _, err = main_inprocess(["report", str(path), "-o", out], capsys)
    assert code == 0, err
    html_text = open(out, encoding="utf-8").read()
    code, md, err = main_inprocess(["report", str(path), "-f", "markdown"], capsys)
    assert code == 0, err
    assert_every_ok_result_shown(doc, html_text, md)
    workloads = sorted({r["workload"] for r in doc["results"] if r["status"] == "ok"})
    not_ok = [r for r in doc["results"] if r["status"] != "ok"]
    assert {"gemm", "memory", "attention", "moe", "conv", "llm", "training"} <= set(workloads)
    shots = _screenshot_dir(tmp_path)
    errors = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for width in WIDTHS:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            page.set_content(html_text, wait_until="load")
            for w in workloads:
                section = page.locator(f"section#w-{w}")
                assert section.is_visible(), w
                assert section.locator("table tr").count() >= 2, w
                # its chart is drawn: bars painted inside an SVG
                page.wait_for_function(f"document.querySelectorAll('section#w-{w} .chart .main-svg .point')"
                                       ".length > 0", timeout=30000)
            assert page.locator("#highlights li").count() >= len(workloads)
            assert page.locator("#skipped + p + table tr").count() == len(not_ok) + 1
            assert page.locator("#machine + p + table tr").count() >= 3
            layout = page.evaluate(OVERFLOW_JS)
            assert layout["scroll"] <= layout["width"] and not layout["bad"], (width, layout)
            png = page.screenshot(full_page=True)
            with open(os.path.join(shots, f"quickstart-report-{width}.png"), "wb") as fh:
                fh.write(png)
            assert _png_size(png)[0] == width
            page.close()
        browser.close()
    assert not errors, errors


QUICK_RUN = os.path.join(os.path.dirname(__file__), "data", "quick-run-cpu.json.gz")


def test_report_of_two_quick_runs_is_light_and_draws_in_chromium(tmp_path, tmp_db, capsys):
    """Two stored quick runs (the recorded CPU quick run, the second as another platform): one
    self-contained file of at most 1.5 MB (plotly.js's basic bundle, compressed) that Chromium
    opens from disk and draws every chart of, with no request leaving the file."""
    import copy
    import gzip

    from gpuparity.results.store import Store

    playwright = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium not installed (apt-get install -y chromium)")
    with gzip.open(QUICK_RUN, "rt") as fh:
        a = json.load(fh)
    b = copy.deepcopy(a)
    b.update(run_id="quick-b", started_at="2026-12-02T00:00:00+00:00", host="box-b")
    b["fingerprint"]["product"] = "Other CPU"
    with Store(tmp_db) as s:
        s.save_run(a)
        s.save_run(b)
    out = str(tmp_path / "quick.html")
    code, _, err = main_inprocess(["report", a["run_id"], "quick-b", "-o", out], capsys)
    assert code == 0, err
    size = os.path.getsize(out)
    html_text = open(out, encoding="utf-8").read()
    assert size <= 1_500_000, size
    assert "DecompressionStream" in html_text and "plotly.js v" not in html_text      # not the full bundle inline
    charts = re.findall(r'<div id="(chart-\d+)" class="chart">', html_text)
    assert len(charts) >= 3
    errors, requests = [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        page.on("request", lambda r: requests.append(r.url))
        page.goto("file://" + out, wait_until="load")
        page.wait_for_function(
            "ids => ids.every(id => document.querySelector('#' + id + ' .main-svg')"
            " && document.querySelectorAll('#' + id + ' .point').length > 0)", arg=charts, timeout=30000)
        assert page.evaluate("typeof Plotly.newPlot") == "function"
        page.evaluate("Plotly.Fx.hover('chart-0', [{curveNumber: 0, pointNumber: 0}])")      # still interactive
        assert page.locator("#chart-0 .hoverlayer .hovertext").count() >= 1
        browser.close()
    assert not errors, errors
    assert all(u.startswith(("data:", "about:", "file:")) for u in requests), requests


def test_the_report_draws_with_the_smallest_plotly_bundle(run_files):
    """The vendored basic bundle is plotly.py's plotly.js version; the report's charts are all of
    its trace types; a chart of another type gets the full bundle instead of a blank box."""
    import base64
    import gzip

    from gpuparity.report import plotlyjs
    from gpuparity.report.context import build

    assert plotlyjs.bundle_version(basic=True) == plotlyjs.bundle_version(basic=False) != ""
    docs = {side: json.load(open(path)) for side, path in run_files.items()}
    ctx = build(docs["a"], docs["b"])
    figures = [json.loads(c["fig"].to_json()) for c in ctx["charts"]]
    assert len(figures) == 7 and plotlyjs.trace_types(figures) <= plotlyjs.BASIC_TRACES

    def unpacked(script: str) -> str:
        return gzip.decompress(base64.b64decode(script.split('atob("')[1].split('"')[0])).decode()

    basic = unpacked(plotlyjs.script(figures))
    assert basic.startswith("/**\n* plotly.js (basic - minified) v") and "window.Plotly = Plotly" in basic
    full = unpacked(plotlyjs.script(figures + [{"data": [{"type": "heatmap", "z": [[1]]}]}]))
    assert full.startswith("/**\n* plotly.js v") and len(full) > 3 * len(basic)


def test_bar_labels_wrap_and_never_merge_two_cases():
    """Three conv cases alike in their first 60 characters were drawn as one bar (plotly stacks a
    category's bars): labels wrap at spaces instead of cutting, and two alike are told apart."""
    from gpuparity.report.plots import bar_labels

    head = "net=resnet50 layer=res2_3x3 cin=cout=64 hw=56"
    cases = [f"{head} channels_last=True pass=fwd", f"{head} channels_last=True pass=bwd",
             f"{head} channels_last=False pass=fwd", "<b>x</b>", "same", "same"]
    labels = bar_labels(cases)
    assert len(set(labels)) == len(labels)
    assert labels[0] == "net=resnet50 layer=res2_3x3 cin=cout=64<br>hw=56 channels_last=True pass=fwd"
    assert labels[1].endswith("pass=bwd")
    assert labels[3] == "&lt;b&gt;x&lt;/b&gt;" and labels[5] == "same (2)"
    long = bar_labels(["word " * 60])[0]
    assert long.count("<br>") == 2 and long.endswith("…") and all(len(x) <= 44 for x in long.split("<br>"))
