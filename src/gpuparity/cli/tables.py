"""Terminal tables that fit the terminal: `compare` and `show` at 100 columns keep every row's
verdict, CI and the parameters that tell it apart whole; the columns a narrow terminal has no room
for are left out (in a fixed order of importance) and said so; `--wide` shows them all.

A column is fixed (never cut: it gets the width of its longest cell) or the one flexible column
(the parameters), which wraps onto more lines instead of being cut. Parameters shown are only
those that vary among a workload's rows (report.labels); the constant ones are listed once below.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuparity.cli.common import console, escape
from gpuparity.results.figure_text import figure, latency, percent, ratio, ratio_ci

GAP = 3              # between columns: padding, separator, padding
FLEX_MIN = 24        # the parameters column never narrower than this (it wraps below it)


@dataclass
class Col:
    header: str
    cells: list[str]                 # plain text (escaped when printed)
    priority: int = 0                # 0: always shown; higher: dropped first
    justify: str = "left"
    flex: bool = False
    styles: list[str] = field(default_factory=list)

    @property
    def natural(self) -> int:
        return max([len(self.header), *(len(c) for c in self.cells)])


def choose(cols: list[Col], width: int, wide: bool = False) -> tuple[list[Col], list[str]]:
    """The columns that fit `width` (all with wide), in their order, and the headers left out."""
    cols = [c for c in cols if any(x not in ("", "-") for x in c.cells) or c.priority == 0]
    if wide:
        return cols, []

    def need(chosen):
        return sum(min(c.natural, FLEX_MIN) if c.flex else c.natural for c in chosen) + GAP * (len(chosen) - 1)

    keep = [c for c in cols if c.priority == 0]
    dropped = []
    for level in sorted({c.priority for c in cols} - {0}):
        group = [c for c in cols if c.priority == level]
        if need(keep + group) <= width:
            keep += group
        else:
            dropped += [c.header for c in group]
    return [c for c in cols if c in keep], dropped


def render(cols: list[Col], title: str | None, wide: bool = False, stderr: bool = False) -> list[str]:
    """Print the table; returns the headers left out for lack of room."""
    from rich import box
    from rich.table import Table

    con = console(stderr=stderr)
    chosen, dropped = choose(cols, con.width, wide)
    if wide:           # everything on one line per row: as wide as the table needs
        con.width = max(con.width, sum(c.natural for c in chosen) + GAP * (len(chosen) - 1))
    t = Table(title=escape(title) if title else None, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
              title_justify="left")
    for c in chosen:
        if c.flex:
            t.add_column(c.header, overflow="fold", min_width=min(c.natural, FLEX_MIN))
        else:
            t.add_column(c.header, justify=c.justify, no_wrap=True, width=c.natural)
    n = len(chosen[0].cells) if chosen else 0
    for i in range(n):
        t.add_row(*[f"[{c.styles[i]}]{escape(c.cells[i])}[/]" if c.styles and c.styles[i] else escape(c.cells[i])
                    for c in chosen])
    con.print(t)
    return dropped


def constants_line(rows: list[dict]) -> str | None:
    """'same in every row: gemm layout=nn; conv batch=1 kernel=3' (what short parameters leave out)."""
    from gpuparity.report.labels import constant_params, params_text

    parts = [f"{w} {params_text(p)}" for w, p in constant_params(rows).items() if p]
    dtypes = {r.get("dtype") for r in rows}
    if len(rows) > 1 and len(dtypes) == 1 and None not in dtypes:
        parts.append(f"dtype {dtypes.pop()}")
    return "same in every row: " + "; ".join(parts) if parts else None


def identity_cols(rows: list[dict], wide: bool) -> list[Col]:
    """workload, parameters (varying ones, all with wide), dtype (when it varies or wide)."""
    from gpuparity.report.labels import case_texts, params_text

    params = [params_text(r.get("params")) for r in rows] if wide else case_texts(rows)
    dtypes = [r.get("dtype") or "-" for r in rows]
    cols = [Col("workload", [r.get("workload") or "?" for r in rows]), Col("params", params, flex=True)]
    # a dtype that every row shares goes to the "same in every row" line instead
    return cols + ([Col("dtype", dtypes)] if wide or len(set(dtypes)) > 1 else [])


# -- compare ----------------------------------------------------------------------------------
VERDICT_STYLE = {"faster": "green", "slower": "red", "parity": "cyan", "inconclusive": "yellow", "mixed": "magenta"}


def ratio_text(value, lo, hi) -> str:
    """A terminal cell of B/A and its CI (results.figure_text.ratio_ci), '-' without one."""
    return ratio_ci(value, lo, hi) or "-"


def _or_dash(text: str) -> str:
    return text or "-"


def compare_cols(rows: list[dict], wide: bool = False) -> list[Col]:
    from gpuparity.comparison.headline import runs_x_trials, side_pcts

    flagged = [bool(r.get("flags")) for r in rows]
    loaded = any(isinstance(r.get("a_load"), (int, float)) or isinstance(r.get("b_load"), (int, float)) for r in rows)
    assumed = any(isinstance(r.get("a_spread"), (int, float)) or isinstance(r.get("b_spread"), (int, float))
                  for r in rows)
    return identity_cols(rows, wide) + [
        Col("A", [_or_dash(figure(r.get("a_value"))) for r in rows], 2, "right"),
        Col("B", [_or_dash(figure(r.get("b_value"))) for r in rows], 2, "right"),
        Col("unit", [r.get("unit") or "-" for r in rows], 2),
        Col("B/A [95% CI]", [ratio_text(r.get("ratio"), r.get("ci_low"), r.get("ci_high")) for r in rows],
            justify="right"),
        Col("verdict", [r["verdict"] + ("*" if f else "") for r, f in zip(rows, flagged, strict=True)],
            styles=[VERDICT_STYLE.get(r["verdict"], "") for r in rows]),
        Col("flags", [", ".join(r.get("flags") or []) for r in rows], 3),
        Col("runs x trials", [f"{runs_x_trials(r, 'a')}/{runs_x_trials(r, 'b')}" for r in rows], 4, "right"),
        # beside every one-run verdict, the run-to-run spread it assumed; beside every figure, its load
        *([Col("spread assumed", [side_pcts(r, "spread") or "-" for r in rows], 2, "right")] if assumed else []),
        *([Col("CPU load", [side_pcts(r, "load") or "-" for r in rows], 2, "right")] if loaded else []),
        Col("%peak A", [_or_dash(percent(r.get("a_pct_peak"))) for r in rows], 5, "right"),
        Col("%peak B", [_or_dash(percent(r.get("b_pct_peak"))) for r in rows], 5, "right"),
        Col("per peak", [_or_dash(ratio(r.get("ratio_per_peak"))) for r in rows], 6, "right"),
        Col("per $", [_or_dash(ratio(r.get("ratio_per_dollar"))) for r in rows], 7, "right"),
        Col("per W", [_or_dash(ratio(r.get("ratio_per_watt"))) for r in rows], 8, "right"),
    ]


def print_compare_rows(rows: list[dict], title: str, wide: bool = False) -> None:
    dropped = render(compare_cols(rows, wide), title, wide)
    con = console()
    if any(r.get("flags") for r in rows):
        con.print("* flagged (unstable, host_bound, contended: at most inconclusive; peak_exceeded: above the datasheet "
                  "peak, no % of peak; timed_out, max_samples: the stopping rule was not met)"
                  + ("; the flags column is left out" if "flags" in dropped else ""))
    if not wide:
        line = constants_line(rows)
        if line:
            con.print(escape(line))
    if dropped:
        con.print(escape(f"not shown for lack of width: {', '.join(dict.fromkeys(dropped))} (--wide shows all)"))


# -- show (one run) ---------------------------------------------------------------------------
def _median_header(results: list[dict]) -> str:
    """What the median column holds, by name where a serving point is in it (its end-to-end
    latency; a kernel's is its time per invocation); each cell carries its unit."""
    serving = {r.get("category") == "serving" for r in results}
    return {frozenset([True]): "median E2EL", frozenset([False]): "median"}.get(frozenset(serving),
                                                                                "median time / E2EL")


def _ci_header(results: list[dict]) -> str:
    """The interval's unit named where every row is a serving point of one unit."""
    units = {(r.get("metric") or {}).get("unit") for r in results if r.get("status") == "ok" and r.get("metric")}
    serving = results and all(r.get("category") == "serving" for r in results)
    return f"95% CI ({units.pop()})" if serving and len(units) == 1 and None not in units else "95% CI"


def run_cols(results: list[dict], wide: bool = False) -> list[Col]:
    from gpuparity.results.figure import unverified

    metric = [r.get("metric") or {} for r in results]
    ok = [r.get("status") == "ok" for r in results]

    def status(r):
        flags = r.get("flags") or []
        return r["status"] + (f" ({', '.join(flags)})" if flags and wide else "*" if flags else "")

    def shown(r, m):        # a serving figure from counts nobody checked says so where it is printed
        return f"{figure(m.get('value'))} {m.get('unit', '')}" + (
            " (unverified)" if unverified(r) else "")

    return identity_cols(results, wide) + [
        Col("throughput", [shown(r, m) if m and o else "" for r, m, o in zip(results, metric, ok, strict=True)],
            justify="right"),
        Col(_ci_header(results), [f"{figure(m['ci_low'])} .. {figure(m['ci_high'])}" if o and m.get("ci_low")
                       and m.get("ci_high") else "" for m, o in zip(metric, ok, strict=True)], justify="right"),
        Col("% peak", [percent((r.get("derived") or {}).get("pct_peak")) for r in results], 1, "right"),
        Col("trials", [str(m.get("trials") or "") if o else "" for m, o in zip(metric, ok, strict=True)], 3,
            "right"),
        Col(_median_header(results), [latency((r.get("summary") or {}).get("median")) for r in results], 4, "right"),
        Col("status", [status(r) for r in results],
            styles=[{"ok": "", "skipped": "yellow", "failed": "red"}.get(r["status"], "") for r in results]),
    ]


def print_run_rows(doc: dict, rows: int = 0, wide: bool = False, stderr: bool = False) -> None:
    """A run's results (at most `rows`, 0: all); skip and failure reasons listed below the table."""
    from gpuparity.results.figure import unverified

    results = doc["results"][:rows] if rows else doc["results"]
    title = f"run {doc['run_id']} ({doc.get('status')})"
    dropped = render(run_cols(results, wide), title, wide, stderr)
    con = console(stderr=stderr)
    from gpuparity.report.labels import short_labels

    names = short_labels(results)
    for r, name in zip(results, names, strict=True):
        if r["status"] != "ok":
            con.print(f"[{'yellow' if r['status'] == 'skipped' else 'red'}]{r['status']}[/]: "
                      f"{escape(name)}: {escape(r.get('reason'))}")
    if any(r.get("flags") for r in results) and not wide:
        con.print("* flagged (unstable, host_bound, contended, peak_exceeded, unverified_tokens, ...): "
                  "--wide names the flags")
    for r, name in zip(results, names, strict=True):      # the count, beside the flag the figure carries
        bad = ((r.get("info") or {}).get("serving") or {}).get("invalid") if r.get("category") == "serving" else None
        if bad:
            con.print(f"[yellow]invalid_requests[/]: {escape(name)}: {bad} request(s) whose usage their stream "
                      "contradicts; their time and tokens are left out of the figure")
    if any(unverified(r) for r in results):
        con.print("(unverified): the server's token counts, no tokenizer checked them: no throughput claim "
                  "rests on them (--set tokenizer=PATH|NAME checks them)")
    if not wide:
        line = constants_line(results)
        if line:
            con.print(escape(line))
    if dropped:
        con.print(escape(f"not shown for lack of width: {', '.join(dropped)} (--wide shows all)"))
    if len(results) < len(doc["results"]):
        con.print(f"... {len(doc['results']) - len(results):,} more results not shown (--rows 0 shows all, "
                  "--json prints the document)")
