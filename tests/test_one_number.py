"""One number per result: the figure a real quick-suite run prints is the figure `show`, `compare`, the CSV /
JSON outputs and `gpuparity.load()` give for it (results/figure.py computes it once), and so are
its derived columns: % of peak and the per-peak ratio, within (0, 100] or flagged peak_exceeded."""

from __future__ import annotations

import csv
import io
import json

import pytest

from gpuparity.results.figure_text import figure, percent


@pytest.fixture(scope="module")
def quick_run(quick_suite_run):
    """The quick suite's run (conftest: once per test session): every workload of the quickstart."""
    doc, db, out, env, table = quick_suite_run
    ok = [r for r in doc["results"] if r["status"] == "ok"]
    assert {"gemm", "memory", "attention", "moe", "conv", "llm", "training"} <= {r["workload"] for r in ok}, \
        [(r["workload"], r["reason"]) for r in doc["results"] if r["status"] != "ok"]
    return doc, ok, db, out, env, table


def test_run_table_and_show_print_the_figure(quick_run):
    from conftest import run_cli

    doc, ok, db, _, env, table = quick_run
    shown = run_cli("show", doc["run_id"], env=env)
    assert shown.returncode == 0, shown.stderr
    stored = json.loads(run_cli("show", doc["run_id"], "--json", env=env).stdout)
    by_key = {r["key"]: r for r in stored["results"]}
    for r in ok:
        value = r["metric"]["value"]
        assert by_key[r["key"]]["metric"]["value"] == value
        text = f"{figure(value)} {r['metric']['unit']}"
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
        value = next(r["metric"]["value"] for r in ok if r["key"] == line["key"])
        assert float(line["a_value"]) == pytest.approx(value, rel=1e-12)
    # the store path (SQLite columns, not documents) gives the same figure
    code, text, err = main_inprocess(["compare", doc["run_id"], doc["run_id"], "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    for row in json.loads(text)["rows"]:
        value = next(r["metric"]["value"] for r in ok if r["key"] == row["key"])
        assert row["a_value"] == pytest.approx(value, rel=1e-12)
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
        assert figure(r["metric"]["value"]) in text, (r["workload"], figure(r["metric"]["value"]))


def expected_pct(r: dict) -> float | None:
    """The result's % of peak as the run document holds it, checked against the rule: within
    (0, 100], or none and flagged when the figure is above its peak."""
    pct = r["derived"].get("pct_peak")
    exceeded = "peak_exceeded" in (r.get("flags") or [])
    assert not (pct is not None and exceeded), r["workload"]
    assert pct is None or 0 < pct <= 100, (r["workload"], pct)
    if exceeded:
        assert r["derived"]["peak"]["exceeded"] is True
    return pct


def same(a, b) -> bool:
    import math

    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return b is not None and abs(a - b) <= 1e-9 * abs(a)


def test_percent_of_peak_is_one_number_in_every_view(quick_run, capsys, tmp_path):
    from conftest import run_cli
    from test_compare import main_inprocess

    import gpuparity

    doc, ok, db, out, env, table = quick_run
    pct = {r["key"]: expected_pct(r) for r in ok}
    flagged = {r["key"] for r in ok if "peak_exceeded" in r["flags"]}
    assert sum(v is not None for v in pct.values()) + len(flagged) >= 3
    tokens = [r for r in ok if r["metric"]["unit"] == "tokens/s" and r["work"].get("flop")]
    assert tokens and all(pct[r["key"]] is not None or r["key"] in flagged for r in tokens)   # moe, training
    shown = run_cli("show", doc["run_id"], env=env).stdout
    for r in ok:                                       # the run table and show print the same cell
        if pct[r["key"]] is not None:
            assert percent(pct[r["key"]]) in table and percent(pct[r["key"]]) in shown, r["workload"]
    if flagged:
        assert "peak_exceeded" in table and "peak_exceeded" in shown
    views = {}
    for name, args in (("json", [out, out]), ("store", [doc["run_id"], doc["run_id"], "--db", db])):
        code, text, err = main_inprocess(["compare", *args, "-f", "json"], capsys)
        assert code == 0, err
        views[name] = {r["key"]: r for r in json.loads(text)["rows"]}
    code, text, err = main_inprocess(["compare", out, out, "-f", "csv"], capsys)
    assert code == 0, err
    csv_rows = {line["key"]: line for line in csv.DictReader(io.StringIO(text))}
    frame = gpuparity.load(db)
    loaded = dict(zip(frame["key"], zip(frame["pct_peak"], frame["flags"], strict=True), strict=True))
    compared = gpuparity.compare(out, out)
    api = dict(zip(compared["key"], compared["a_pct_peak"], strict=True))
    for r in ok:
        k, want = r["key"], pct[r["key"]]
        for name, rows in views.items():
            row = rows[k]
            assert same(want, row["a_pct_peak"]) and same(want, row["b_pct_peak"]), (name, r["workload"])
            if want is None:
                assert row["ratio_per_peak"] is None
            else:   # per peak = B/A over the peaks' ratio: the same spec on both sides, so the ratio itself
                assert same(row["ratio"], row["ratio_per_peak"])
            assert (k in flagged) == ("peak_exceeded" in row["flags"])
        cell = csv_rows[k]["a_pct_peak"]
        assert same(want, float(cell) if cell not in ("", "None") else None), r["workload"]
        value, flags = loaded[k]
        assert same(want, value) and (k in flagged) == ("peak_exceeded" in flags), r["workload"]
        assert same(want, api[k]), r["workload"]
    html = tmp_path / "r.html"
    code, _, err = main_inprocess(["report", out, out, "-o", str(html), "--no-claims"], capsys)
    assert code == 0, err
    text = html.read_text()
    for r in ok:
        if pct[r["key"]] is not None:
            assert f"{percent(pct[r['key']])} / {percent(pct[r['key']])}" in text, r["workload"]


def twice_the_peaks(doc: dict) -> dict:
    """The same run stated for a box whose every datasheet peak is twice this one's: its % of peak
    (re-derived by the function import uses) halves, so B's per-peak ratio is half its raw ratio."""
    import copy

    from gpuparity.results.document import validate_run
    from gpuparity.results.recompute_checker import FLAG

    b = copy.deepcopy(doc)
    spec = b["fingerprint"]["spec"]
    for field, value in list(spec.items()):
        if field.endswith(("_tflops", "_tops", "_tbs", "_gbs")) and isinstance(value, (int, float)):
            spec[field] = 2 * value
    b["run_id"] = doc["run_id"] + "-2x"
    b = validate_run(b, "twice", recompute=True)
    b.pop("recomputed", None)
    for r in b["results"]:
        r["flags"] = [f for f in r.get("flags") or [] if f != FLAG]
    return validate_run(b, "twice")        # as stated now, it imports


def test_per_peak_ratio_is_the_ratio_over_the_peaks_in_every_view(quick_run, tmp_path, capsys):
    """A side whose peaks are twice A's: every result with a % of peak on both sides reads a per-peak
    ratio of half its raw ratio, the same in compare (JSON, CSV, store), gpuparity.compare() and
    the report; a wrong or cancelled peak factor cannot pass (the A/A test above cannot see one)."""
    from conftest import run_cli
    from test_compare import main_inprocess

    import gpuparity

    doc, ok, db, out, env, _ = quick_run
    b_doc = twice_the_peaks(doc)
    b_path = tmp_path / "b.json"
    b_path.write_text(json.dumps(b_doc))
    assert run_cli("import", str(b_path), env=env).returncode == 0
    with_peak = {r["key"] for r in ok if r["derived"].get("pct_peak") is not None}
    assert len(with_peak) >= 5
    b_pct = {r["key"]: r["derived"].get("pct_peak") for r in b_doc["results"] if r["status"] == "ok"}
    views = {}
    for name, args in (("json", [out, str(b_path)]), ("store", [doc["run_id"], b_doc["run_id"], "--db", db])):
        code, text, err = main_inprocess(["compare", *args, "-f", "json"], capsys)
        assert code == 0, err
        views[name] = {r["key"]: r for r in json.loads(text)["rows"]}
    code, text, err = main_inprocess(["compare", out, str(b_path), "-f", "csv"], capsys)
    assert code == 0, err
    views["csv"] = {line["key"]: {k: (float(v) if v not in ("", "None") and k in ("ratio", "ratio_per_peak",
                                  "a_pct_peak", "b_pct_peak") else v) for k, v in line.items()}
                    for line in csv.DictReader(io.StringIO(text))}
    api = gpuparity.compare(out, str(b_path))
    views["api"] = {row["key"]: row for row in api.to_dict("records")}
    for name, rows in views.items():
        for k in with_peak:
            row = rows[k]
            assert same(row["b_pct_peak"], row["a_pct_peak"] / 2) and same(b_pct[k], row["b_pct_peak"]), (name, k)
            assert same(row["ratio_per_peak"], row["ratio"] / 2), (name, row["workload"])
    html = tmp_path / "r.html"
    code, _, err = main_inprocess(["report", out, str(b_path), "-o", str(html)], capsys)
    assert code == 0, err
    text = html.read_text()
    for k in with_peak:
        row = views["json"][k]
        assert f"{percent(row['a_pct_peak'])} / {percent(row['b_pct_peak'])}" in text, row["workload"]
