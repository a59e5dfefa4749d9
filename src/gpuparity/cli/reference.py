"""`gpuparity reference`: import and look at third-party results (MLPerf Inference and Training)."""

from __future__ import annotations

from typing import Optional

import typer

from gpuparity.cli.common import console, db_option, escape, fmt
from gpuparity.cli.output import Output, format_option, json_option, output_option
from gpuparity.errors import UserError


def _show(value: str) -> str:
    return repr(value) if len(value) <= 40 else repr(value[:37]) + "..."


def reference_store(db: str | None):
    """The store a reading reference verb reads: where there is none, the one line says what
    makes one (and nothing is created)."""
    from gpuparity.evidence.reference import IMPORT_HINT
    from gpuparity.results.store import Store

    try:
        return Store(db)
    except UserError as exc:
        if str(exc).startswith("no store"):
            raise UserError(f"{exc}: nothing is imported yet; {IMPORT_HINT}") from None
        raise


sub = typer.Typer(help="Third-party reference results (MLPerf Inference and Training, InferenceX).", no_args_is_help=True)
SHOW_UNREADABLE = 20


def safe(text) -> str:
    """Data for a rich line: no markup, no control characters."""
    from gpuparity.validate import terminal_safe

    return escape(terminal_safe("-" if text in (None, "") else text))


@sub.command("import")
def import_cmd(
    fmt_name: str = typer.Argument(..., metavar="FORMAT",
                                   help="mlperf (an MLPerf Inference summary_results.json, any round) | "
                                        "mlperf-training (a training_results tree, or a submitter's summary.json) | "
                                        "inferencex (rows as the InferenceX API returns them)."),
    path: str = typer.Argument(..., metavar="PATH", help="The file (.json or .json.gz) or, for training, the folder."),
    strict: bool = typer.Option(False, "--strict", help="Refuse the whole input if any row is unreadable."),
    round_: Optional[str] = typer.Option(None, "--round", help="The round (e.g. 4.1) where the input does not say."),
    db: Optional[str] = db_option(),
    out_format: str = format_option(("table", "json"), help="json: the whole import summary."),
    output: Optional[str] = output_option(),
    as_json: bool = json_option(),
) -> None:
    """Import reference results: readable rows are stored in one transaction (rows already stored are
    kept), unreadable ones are listed with the reason."""
    import os

    from gpuparity.evidence.reference import import_file, read_input
    from gpuparity.results.store import Store, check_writable

    trees = (path,) if os.path.isdir(path) else ()      # a training tree: no report into it
    sink = Output(out_format, output, as_json, db=db, inputs=(path,), trees=trees)     # the guard, first
    check_writable(db, "nothing imported; give a writable --db")      # a read-only share: said before parsing
    parsed = read_input(fmt_name, path, strict=strict, round=round_)     # a bad input opens no store
    with Store(db) as store:
        summary = import_file(store, fmt_name, path, strict=strict, round=round_, parsed=parsed)
    if sink.json:
        sink.print_json(summary)
        return
    with sink.writing():
        _print_import(summary, path)


