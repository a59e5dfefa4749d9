"""One number per result: the figure a real run prints is the figure `show`, `compare`, the CSV /
JSON outputs and `gpuparity.load()` give for it (results/figure.py computes it once)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from gpuparity.cli.common import fmt


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    from conftest import run_cli

    folder = tmp_path_factory.mktemp("one-number")
    db, out = str(folder / "s.db"), str(folder / "run.json")
    env = {"GPUPARITY_DB": db, "GPUPARITY_SPOOL": str(folder / "spool")}
    p = run_cli("run", "gemm", "memory", "training", "--json", out, env=env)
    assert p.returncode in (0, 1), p.stderr
    with open(out) as fh:
        doc = json.load(fh)
    ok = [r for r in doc["results"] if r["status"] == "ok"]
    assert len(ok) >= 5, [(r["workload"], r["reason"]) for r in doc["results"]]
    return doc, ok, db, out, env, p.stdout


def test_run_table_and_show_print_the_figure(quick_run):
    from conftest import run_cli

    doc, ok, db, _, env, table = quick_run
    shown = run_cli("show", doc["run_id"], env=env)
    assert shown.returncode == 0, shown.stderr
    stored = json.loads(run_cli("show", doc["run_id"], "--json", env=env).stdout)
    by_key = {r["key"]: r for r in stored["results"]}
    for r in ok:
        figure = r["metric"]["value"]
        assert by_key[r["key"]]["metric"]["value"] == figure
        text = f"{fmt(figure)} {r['metric']['unit']}"
        assert text in table and text in shown.stdout, (r["workload"], text)


def test_compare_csv_json_and_load_give_the_figure(quick_run, capsys):
    from test_compare import main_inprocess

    import gpuparity

    doc, ok, db, out, env, _ = quick_run
    code, text, err = main_inprocess(["compare", out, out, "-f", "json"], capsys)
    assert code == 0, err
    result = json.loads(text)
    rows = {r["key"]: r for r in result["rows"]}
    assert result["aa"]["identical"] and any("A/A" in n for n in result["notes"])
    for r in ok:
        row = rows[r["key"]]
        assert row["a_value"] == pytest.approx(r["metric"]["value"], rel=1e-12)
        assert row["b_value"] == pytest.approx(r["metric"]["value"], rel=1e-12)
        assert row["verdict"] in ("inconclusive", "parity")        # the same run on both sides
    code, text, err = main_inprocess(["compare", out, out, "-f", "csv"], capsys)
    assert code == 0, err
    for line in csv.DictReader(io.StringIO(text)):
        figure = next(r["metric"]["value"] for r in ok if r["key"] == line["key"])
        assert float(line["a_value"]) == pytest.approx(figure, rel=1e-12)
    # the store path (SQLite columns, not documents) gives the same figure
    code, text, err = main_inprocess(["compare", doc["run_id"], doc["run_id"], "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    for row in json.loads(text)["rows"]:
        figure = next(r["metric"]["value"] for r in ok if r["key"] == row["key"])
        assert row["a_value"] == pytest.approx(figure, rel=1e-12)
    frame = gpuparity.load(db)
    values = dict(zip(frame["key"], frame["value"], strict=True))
    for r in ok:
        assert values[r["key"]] == pytest.approx(r["metric"]["value"], rel=1e-12)


def test_the_report_shows_the_figure(quick_run, tmp_path, capsys):
    from test_compare import main_inprocess

    _, ok, _, out, _, _ = quick_run
    html = tmp_path / "r.html"
    code, _, err = main_inprocess(["report", out, out, "-o", str(html), "--no-claims"], capsys)
    assert code == 0, err
    text = html.read_text()
    for r in ok:
        assert fmt(r["metric"]["value"]) in text, (r["workload"], fmt(r["metric"]["value"]))
