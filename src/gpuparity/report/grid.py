"""A report table as a grid of cells: a column that is empty in every row is left out (the reader
sees what was measured, not a grid of dashes), figures are spelled as every view spells them
(results/figure_text.py), and long unbroken text gets break opportunities so a narrow screen wraps
the cell instead of scrolling."""

from __future__ import annotations

import re

from markupsafe import Markup, escape

from gpuparity.results import figure_text

SOFT_AFTER = re.compile(r"([/_.,=:;&|+\-])")      # split keeps the marks: pieces and marks alternate
LONG_RUN = re.compile(r"\S{13,}")


def soft(text) -> Markup:
    """Escaped text with break opportunities (<wbr>) inside long unbroken runs (paths, URLs,
    field names, library lists), after punctuation and at least every 16 characters: a narrow
    screen wraps the cell instead of scrolling, and short words never break mid-word."""
    text = str(text)
    out, at = [], 0
    for m in LONG_RUN.finditer(text):
        out.append(str(escape(text[at:m.start()])))
        pieces = [p[i:i + 16] for p in SOFT_AFTER.split(m.group(0)) for i in range(0, len(p), 16)]
        out.append("<wbr>".join(str(escape(p)) for p in _glue(pieces)))
        at = m.end()
    out.append(str(escape(text[at:])))
    return Markup("".join(out))


def _glue(pieces: list[str]) -> list[str]:
    """Each punctuation mark back onto the piece before it (a break comes after it, not before)."""
    out: list[str] = []
    for p in pieces:
        if out and SOFT_AFTER.fullmatch(p):
            out[-1] += p
        elif p:
            out.append(p)
    return out


def grid(rows: list, columns: list[tuple]) -> dict:
    """A table: columns are (header, getter, kind) with kind "text" | "num" (a figure) | "ratio" |
    "verdict" (coloured by its first word); a column whose every cell is empty is left out. Cells
    are (text, css class)."""
    cells = []
    for row in rows:
        line = []
        for _, get, kind in columns:
            v = get(row)
            text = figure_text.figure(v) if kind == "num" else figure_text.ratio(v) if kind == "ratio" else \
                "" if v is None else soft(v)
            cls = "num" if kind in ("num", "ratio") else str(v).split(" ")[0].rstrip(":") if kind == "verdict" and v else ""
            line.append((text, cls))
        cells.append(line)
    keep = [j for j in range(len(columns)) if any(line[j][0] for line in cells)]
    return {"headers": [columns[j][0] for j in keep], "rows": [[line[j] for j in keep] for line in cells]}