def _print_import(summary: dict, path: str) -> None:
    c = console()
    rounds = ", ".join(f"{n} of round {r}" for r, n in sorted(summary["rounds"].items()))
    if summary.get("dates"):
        rounds = f"measured {summary['dates'][0]} .. {summary['dates'][1]}"
    c.print(f"{summary['rows']} rows read from {safe(path)} ({rounds}): {summary['added']} added, "
            f"{summary['already_stored']} already stored; "
            + ", ".join(f"{n} {safe(k)}" for k, n in sorted(summary["categories"].items())))
    for rnd, held in sorted(summary.get("held", {}).items()):
        c.print(f"round {safe(rnd)} in the store: {'held whole' if held['whole'] else 'not held whole'} "
                f"({safe(held['basis'])})")
    if summary.get("figure_checks"):
        c.print(f"marked, {summary['figure_checks']} rows: published figures that disagree with each other "
                "(interactivity x TPOT, input + output throughput)")
    if "twins" in summary:
        c.print(f"accuracy twins (-99 / -99.9 of one submission): {summary['twins']} pairs, "
                f"{summary['twins_same_result']} with the same result: {summary['distinct_results']} distinct results")
    for s in summary.get("scores", []):
        c.print(f"  {safe(s['submitter'])} {safe(s['system'])} {safe(s['model'])} on {s['accelerators']} "
                f"{safe(s['spec_id'])}: {s['time_to_train_min']:.2f} min to train")
    c.print(f"accelerators mapped to a spec: {summary['mapped']} rows; no accelerator (CPU only): "
            f"{summary['no_accelerator']}; mixed: {summary['mixed']}")
    c.print("availability: " + ", ".join(f"{n} {safe(k)}" for k, n in sorted(summary["availability"].items()))
            + (f"; inferred by MLPerf from another scenario: {summary['inferred']} rows" if summary["inferred"] else "")
            + "".join(f"; {n} {safe(k)} (own products unless --pool-variants)" for k, n in summary["variants"].items()))
    for text, n in list(summary["units_flags"].items()) + list(summary["version_notes"].items()):
        c.print(f"  marked, {n} rows: {safe(text)}")
    if summary.get("count_notes"):
        c.print(f"  marked, {summary['count_notes']} rows: total_accelerators disagrees with per node x nodes")
    if summary.get("named_by_location"):
        c.print(f"rows with no result ID, named by their Location: {summary['named_by_location']}")
    if summary.get("benchmark_labels"):
        c.print("stored under the checker's benchmark names (display labels kept beside them): "
                + ", ".join(f"{safe(k)} ({n} rows)" for k, n in summary["benchmark_labels"].items()))
    differ = summary["stored_differently"]
    if differ:
        c.print(f"{len(differ)} rows are stored with another figure than this import reads (an earlier import's; "
                "the stored rows are kept): " + ", ".join(safe(d) for d in differ[:5]) + (" ..." if len(differ) > 5 else ""))
    if summary["unmapped"]:
        c.print("not mapped to a spec (kept as written; `gpuparity reference list --unmapped`):")
        for name, n in summary["unmapped"].items():
            c.print(f"  {safe(name)}: {n} rows")
    bad = summary["unreadable"]
    if bad:
        c.print(f"{len(bad)} unreadable (not stored; --strict refuses the whole input):")
        for b in bad[:SHOW_UNREADABLE]:
            c.print(f"  {safe(b['where'])}: {safe(b['reason'])}")
        if len(bad) > SHOW_UNREADABLE:
            c.print(f"  ... {len(bad) - SHOW_UNREADABLE} more (-f json lists all)")


# Filter options shared by `list` and `compare` (the older names stay as aliases).
ROUND_OPT = typer.Option(None, "--round", help="Round, e.g. 5.1 or v4.1.")
BENCHMARK_OPT = typer.Option(None, "--benchmark", "--model", help="Benchmark or its prefix (llama2-70b).")
DIVISION_OPT = typer.Option(None, "--division", "--category",
                            help="closed (default) | open | network | all (divisions are never compared with each other).")
STATUS_OPT = typer.Option(None, "--status", help="available (default) | preview | rdi | all.")
VARIANTS_OPT = typer.Option(False, "--pool-variants",
                            help="Count custom-thermal (CTS), NVL and PCIe variants as the part they vary.")


def short_id(result_id: str) -> str:
    """A result named by its Location (v6.1/closed/AMD/results/SYSTEM) shown as its system folder;
    `--json` and `reference show` give the whole path."""
    return result_id.rsplit("/", 1)[-1] if "/results/" in result_id else result_id


def _widened(left: dict, rules) -> str:
    """What the division and availability rules left out, and how to see it."""
    if not left:
        return ""
    return ("; not shown: " + ", ".join(f"{n} {safe(k)}" for k, n in sorted(left.items()))
            + f" ({rules.widen_hint(('division', 'status'))})")


@sub.command("list")
def list_cmd(
    round_: Optional[str] = ROUND_OPT,
    benchmark: Optional[str] = BENCHMARK_OPT,
    accelerator: Optional[str] = typer.Option(None, "--accelerator", "--spec", help="GPU spec id or name (mi325x, h200)."),
    division: Optional[str] = DIVISION_OPT,
    status: Optional[str] = STATUS_OPT,
    scenario: Optional[str] = typer.Option(None, "--scenario", help="Offline | Server | Interactive | ..."),
    unmapped: bool = typer.Option(False, "--unmapped", help="Only rows whose accelerator has no spec row."),
    pool_variants: bool = VARIANTS_OPT,
    source: Optional[str] = typer.Option(None, "--source", help="mlperf-inference | mlperf-training | inferencex"),
    limit: int = typer.Option(200, "--limit", "-n", min=1, max=10**9),
    db: Optional[str] = db_option(),
    out_format: str = format_option(("table", "json")),
    output: Optional[str] = output_option(),
    as_json: bool = json_option(),
) -> None:
    """List imported reference results: closed division and available systems unless widened
    (per-accelerator figures are derived, not MLCommons-verified)."""
    from gpuparity.evidence.reference import require_rows, select
    from gpuparity.evidence.rules import Rules, admit, distinct

    sink = Output(out_format, output, as_json, db=db)      # the guard, before any work
    if source == "inferencex" and division is None:
        division = "all"                  # InferenceX rows belong to no MLPerf division
    rules = Rules.make(division=division, status=status, pool_variants=pool_variants)
    with reference_store(db) as store:
        rows, skipped = require_rows(store, source)
    rows = select(rows, benchmark=benchmark, accelerator=accelerator, scenario=scenario, unmapped=unmapped,
                  round=round_, pool_variants=pool_variants)
    rows, left = admit(rows, rules)
    distinct(rows)                 # marks the same run under two result IDs (also_ids / duplicate_of)
    if sink.json:
        sink.print_json(rows[:limit], f"{len(rows[:limit])} rows")
        return
    with sink.writing():
        _print_list(rows, left, skipped, rules, limit)


