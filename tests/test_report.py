"""report: self-contained HTML rendered in a real headless Chromium; markdown; claims section."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from test_compare import main_inprocess, make_result, make_run, noisy, serving_run

from gpuparity.platform.specs import all_specs

PAYLOAD = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned2 = 1">MI300X'
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _gemm(m: int, dtype: str, tflops: float, spec_id: str, seed: int) -> dict:
    r = make_result("gemm", {"m": m, "n": m, "k": m}, noisy(tflops, 0.01, 9, seed), dtype=dtype)
    med = r["metric"]["value"]
    r["work"] = {"flop": 2.0 * m ** 3}
    r["derived"] = {"tflops": med, "pct_peak": 100 * med / all_specs()[spec_id][f"{dtype}_tflops"]}
    return r


def _memory(op: str, gbs: float, spec_id: str, seed: int) -> dict:
    r = make_result("memory", {"op": op}, noisy(gbs, 0.01, 9, seed), dtype="fp32", unit="GB/s")
    r["work"] = {"bytes": 3 * 2 ** 28}
    r["derived"] = {"gbs": r["metric"]["value"],
                    "pct_peak": 100 * r["metric"]["value"] / (all_specs()[spec_id]["memory_bw_tbs"] * 1000)}
    return r


def _side(spec_id: str, scale: float, run_id: str, product: str | None = None) -> dict:
    results = [_gemm(m, dt, scale * base * (m / 8192) ** 0.1, spec_id, i)
               for i, (m, dt, base) in enumerate([(4096, "bf16", 600), (8192, "bf16", 650), (8192, "fp32", 60)])]
    results += [_memory("copy", scale * 4000, spec_id, 10), _memory("triad", scale * 4200, spec_id, 11)]
    results += serving_run(scale, run_id, spec_id)["results"]
    results.append(make_result("attention", {"seq": 4096}, [], status="failed", reason="<b>kernel</b> crashed"))
    return make_run(results, spec_id=spec_id, run_id=run_id, product=product)


@pytest.fixture
def run_files(tmp_path):
    files = []
    for name, doc in (("a", _side("mi300x", 1.0, "run-a", product=PAYLOAD)), ("b", _side("h100-sxm", 1.2, "run-b"))):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        files.append(str(path))
    return files


def test_report_renders_in_chromium_offline_and_escaped(run_files, tmp_path, tmp_db, capsys):
    playwright = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium not installed (apt-get install -y chromium)")
    out = str(tmp_path / "report.html")
    code, _, err = main_inprocess(["report", *run_files, "-o", out, "--price", "mi300x=1.5"], capsys)
    assert code == 0, err
    html_text = open(out, encoding="utf-8").read()
    assert "<script>window.__pwned" not in html_text and "onerror=\"window" not in html_text
    n_charts = html_text.count('class="chart"')
    assert n_charts == 5        # ratio, normalised, roofline, GEMM by dtype, serving

    errors, requests = [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        page.on("request", lambda r: requests.append(r.url))
        page.set_content(html_text, wait_until="load")
        page.wait_for_function(
            f"Array.from(document.querySelectorAll('div.chart')).filter("
            f"d => d.classList.contains('js-plotly-plot') && d.querySelector('.main-svg')).length === {n_charts}",
            timeout=30000)
        for i in range(n_charts):
            assert page.locator(f"#chart-{i} .main-svg").count() >= 1
        # bars, points and lines were drawn, not just empty axes
        assert page.locator("#chart-0 .bars .point").count() >= 5
        assert page.locator("#chart-4 .scatterlayer .trace").count() >= 4
        # interactive: a hover label appears
        page.evaluate("Plotly.Fx.hover('chart-0', [{curveNumber: 0, pointNumber: 0}])")
        assert page.locator("#chart-0 .hoverlayer .hovertext").count() >= 1
        png = page.locator("#chart-2").screenshot()
        full = page.screenshot(full_page=True)
        (tmp_path / "report.png").write_bytes(full)
        pwned = page.evaluate("[typeof window.__pwned, typeof window.__pwned2]")
        device_text = page.locator("td.device").first.inner_text()
        legend = page.locator("#chart-3 .legendtext").first.text_content()
        failed_reason = page.get_by_text("<b>kernel</b> crashed").count()
        browser.close()
    assert not errors, errors
    assert all(u.startswith(("data:", "about:")) for u in requests), requests
    assert pwned == ["undefined", "undefined"]
    assert "<script>window.__pwned = 1</script>" in device_text and "<img src=x" in device_text
    assert "<script>" in legend                      # plotly shows the name as text too
    assert failed_reason == 2                      # failed on both sides, listed as text
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000     # a drawn chart, not a blank box
    assert len(full) > 100_000


def test_report_markdown_and_claims_failure(run_files, tmp_path, tmp_db, capsys, monkeypatch):
    from gpuparity.analysis import claims

    def boom(store, claims_file=None):
        raise RuntimeError("claims file unreadable")

    monkeypatch.setattr(claims, "evaluate_claims", boom)
    code, out, err = main_inprocess(["report", *run_files, "-o", "-", "--format", "markdown"], capsys)
    assert code == 0, err
    assert "claims not evaluated: RuntimeError: claims file unreadable" in out
    assert "### Geometric means" in out and "| serving |" in out
    assert "&lt;script&gt;" in out and "<script>" not in out
    assert "### Serving at equal interactivity" in out


def test_report_claims_table_and_single_side(run_files, tmp_path, tmp_db, capsys):
    out = str(tmp_path / "one.html")
    code, _, err = main_inprocess(["report", run_files[1], "-o", out], capsys)
    assert code == 0, err
    text = open(out, encoding="utf-8").read()
    assert "<h2>Claims</h2>" in text and "claims not evaluated" not in text   # the shipped claims evaluated
    assert "Roofline" in text and "Per result" not in text
    code, _, err = main_inprocess(["report", run_files[0], "-o", out, "--format", "pdf"], capsys)
    assert code == 2 and "--format" in err


def test_script_json_cannot_close_the_script():
    from gpuparity.report.html import _script_json

    text = _script_json({"name": "</script><script>alert(1)</script>", "x": "a & b \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text)["name"].startswith("</script>")


def test_normalised_rows_round_trip_numbers():
    from gpuparity.analysis.compare import compare_runs

    out = compare_runs([_side("mi300x", 1.0, "a")], [_side("h100-sxm", 1.2, "b")])
    gemm = [r for r in out["rows"] if r["workload"] == "gemm"]
    assert all(np.isclose(r["ratio"], 1.2, rtol=0.05) for r in gemm)
    assert out["serving"] and all(p["ratio"] == pytest.approx(1.2) for p in out["serving"] if p.get("ratio"))


def test_report_from_store_filters(tmp_path, tmp_db, capsys):
    from gpuparity.results.store import Store

    with Store(tmp_db) as s:
        s.save_run(_side("mi300x", 1.0, "run-a"))
        s.save_run(_side("h100-sxm", 0.5, "run-b"))
    out = str(tmp_path / "s.html")
    code, _, err = main_inprocess(["report", "gpu=mi300x", "--gpu-b", "h100", "-o", out, "--no-claims"], capsys)
    assert code == 0, err
    text = open(out, encoding="utf-8").read()
    assert text.count('class="chart"') == 5 and "claims not evaluated: left out (--no-claims)" in text
    assert '<td class="slower">slower</td>' in text
