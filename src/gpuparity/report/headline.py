"""The answer in one sentence: "B is 1.80x A on kernels [1.60, 2.00], at parity on models; 3 trials a side".

Built from a comparison document (analysis.compare.compare_sides) and shared by the HTML report,
its markdown twin and anything else that wants the short answer. Tolerant of documents written
before trials and flags existed (it then counts runs).
"""

from __future__ import annotations

PLURAL = {"kernel": "kernels", "model": "models", "comm": "communication", "all": "all results"}


def times(x: float) -> str:
    """A ratio as people say it: 1.80x, 0.0612x, 123x."""
    return f"{x:.2f}x" if 0.1 <= abs(x) < 100 else f"{x:.3g}x"


def interval(lo, hi) -> str:
    if lo is None or hi is None:
        return ""
    fmt = (lambda v: f"{v:.2f}") if 0.1 <= lo and hi < 100 else (lambda v: f"{v:.3g}")
    return f" [{fmt(lo)}, {fmt(hi)}]"


def _clause(cat: str, g: dict, first: bool) -> str:
    where = PLURAL.get(cat, cat)
    ci = interval(g.get("ci_low"), g.get("ci_high"))
    a = " A" if first else ""
    v = g.get("verdict")
    if v == "parity":
        return f"at parity{' with A' if first else ''} on {where}{ci}"
    text = f"{times(g['ratio'])}{a} on {where}{ci}"
    if v not in ("faster", "slower"):
        text += " (inconclusive)"
    if g.get("flags"):
        text += f" ({', '.join(g['flags'])})"
    return text


def _count_phrase(values: list) -> str | None:
    """'3', or '1-3' where rows differ; None when no row has a count."""
    values = [int(v) for v in values if isinstance(v, (int, float)) and v > 0]
    if not values:
        return None
    lo, hi = min(values), max(values)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def trials_phrase(result: dict) -> str:
    """'3 trials a side', '3 trials on A, 1 on B' (runs, for documents without trial counts)."""
    rows = result.get("rows") or []
    unit = "trial"
    if not any(r.get("a_trials") for r in rows) or not any(r.get("b_trials") for r in rows):
        unit = "run"
    pa = _count_phrase([r.get(f"a_{unit}s") for r in rows])
    pb = _count_phrase([r.get(f"b_{unit}s") for r in rows])
    if pa is None or pb is None:
        return ""
    def named(count: str) -> str:
        return f"{count} {unit}" + ("" if count == "1" else "s")

    return f"{named(pa)} a side" if pa == pb else f"{named(pa)} on A, {named(pb)} on B"


def pair(a, b) -> str | None:
    """'3 / 1': trials (or runs) of A and B; a median count may be a float (2.5)."""
    def count(x) -> str:
        return "?" if x is None else f"{x:g}" if isinstance(x, float) else str(x)

    return None if a is None and b is None else f"{count(a)} / {count(b)}"


def _verdict_counts(rows: list[dict]) -> dict:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return counts


def headline(result: dict) -> dict:
    """{"text": the sentence, "clauses": [{category, text, verdict}], "trials", "counts", "aa"}."""
    geo = result.get("geomean") or {}
    cats = [c for c in geo if c != "all"] or list(geo)
    clauses = []
    for i, cat in enumerate(cats):
        clauses.append({"category": cat, "verdict": geo[cat].get("verdict"), "n": geo[cat].get("n"),
                        "text": _clause(cat, geo[cat], i == 0)})
    rows = result.get("rows") or []
    trials = trials_phrase(result)
    if clauses:
        text = "B is " + ", ".join(c["text"] for c in clauses)
    elif rows:
        text = f"B and A share {len(rows)} result{'s' if len(rows) != 1 else ''}, none with a confidence interval"
    else:
        text = "A and B have no result in common"
    if trials:
        text += f"; {trials}"
    busy = [c.get("side") for c in result.get("contended") or []]
    if busy:
        text += (f"; side {' and '.join(busy)} ran on a busy machine (contended): no faster/slower verdict")
    aa = bool((result.get("aa") or {}).get("identical"))
    return {"text": text + ".", "clauses": clauses, "trials": trials, "counts": _verdict_counts(rows), "aa": aa,
            # the comparison's own notes say A/A where it has them; else the report says it
            "aa_line": aa and not any(str(n).startswith("A/A") for n in result.get("notes") or []),
            "n_rows": len(rows)}