def _print_list(rows: list[dict], left: dict, skipped: int, rules, limit: int) -> None:
    from rich.table import Table

    from gpuparity.evidence.mlperf import USAGE_NOTE

    repeats = sum(1 for r in rows if r.get("duplicate_of"))
    t = Table(title=f"{len(rows)} reference results" + (f" (first {limit})" if len(rows) > limit else ""),
              caption=USAGE_NOTE)
    for col in ("round", "result ID", "div", "submitter", "benchmark", "scenario", "accelerator (spec id or as written)",
                "nodes x acc", "precision", "stack", "result", "units", "per acc. (derived)", "marks"):
        t.add_column(col, justify="right" if col in ("result", "per acc. (derived)") else "left",
                     no_wrap=col in ("result ID", "benchmark", "result", "units"))
    for r in rows[:limit]:
        model = r["model"] + (" (twin)" if r.get("twin_same_result") else "")
        marks = [m for m, on in (("inferred", r.get("inferred")), (f"dup of {r.get('duplicate_of')}", r.get("duplicate_of")),
                                 (f"units? ({r.get('units_expected')})", r.get("units_flag")),
                                 (str(r.get("variant")), r.get("variant")),
                                 ("version?", r.get("version_notes")), ("counts?", r.get("count_note"))) if on]
        t.add_row(safe(r.get("round")), safe(short_id(r["result_id"])), safe(r["category"]), safe(r["submitter"]), safe(model),
                  safe(r["scenario"]), safe(r.get("spec_id") or r.get("accelerator")),
                  f"{r['nodes']}x{r['accelerators_per_node']}", safe(r.get("precision")), safe(r.get("stack")),
                  fmt(r["result"]), safe(r["units"]), fmt(r.get("per_accelerator")), safe(", ".join(marks)))
    c = console()
    shown = ", ".join(rules.header().split(", ")[:2])
    c.print(f"shown: {shown}{_widened(left, rules)}")
    c.print(t)
    if any(r.get("twin_same_result") for r in rows[:limit]):
        c.print("(twin): the same run submitted for both accuracy targets (-99 and -99.9); count it once")
    if repeats:
        c.print(f"dup of: {repeats} rows repeat a run listed under another result ID; comparisons count it once")
    if any(r.get("inferred") for r in rows[:limit]):
        c.print("inferred: MLPerf derived the result from another scenario's run (marked in the summary)")
    if any(r.get("units_flag") or r.get("version_notes") for r in rows[:limit]):
        c.print("units? / version?: the published units or software version are not plausible "
                "(`gpuparity reference show ID` says why)")
    if skipped:
        c.print(f"{skipped} stored rows are in a shape this version cannot read and are not shown")


@sub.command("show")
def show_cmd(
    ref: str = typer.Argument(..., help="A ref_id, or a result ID (5.1-0069) for all its rows."),
    db: Optional[str] = db_option(),
    out_format: str = format_option(("table", "json")),
    output: Optional[str] = output_option(),
    as_json: bool = json_option(),
) -> None:
    """Every field of the reference rows with this ref_id or result ID."""
    from gpuparity.evidence.reference import stored_rows

    sink = Output(out_format, output, as_json, db=db)      # the guard, before any work
    with reference_store(db) as store:
        rows = [r for r in stored_rows(store)[0] if ref in (r["ref_id"], r.get("result_id"))]
    if not rows:
        raise UserError(f"no reference result {_show(ref)} (see `gpuparity reference list`)")
    if sink.json:
        sink.print_json(rows, f"{len(rows)} rows")
        return
    with sink.writing():
        _print_rows(rows)


