"""The answer in one sentence: "B is 1.80x A on kernels [1.60, 2.00]: faster; on models 1.01x [0.98, 1.03]:
parity; all results (categories weighted equally) 1.35x [1.2, 1.5]: faster; 3 runs x 3 trials a side."
Every clause carries its own verdict word; a mean whose keys disagree says "mixed: faster on X of N,
slower on Y" with the extremes named; a side timed beside other load says so.

Built from a comparison document (comparison.compare.compare_sides) and shared by the HTML report,
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


def side_title(summary: dict | None, letter: str) -> str:
    """'B (aa-A2)' when every run of the side carries one label, else 'B'."""
    labels = (summary or {}).get("labels") or []
    return f"{letter} ({labels[0]})" if len(labels) == 1 and labels[0] else letter


def _clause(cat: str, g: dict, first: bool, a: str = "A", b: str = "B") -> str:
    """'B is 0.58x A on kernels [0.44, 0.76]: slower' (first) or 'on models 1.01x [0.98, 1.03]: parity':
    every clause carries its own verdict word."""
    where = PLURAL.get(cat, cat)
    ci = interval(g.get("ci_low"), g.get("ci_high"))
    v = mean_verdict(g)
    if cat == "all":
        where = category_name(where, g)
    ratio = times(g["ratio"]) if g.get("ratio") is not None else "?"
    text = f"{b} is {ratio} {a} on {where}{ci}: {v}" if first else f"on {where} {ratio}{ci}: {v}"
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
    """'3 runs x 3 trials a side', '5 runs x 3 trials on A, 1 x 15 on B' (medians over the rows;
    runs only, for documents without trial counts)."""
    rows = result.get("rows") or []

    def per_side(x: str) -> str | None:
        runs = [r.get(f"{x}_runs") for r in rows]
        trials = [r.get(f"{x}_trials") for r in rows]
        rc = _count_phrase(runs)
        if rc is None:
            c = _count_phrase(trials)
            return f"{c} trial{'s' if c != '1' else ''}" if c else None
        text = f"{rc} run{'s' if rc != '1' else ''}"
        per = _count_phrase([round(t / n) for t, n in zip(trials, runs, strict=True)
                             if isinstance(t, (int, float)) and isinstance(n, (int, float)) and n > 0 and t > 0])
        return text + (f" x {per} trial{'s' if per != '1' else ''}" if per else "")

    pa, pb = per_side("a"), per_side("b")
    if pa is None or pb is None:
        return ""
    if pa == pb:
        return f"{pa} a side"
    return f"{pa} on A, {pb.replace(' runs x', ' x').replace(' run x', ' x')} on B"


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


def counts_of(result: dict) -> tuple[dict, str | None]:
    """({verdict: n}, method): the comparison's multiplicity-adjusted counts where it has them
    (doc["counts"], with the method that adjusted them), else the rows' own verdicts counted."""
    given = result.get("counts")
    if isinstance(given, dict) and any(isinstance(given.get(v), int) for v in VERDICT_ORDER):
        return ({v: given[v] for v in VERDICT_ORDER if isinstance(given.get(v), int) and given[v]},
                str(given.get("method") or "") or None)
    return _verdict_counts(result.get("rows") or []), None


VERDICT_ORDER = ("faster", "slower", "parity", "inconclusive")


def load_lines(result: dict) -> list[str]:
    """One sentence per side timed beside other load that is not contended: its intervals widen."""
    out = []
    contended = {c.get("side") for c in result.get("contended") or [] if isinstance(c, dict)}
    for key, letter in (("a", "A"), ("b", "B")):
        load = ((result.get("sides") or {}).get(key) or {}).get("load") or {}
        top = load.get("max") if isinstance(load, dict) else None
        if isinstance(top, (int, float)) and top >= 0.05 and letter not in contended:
            out.append(f"Side {letter} was timed beside other load (up to {100 * top:.0f}% of its CPUs): its "
                       "intervals are widened for it.")
    return out


def contended_lines(result: dict) -> list[str]:
    """One sentence per side that ran on a busy machine (doc["contended"]): it gets no verdict."""
    out = []
    for c in result.get("contended") or []:
        if not isinstance(c, dict):
            continue
        reasons = "; ".join(str(r) for r in c.get("reasons") or [])
        out.append(f"Side {c.get('side', '?')} ran on a busy machine" + (f" ({reasons})" if reasons else "")
                   + ": no faster or slower verdict is given.")
    return out


SPREAD_SOURCE = {"default": "assumed", "set": "set by --run-spread", "history": "from earlier runs",
                 "runs": "measured"}


