"""Markdown and terminal output are inert: text from documents (products, hosts, params, reasons,
titles) can neither run script in a rendered markdown page nor move a terminal's cursor or
reorder what it shows."""

from __future__ import annotations

import json
import os
import re

import pytest
from test_compare import main_inprocess, make_result, make_run, noisy

from gpuparity.results.store import Store
from gpuparity.validate import markdown_safe, terminal_safe

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
HOSTILE = ('<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> '
           '[click](javascript:window.__pwned=3) <a href="javascript:window.__pwned=4">a</a> '
           '![i](javascript:window.__pwned=5) | cell | \n# heading <iframe src="javascript:window.__pwned=6"></iframe>')
BIDI = "box\u202eevil\u2066x\u2069\u200f"


def test_terminal_safe_shows_controls_and_bidi_as_escapes():
    assert terminal_safe("a\x1b[2Jb\rc\x9bd") == "a\\x1b[2Jb\\rc\\x9bd"
    assert terminal_safe(BIDI) == "box\\u202eevil\\u2066x\\u2069\\u200f"
    assert terminal_safe("MI300X é 中 ✓") == "MI300X é 中 ✓"          # ordinary text untouched


def test_markdown_safe_leaves_no_markup():
    out = markdown_safe(HOSTILE)
    assert "\n" not in out and "<img" not in out.replace("\\<img", "")
    assert not re.search(r"(?<!\\)[\[\]|<>]", out)         # every bracket, pipe and angle escaped


def hostile_runs(tmp_path) -> tuple[str, str]:
    paths = []
    for name, centre, spec in (("a", 100.0, "mi300x"), ("b", 120.0, "h100-sxm")):
        results = [make_result("gemm", {"m": 4096, "note": HOSTILE}, noisy(centre, 0.01, 9, 1)),
                   make_result(HOSTILE.replace("\n", " ")[:150], {"m": 1}, noisy(centre, 0.01, 9, 2)),
                   make_result("attention", {"seq": 1}, [], status="failed", reason=HOSTILE)]
        doc = make_run(results, run_id=f"run-{name}", spec_id=spec, host=BIDI + HOSTILE[:40], product=HOSTILE)
        doc["label"] = (name + HOSTILE.replace("\n", " "))[:200]
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        paths.append(str(path))
    return paths[0], paths[1]


def render(markdown_text: str) -> str:
    """The markdown as a reader's renderer shows it: CommonMark with raw HTML on and GFM tables."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(markdown_text)


@pytest.fixture
def documents(tmp_path, capsys):
    a, b = hostile_runs(tmp_path)
    db = str(tmp_path / "s.db")
    for path in (a, b):
        code, _, err = main_inprocess(["import", path, "--db", db], capsys)
        assert code == 0, err
    pages = {}
    for name, args in (("compare", ["compare", a, b, "-f", "markdown"]),
                       ("report", ["report", a, b, "-f", "markdown", "-o", "-", "--no-claims", "--title", HOSTILE]),
                       ("report-one", ["report", a, "-f", "markdown", "-o", "-", "--no-claims", "--title", HOSTILE]),
                       ("trend", ["trend", "--by", "label", "--db", db, "-f", "markdown"])):
        code, out, err = main_inprocess(args, capsys)
        assert code == 0, (name, err)
        pages[name] = out
    return pages, db


def test_markdown_writers_escape_every_document_text(documents):
    pages, _ = documents
    for name, text in pages.items():
        html = render(text)
        assert "<img" not in html and "<script" not in html and "<iframe" not in html, name
        assert 'href="javascript' not in html and "<h1>" not in html, name
        assert "onerror" in html                          # the text is still there, as text


def test_rendered_markdown_runs_no_script_in_chromium(documents):
    playwright = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium not installed (apt-get install -y chromium)")
    pages, _ = documents
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for name, text in pages.items():
                page = browser.new_page()
                dialogs: list[str] = []

                def on_dialog(d, seen=dialogs):
                    seen.append(d.message)
                    d.dismiss()

                page.on("dialog", on_dialog)
                page.set_content(f"<!doctype html><html><body>{render(text)}</body></html>", wait_until="load")
                for link in page.locator("a").all():        # follow every link a reader could click
                    href = link.get_attribute("href") or ""
                    assert href.startswith(("http://", "https://")), (name, href)
                page.wait_for_timeout(200)
                state = page.evaluate("() => ({pwned: window.__pwned || null, "
                                      "active: document.querySelectorAll('script, img, iframe, object, embed').length})")
                assert state == {"pwned": None, "active": 0} and not dialogs, (name, state, dialogs)
                assert "onerror" in page.inner_text("body")         # shown as text
                page.close()
        finally:
            browser.close()


def test_terminal_views_show_bidi_and_c1_as_escapes(documents, capsys):
    _, db = documents
    for args in (["show", "run-a", "--db", db], ["list", "--db", db], ["show", "run-a", "--json", "--db", db]):
        code, out, err = main_inprocess(args, capsys)
        assert code == 0, err
        assert "\u202e" not in out and "\u2066" not in out and "\x1b" not in out, args
        assert "\\u202e" in out, args                       # the host is there, inert
    with Store(db) as s:                                     # the store keeps the text as it came
        assert "\u202e" in s.get_run("run-a")["host"]


def test_a_c1_control_in_a_document_is_refused(tmp_path, capsys):
    a, _ = hostile_runs(tmp_path)
    doc = json.loads(open(a).read())
    doc["host"] = "box\x9b2J"
    path = tmp_path / "c1.json"
    path.write_text(json.dumps(doc))
    code, _, err = main_inprocess(["import", str(path), "--db", str(tmp_path / "s.db")], capsys)
    assert code == 2 and "control characters" in err


def test_port_diff_names_files_inertly(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "k\u202eernel\x1b[31m.cu").write_text("__global__ void k() {}\nint main() { cudaDeviceSynchronize(); }\n")
    code, out, err = main_inprocess(["port", str(src)], capsys)
    assert code == 0, err
    assert "cudaDeviceSynchronize" in out and "hipDeviceSynchronize" in out
    assert "\x1b" not in out + err and "\u202e" not in out + err
    assert "k\\u202eernel\\x1b[31m.cu" in out