def _print_rows(rows: list[dict]) -> None:
    from rich.table import Table

    c = console()
    for r in rows:
        t = Table(title=safe(r["ref_id"]), show_header=False)
        t.add_column("field")
        t.add_column("value")
        for k, v in r.items():
            if isinstance(v, dict):
                v = ", ".join(f"{a} {b}" for a, b in v.items()) or "-"
            elif isinstance(v, list):
                v = f"{len(v)} entries (-f json shows them)"
            t.add_row(safe(k), safe(fmt(v) if isinstance(v, float) else v))
        c.print(t)


@sub.command("compare")
def compare_cmd(
    acc_a: str = typer.Argument(..., metavar="ACC_A", help="GPU spec id or name (mi325x): side A."),
    acc_b: str = typer.Argument(..., metavar="ACC_B", help="GPU spec id or name (h200): side B, ratio = B / A."),
    round_: Optional[str] = ROUND_OPT,
    benchmark: Optional[str] = BENCHMARK_OPT,
    division: Optional[str] = DIVISION_OPT,
    status: Optional[str] = STATUS_OPT,
    precision: Optional[str] = typer.Option(None, "--precision",
                                            help="same (default: each class apart) | any (pooled) | a class: fp8, fp4, ..."),
    scale: Optional[str] = typer.Option(None, "--scale", help="same (default: equal accelerator counts) | any."),
    pool_variants: bool = VARIANTS_OPT,
    scenario: Optional[str] = typer.Option(None, "--scenario"),
    statistic: str = typer.Option("best", "--statistic", help="best (each side's best submission) | median"),
    db: Optional[str] = db_option(),
    out_format: str = format_option(("table", "json")),
    output: Optional[str] = output_option(),
    as_json: bool = json_option(),
) -> None:
    """Per benchmark and scenario: B relative to A per accelerator (training: time to train), like
    for like only (see the rules line above the table)."""
    from gpuparity.evidence.reference import compare, require_rows, select
    from gpuparity.evidence.rules import Rules

    if statistic not in ("best", "median"):
        raise UserError(f"unknown statistic {_show(statistic)}; choose best or median")
    sink = Output(out_format, output, as_json, db=db)      # the guard, before any work
    rules = Rules.make(division=division, status=status, precision=precision, scale=scale, pool_variants=pool_variants)
    with reference_store(db) as store:
        rows = require_rows(store)[0]
    rows = select(rows, benchmark=benchmark, scenario=scenario, round=round_)
    result = compare(rows, acc_a, acc_b, statistic, rules)
    if sink.json:
        sink.print_json(result, f"{len(result['groups'])} groups")
        return
    with sink.writing():
        _print_compare(result, rules, statistic)


def _print_compare(result: dict, rules, statistic: str) -> None:
    from rich.table import Table

    from gpuparity.evidence.mlperf import USAGE_NOTE

    t = Table(title=f"{safe(result['b'])} (B) / {safe(result['a'])} (A), {statistic} submission per side: "
                    "ratio = B / A, above 1 means B is faster (latency, time to train: A / B)",
              caption=USAGE_NOTE + " Latency (lower is better; ratio marked A/B): whole systems at equal accelerator "
                                   "counts; ratio = A's latency / B's. Training: time to train at equal accelerator "
                                   "counts; ratio = A's time / B's time.")
    for col in ("round", "div", "benchmark", "scenario", "precision", "acc. A | B", "A", "B", "ratio", "units",
                "A rows (best)", "B rows (best)", "marks"):
        t.add_column(col, justify="right" if col in ("A", "B", "ratio") else "left",
                     no_wrap=col in ("benchmark", "A", "B", "ratio"),
                     overflow="fold" if "rows" in col else "ellipsis")     # a cited result is never cut
    notes: dict[str, int] = {}
    for g in result["groups"]:
        a, b = g["a"], g["b"]
        scales = "|".join(",".join(str(n) for n in x["scale"]) for x in (a, b))
        marks = []
        for x, side in (("A", a), ("B", b)):
            marks += [f"{x}: {side['inferred']} inferred"] if side["inferred"] else []
            marks += [f"{x}: {v}" for v in side["variants"]]
            marks += [f"{x}: {'/'.join(side['precision'])}"] if g["precision"] == "any" else []
            marks += [f"{x}: note {notes.setdefault(f, len(notes) + 1)}" for f in side["flags"]]
        direction = " A/B" if g.get("lower_is_better") and g["source"] != "mlperf-training" else ""
        t.add_row(safe(g["round"]), safe(g["division"]), safe(g["benchmark"]), safe(g["scenario"]), safe(g["precision"]),
                  scales, fmt(a["value"]), fmt(b["value"]), f"{g['ratio']:.3g}{direction}", safe(g["units"]),
                  f"{a['rows']} ({safe(short_id(a['best']))})", f"{b['rows']} ({safe(short_id(b['best']))})",
                  safe("; ".join(marks)))
    c = console()
    c.print(f"rules: {safe(result['rules'])} ({safe(rules.widen_hint())})")
    c.print(t)
    for text, n in notes.items():
        c.print(f"note {n}: {safe(text)}")
    if not result["groups"]:
        c.print("no benchmark has results for both accelerators under these rules")
    if result["only_a"] or result["only_b"]:
        c.print(f"groups with results for one side only: {result['only_a']} A, {result['only_b']} B")
    left = dict(result["left_out"], **({"repeated runs (counted once)": result["repeats"]} if result["repeats"] else {}))
    if left:
        c.print("left out by the rules: " + ", ".join(f"{n} {safe(k)}" for k, n in sorted(left.items())))


