"""One figure, one spelling (issue 40): the run table, `show`, `compare`, the HTML report and its
markdown print a result's figure, its CI bounds, its % of peak and a B/A ratio as the one
function of results/figure_text.py for that kind spells it. Figures are chosen where 3 and 4
significant digits differ (97.49 against 97.5), the difference that made a test fail by chance."""

from __future__ import annotations

import json
import re

import pytest
from test_compare import main_inprocess, make_result, make_run

from gpuparity.results.figure_text import figure, latency, percent, ratio, ratio_ci


def test_each_kind_has_one_spelling():
    assert [figure(x) for x in (97.49, 0.0123456, 812.34, 1234.3, 4300.0, 7)] == \
        ["97.49", "0.01235", "812.3", "1,234", "4,300", "7"]
    assert [figure(x) for x in (None, float("nan"), float("inf"), True, "97.49")] == [""] * 5
    assert [percent(x) for x in (7.4593, 82.46, 100.0, 0.5234, None)] == ["7.46", "82.5", "100", "0.523", ""]
    assert [ratio(x) for x in (0.58349, 1.0, 1.2e8, 0.0004, None)] == ["0.583", "1.000", "1.2e+08", "0.0004", ""]
    assert ratio_ci(0.9871, 0.9512, 1.0243) == "0.987 [0.951, 1.024]"
    assert ratio_ci(0.9871, None, 1.0) == "0.987" and ratio_ci(None, 0.9, 1.1) == ""
    assert [latency(x) for x in (1.234, 0.04561, 7.8e-6, 9.5e-7, None)] == ["1.23 s", "45.6 ms", "7.8 us",
                                                                          "950 ns", ""]


def results(spec: dict) -> list[dict]:
    """A GEMM at 97.49 TFLOP/s, one at 1,234 and a memory copy at 0.01235 GB/s, each with its
    % of peak derived from the spec as a run derives it."""
    from gpuparity.results.figure import derive_rates

    out = []
    for m, centre in ((4096, 97.49), (8192, 1234.3)):
        r = make_result("gemm", {"m": m, "n": m, "k": m}, [centre * 0.997, centre, centre * 1.004],
                        work={"flop": 2.0 * m ** 3}, info={"peak_kind": "flop:bf16"})
        out.append(r)
    out.append(make_result("memory", {"op": "copy"}, [0.012339, 0.0123456, 0.012361], dtype="fp32", unit="GB/s",
                           work={"bytes": 2.0 * 2 ** 26}, info={"peak_kind": "bytes:hbm"}))
    for r in out:
        derive_rates(r, spec)
    return out


@pytest.fixture
def views(tmp_path, capsys, monkeypatch):
    """The text of every view of run A (and of A against B, its twin on another box)."""
    from gpuparity.cli.tables import print_run_rows
    from gpuparity.results.store import Store

    monkeypatch.setenv("COLUMNS", "250")          # no column left out for lack of width
    a = make_run([], run_id="run-a")
    a["results"] = results(a["fingerprint"]["spec"])
    assert all(r["derived"].get("pct_peak") for r in a["results"])
    b = {**json.loads(json.dumps(a)), "run_id": "run-b", "host": "host-b"}
    b["fingerprint"]["host"] = "host-b"
    a_path, b_path, db = tmp_path / "a.json", tmp_path / "b.json", str(tmp_path / "s.db")
    a_path.write_text(json.dumps(a))
    b_path.write_text(json.dumps(b))
    with Store(db) as store:
        store.save_run(a)
    out: dict[str, str] = {}
    print_run_rows(a)
    out["run table"] = capsys.readouterr().out

    def view(name, *args):
        code, text, err = main_inprocess(list(args), capsys)
        assert code == 0, (name, err)
        out[name] = text

    view("show", "show", "run-a", "--db", db)
    view("compare", "compare", str(a_path), str(b_path))
    html = tmp_path / "one.html"
    view("report", "report", str(a_path), "-o", str(html), "--no-claims")
    out["report"] = html.read_text()
    view("markdown", "report", str(a_path), "-f", "markdown", "-o", "-", "--no-claims")
    html = tmp_path / "two.html"
    view("compare report", "report", str(a_path), str(b_path), "-o", str(html), "--no-claims")
    out["compare report"] = html.read_text()
    view("compare markdown", "report", str(a_path), str(b_path), "-f", "markdown", "-o", "-", "--no-claims")
    code, text, err = main_inprocess(["compare", str(a_path), str(b_path), "-f", "json"], capsys)
    assert code == 0, err
    return a, out, json.loads(text)


def alone(text: str, view: str) -> bool:
    """`text` printed as a whole number: not a piece of a longer one (97.5 in 97.52)."""
    return re.search(rf"(?<![\d.,]){re.escape(text)}(?![\d])", view) is not None


def test_a_figure_prints_the_same_text_in_every_view(views):
    a, out, _ = views
    for r in a["results"]:
        m, pct = r["metric"], r["derived"]["pct_peak"]
        for name, text in out.items():
            assert alone(figure(m["value"]), text), (name, r["params"], figure(m["value"]))
            other = f"{m['value']:.3g}"               # the spelling the report once had
            if other != figure(m["value"]):
                assert not alone(other, text), (name, other)
        for name in ("run table", "show", "report", "markdown"):          # a result's own views: its CI
            assert alone(figure(m["ci_low"]), out[name]) and alone(figure(m["ci_high"]), out[name]), (name, m)
        for name in ("run table", "show", "compare"):
            assert alone(percent(pct), out[name]), (name, percent(pct))
        for name in ("report", "markdown"):
            assert f"{percent(pct)}% of " in out[name], (name, percent(pct))
        assert f"{percent(pct)} / {percent(pct)}" in out["compare report"], percent(pct)      # % peak A / B
        assert f"| {percent(pct)} | {percent(pct)} |" in out["compare markdown"], percent(pct)


def test_a_ratio_prints_the_same_text_in_every_comparison_view(views):
    from gpuparity.report.markdown import cell

    _, out, compared = views
    assert compared["rows"]
    for row in compared["rows"]:
        text = ratio_ci(row["ratio"], row["ci_low"], row["ci_high"])
        assert re.fullmatch(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", text), text
        assert text in out["compare"] and text in out["compare report"], text
        assert cell(text) in out["compare markdown"], cell(text)           # markdown escapes its brackets
