"""The port report a person acts on: the score and "needs a human" count, hazard severity,
--examine statistics (JSON and CSV), the same numbers in every output, and the HTML page
in Chromium at two widths."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from test_port_cli import SAMPLES, port_cli

from gpuparity.port import report as reporting
from gpuparity.port.run import port

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

_PTX = """#include <cuda_runtime.h>
__global__ void lane(unsigned* out) {
    unsigned l;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
    out[threadIdx.x] = l;
}
void run(unsigned* d) { lane<<<1, 64>>>(d); cudaDeviceSynchronize(); }
"""


def test_build_blocking_hazard_keeps_a_file_below_100_percent(tmp_path):
    (tmp_path / "ptx.cu").write_text(_PTX)
    shutil.copy(SAMPLES / "inline_ptx.cu", tmp_path / "guarded.cu")  # PTX under #if __CUDA_ARCH__
    shutil.copytree(SAMPLES / "common", tmp_path / "common")
    r = port(tmp_path)
    files = {f.rel: f for f in r.files}
    ptx, guarded = files["ptx.cu"], files["guarded.cu"]
    assert ptx.score.unsupported == 0 and ptx.score.blocking == 1
    assert ptx.score.value == pytest.approx(ptx.score.supported / (ptx.score.supported + 1))
    assert ptx.score.value < 1.0
    assert ptx.score.percent() != "100.0%"
    assert [h.severity for h in ptx.hazards] == ["blocks build"]
    # the guarded asm builds (AMD compiles the fallback): it costs performance, not the score
    assert {h.severity for h in guarded.hazards if h.kind == "inline_asm"} == {"performance"}
    assert guarded.score.value == 1.0 and guarded.needs_human == len(guarded.hazards)
    d = reporting.to_dict(r)["summary"]
    assert d["blocking"] == 1 and d["items"] == d["uses"] + 1
    assert d["needs_human"] == sum(d["hazards_by_severity"].values()) + d["not_converted"]


def test_severity_and_needs_human_on_the_samples():
    r = port(SAMPLES)
    d = reporting.to_dict(r)
    sev = d["summary"]["hazards_by_severity"]
    assert sev["blocks build"] > 0 and sev["wrong results"] > 0 and sev["performance"] > 0
    assert sum(sev.values()) == d["summary"]["hazards"] == len(d["hazards"])
    ranks = [("blocks build", "wrong results", "performance").index(h["severity"]) for h in d["hazards"]]
    assert ranks == sorted(ranks)  # worst first
    planted = next(f for f in d["files"] if f["path"] == "hazards/planted.cu")
    assert planted["score"] < 1.0 and planted["blocking"] >= 8
    assert d["summary"]["score"] == pytest.approx(d["summary"]["supported"] / d["summary"]["items"])
    headline = d["summary"]["headline"]
    assert headline.startswith(f"{d['summary']['score_text']} of the port was done automatically")
    assert f"{d['summary']['needs_human']} place(s) need a human" in headline
    assert f"{sev['blocks build']} block the build" in headline


def test_examine_writes_nothing_and_counts_by_family(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(SAMPLES, src)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    js, table = tmp_path / "r.json", tmp_path / "r.csv"
    proc = port_cli(str(src), "--examine", "--json", str(js), "--csv", str(table))
    assert proc.returncode == 0, proc.stderr
    assert not proc.stdout.startswith("---")  # no diff
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p not in (js, table)) == before
    report = json.loads(js.read_text())
    assert report["examine"] is True
    fam = report["summary"]["by_family"]
    assert fam["runtime"]["converted"] > 20 and fam["cublas"]["converted"] > 0
    assert sum(v["converted"] for v in fam.values()) == report["summary"]["supported"]
    assert sum(v["not_converted"] for v in fam.values()) == report["summary"]["not_converted"]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("examine: ") and "nothing written" in lines[0]
    runtime = next(line for line in lines if line.startswith("runtime "))
    assert runtime.split()[1:] == [str(fam["runtime"]["converted"]), str(fam["runtime"]["not_converted"])]
    rows = list(csv.DictReader(io.StringIO(table.read_text())))
    tree = {r["family"]: (int(r["converted"]), int(r["not_converted"])) for r in rows if r["file"] == "*"}
    assert tree == {k: (v["converted"], v["not_converted"]) for k, v in fam.items()}
    per_file = [r for r in rows if r["file"] == "cublas_sgemm.cu"]
    by_file = next(f for f in report["files"] if f["path"] == "cublas_sgemm.cu")["by_family"]
    assert {r["family"]: int(r["converted"]) for r in per_file} == {k: v["converted"] for k, v in by_file.items()}
    bad = port_cli(str(src), "--examine", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and bad.stderr.startswith("error: --examine writes")


def test_terminal_summary_names_severity_and_the_headline(tmp_path):
    proc = port_cli(str(SAMPLES / "hazards" / "planted.cu"), "--out", str(tmp_path / "p.cu"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1].startswith("portability score: ")
    assert "need a human" in proc.stdout.splitlines()[1]
    assert "hazard planted.cu:31: inline_asm [blocks build]" in proc.stdout
    assert "hazard planted.cu:15: launch_bounds [performance]" in proc.stdout


# ---------------------------------------------------------------- HTML in Chromium

_LONG = "very_long_identifier_without_any_break_" * 12


@pytest.fixture
def wide_report(tmp_path):
    """A tree whose report has long paths, long code and many hazards: the tables must wrap."""
    src = tmp_path / "src"
    shutil.copytree(SAMPLES, src)
    deep = src / ("a_rather_long_folder_name_" * 4) / ("and_another_one_" * 4)
    deep.mkdir(parents=True)
    (deep / f"{'kernel_file_with_a_long_name_' * 3}.cu").write_text(
        f"__global__ void k(int* o) {{ int {_LONG} = threadIdx.x & 31; o[{_LONG}] = __popc(__ballot_sync("
        f"0xffffffff, 1)); asm(\"trap;\"); cudaDeviceFlushGPUDirectRDMAWrites(0, 0); }}\n")
    js, page = tmp_path / "r.json", tmp_path / "r.html"
    proc = port_cli(str(src), "--json", str(js), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    return json.loads(js.read_text()), page


_OVERFLOW_JS = """() => {
  const width = document.documentElement.clientWidth;
  const bad = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    if (r.right > width + 1 || el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).display !== 'inline')
      bad.push(el.tagName + ': ' + (el.textContent || '').slice(0, 60));
  }
  return {bad, pageWidth: document.documentElement.scrollWidth, width};
}"""


def test_port_report_renders_without_overflow_in_chromium(wide_report, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium not installed (apt-get install -y chromium)")
    report, page_path = wide_report
    summary = report["summary"]
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for width in (1400, 800):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(page_path.as_uri())
                shot = tmp_path / f"port_report_{width}.png"  # kept in the test's tmp dir to look at
                page.screenshot(path=str(shot), full_page=True)
                assert shot.stat().st_size > 10_000
                result = page.evaluate(_OVERFLOW_JS)
                assert result["bad"] == [], (width, result["bad"][:5])
                assert result["pageWidth"] <= width
                assert page.inner_text("#score") == f"{summary['score_text']} automatic"
                assert page.inner_text("#headline") == summary["headline"]
                assert "need a human" in summary["headline"] and summary["blocking"] >= 1
                tables = page.eval_on_selector_all("table", "ts => ts.length")
                assert tables >= 5
                page.close()
        finally:
            browser.close()


def test_html_and_json_carry_the_same_numbers(wide_report):
    report, page_path = wide_report
    html = page_path.read_text()
    s = report["summary"]
    assert f"<p class='score' id='score'>{s['score_text']} automatic</p>" in html
    for severity, n in s["hazards_by_severity"].items():
        assert f"{severity}</span></td><td>{n}</td>" in html
    assert f"<td>API uses with no HIP counterpart</td><td>{s['not_converted']}</td>" in html
    for f in report["files"]:
        assert f"<td>{f['needs_human']}</td>" in html


def test_examine_csv_keeps_a_formula_like_file_name_as_text(tmp_path):
    """A file named like a spreadsheet formula is written as text in --csv (a leading ')."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "=HYPERLINK(1).cu").write_text("#include <cuda_runtime.h>\nvoid f() { cudaDeviceSynchronize(); }\n")
    table = tmp_path / "r.csv"
    proc = port_cli(str(src), "--examine", "--csv", str(table))
    assert proc.returncode == 0, proc.stderr
    files = {row["file"] for row in csv.DictReader(io.StringIO(table.read_text())) if row["file"] != "*"}
    assert files == {"'=HYPERLINK(1).cu"}