@sub.command("trend")
def trend_cmd(
    accelerator: Optional[str] = typer.Option(None, "--accelerator", "--spec", help="GPU spec id or name (mi300x)."),
    benchmark: Optional[str] = BENCHMARK_OPT,
    scenario: Optional[str] = typer.Option(None, "--scenario", help="Offline | Server | Interactive | ..."),
    source: Optional[str] = typer.Option(None, "--source", help="mlperf-inference | mlperf-training"),
    division: Optional[str] = DIVISION_OPT,
    status: Optional[str] = STATUS_OPT,
    every: bool = typer.Option(False, "--all", help="Also systems seen in one round only."),
    db: Optional[str] = db_option(),
    out_format: str = format_option(("table", "json")),
    output: Optional[str] = output_option(),
    as_json: bool = json_option(),
) -> None:
    """Software over time on the same hardware: per submitter and system, each round's figure with its
    software stack (inference: throughput per accelerator, derived; training: time to train)."""
    from gpuparity.evidence.reference import require_rows, select
    from gpuparity.evidence.rules import Rules
    from gpuparity.evidence.series import fold_twins, public, series

    sink = Output(out_format, output, as_json, db=db)      # the guard, before any work
    rules = Rules.make(division=division, status=status)
    part = None
    if accelerator:
        from gpuparity.evidence.reference import resolve_spec

        part = resolve_spec(accelerator)
    with reference_store(db) as store:
        rows = require_rows(store, source)[0]
    rows = select(rows, benchmark=benchmark, scenario=scenario)
    items = fold_twins([s for s in series(rows, rules, part=part) if every or len(s["points"]) > 1])
    if sink.json:
        sink.print_json(public(items), f"{len(items)} series")
        return
    with sink.writing():
        _print_trend(items, rules)


def _trend_figure(point: dict, s: dict) -> str:
    if s["source"] == "mlperf-training":
        return f"{point['value']:,.2f} min"
    return f"{point['value'] / max(s['accelerators'] or 1, 1):,.0f}/acc."


def _print_trend(items: list[dict], rules) -> None:
    from rich.table import Table

    from gpuparity.evidence.citations import url_of

    c = console()
    rounds = sorted({p["round"] for s in items for p in s["points"]}, key=lambda r: tuple(map(int, r.split("."))))
    c.print(f"rules: {safe(rules.header(tuple(rounds)) if len(rounds) > 1 else rules.header())}")
    t = Table(title=f"{len(items)} systems across rounds: each round's figure with its software stack "
                    "(inference: per accelerator, derived, not verified by MLCommons; training: time to train)")
    for col in ("benchmark", "part", "acc.", "submitter / system", "rounds: figure (stack)", "later / earlier", "links"):
        t.add_column(col, overflow="fold", justify="right" if col == "later / earlier" else "left")
    for s in items:
        steps = "\n".join(f"v{p['round']}: {_trend_figure(p, s)} ({safe(p['stack'])}) {safe(url_of(p['row']) or '')}"
                          + "".join(f"\n  also {safe(a['result_id'])}: {safe(a['stack'])}" for a in p["also"])
                          for p in s["points"])
        bench = " ".join(x for x in (s["benchmark"], s["scenario"], s["precision"]) if x)
        bench += f" (and {s['twin']}: the same results)" if s.get("twin") else ""
        t.add_row(safe(bench), safe(s["part"]), f"{s['nodes']}x{s['accelerators'] // max(s['nodes'] or 1, 1)}",
                  safe(f"{s['submitter']} / {s['system']}"), steps,
                  f"x{s['uplift']:.3g}" if s["uplift"] else "-", safe("; ".join(s["links"]) or "-"))
    c.print(t)
    if not items:
        c.print("no system appears in more than one imported round under these rules (--all lists every system)")


def register(app: typer.Typer) -> None:
    app.add_typer(sub, name="reference")