def spread_text(summary: dict) -> str | None:
    """A side's run-to-run spread per category in a few words ("kernel 6% assumed, model 2.1% from
    earlier runs"); the comparison's notes say where each came from."""
    spreads = summary.get("run_spread")
    if not isinstance(spreads, dict):
        return str(spreads) if spreads else None
    parts = []
    for cat, v in spreads.items():
        if isinstance(v, dict) and isinstance(v.get("spread"), (int, float)):
            parts.append(f"{cat} {100 * v['spread']:.2g}% {SPREAD_SOURCE.get(v.get('source'), v.get('source') or '')}")
    return ", ".join(p.strip() for p in parts) or None


def _scope_text(result: dict) -> str | None:
    """What the comparison can claim (doc["scope"]: its text, or a plain sentence), unless the
    comparison's notes already say it."""
    scope = result.get("scope")
    text = scope.get("text") if isinstance(scope, dict) else scope
    if not text or any(str(n).endswith(str(text)) for n in result.get("notes") or []):
        return None
    return str(text)


def headline(result: dict) -> dict:
    """{"text": the sentence, "clauses": [{category, text, verdict}], "trials", "counts",
    "counts_method", "contended", "scope", "aa", "aa_line", "n_rows"}."""
    geo = result.get("geomean") or {}
    cats = [c for c in geo if c != "all"] or list(geo)
    # the overall mean where it weighs categories equally (documents from before it did: categories only)
    if "all" in geo and "all" not in cats and (geo["all"] or {}).get("weights") == "categories equally":
        cats.append("all")
    sides = result.get("sides") or {}
    a, b = side_title(sides.get("a"), "A"), side_title(sides.get("b"), "B")
    clauses = []
    for i, cat in enumerate(cats):
        clauses.append({"category": cat, "verdict": geo[cat].get("verdict"), "n": geo[cat].get("n"),
                        "text": _clause(cat, geo[cat], i == 0, a, b)})
    rows = result.get("rows") or []
    trials = trials_phrase(result)
    if clauses:
        text = "; ".join(c["text"] for c in clauses)
    elif rows:
        text = f"{b} and {a} share {len(rows)} result{'s' if len(rows) != 1 else ''}, none with a confidence interval"
    else:
        text = f"{a} and {b} have no result in common"
    if trials:
        text += f"; {trials}"
    text += "."
    contended = contended_lines(result) + load_lines(result)
    if contended:
        text += " " + " ".join(contended)
    counts, method = counts_of(result)
    aa = bool((result.get("aa") or {}).get("identical"))
    return {"text": text, "clauses": clauses, "trials": trials, "counts": counts, "counts_method": method,
            "contended": contended, "scope": _scope_text(result), "aa": aa,
            # the comparison's own notes say A/A where it has them; else the report says it
            "aa_line": aa and not any(str(n).startswith("A/A") for n in result.get("notes") or []),
            "n_rows": len(rows)}


def counts_text(h: dict) -> str:
    """'12 results compared: 3 faster, 9 parity (Benjamini-Hochberg over 12 result(s), q = 0.05)':
    the counts are the adjusted verdicts, with the method that adjusted them."""
    parts = ", ".join(f"{n} {v}" for v, n in h["counts"].items())
    n = h["n_rows"]
    text = f"{n} result{'s' if n != 1 else ''} compared" + (f": {parts}" if parts else "")
    return text + (f" ({h['counts_method']})" if h.get("counts_method") else "")


# -- the words and figures every view prints beside a row or a mean (table, markdown, HTML) -------
def runs_x_trials(row: dict, side: str) -> str:
    """'1x3': a side's runs x trials per run in one row ('-' unknown)."""
    runs, trials = row.get(f"{side}_runs"), row.get(f"{side}_trials")
    if not isinstance(runs, (int, float)) or not runs:
        return "-" if trials is None else f"{trials:g}"
    return f"{runs:g}x{(trials or 0) / runs:.3g}"


def side_pcts(row: dict, name: str) -> str | None:
    """'8%/2.1%': a per-side share (a_spread / b_spread, a_load / b_load) in percent, '-' where it
    does not apply; None where neither side has one."""
    got = [row.get(f"{side}_{name}") for side in ("a", "b")]
    if not any(isinstance(v, (int, float)) for v in got):
        return None
    return "/".join("-" if not isinstance(v, (int, float)) else f"{100 * v:.2g}%" for v in got)


def mean_verdict(g: dict) -> str:
    """A mean's verdict as every view prints it: "mixed: faster on X of N, ..." where it is mixed."""
    if g.get("verdict") == "mixed" and isinstance(g.get("mixed"), dict):
        from gpuparity.comparison.heterogeneity import mixed_text

        return mixed_text(g["mixed"])
    return g.get("verdict") or "inconclusive"


def category_name(cat: str, g: dict) -> str:
    """'all (categories weighted equally)' for the overall mean, else the category."""
    return f"{cat} (categories weighted equally)" if g.get("weights") == "categories equally" else cat
