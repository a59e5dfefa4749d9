"""`gpuparity reference`: import and look at third-party results (MLPerf Inference summaries)."""

from __future__ import annotations

from typing import Optional

import typer

from gpuparity.cli.common import console, db_option, escape, fmt, print_json
from gpuparity.errors import UserError

sub = typer.Typer(help="Third-party reference results (MLPerf Inference).", no_args_is_help=True)


@sub.command("import")
def import_cmd(
    fmt_name: str = typer.Argument(..., metavar="FORMAT", help="mlperf (an MLPerf Inference summary_results.json)."),
    file: str = typer.Argument(..., help="The file (.json or .json.gz)."),
    db: Optional[str] = db_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the import summary as JSON."),
) -> None:
    """Import a results summary: all rows or none; rows already stored are kept (idempotent)."""
    from gpuparity.analysis.reference import import_file
    from gpuparity.results.store import Store

    with Store(db) as store:
        summary = import_file(store, fmt_name, file)
    if as_json:
        print_json(summary)
        return
    c = console()
    c.print(f"{summary['rows']} rows read from {escape(file)}: {summary['added']} added, "
            f"{summary['already_stored']} already stored; "
            + ", ".join(f"{n} {k}" for k, n in sorted(summary["categories"].items())))
    c.print(f"accelerators mapped to a spec: {summary['mapped']} rows; no accelerator (CPU only): "
            f"{summary['no_accelerator']}; mixed: {summary['mixed']}")
    if summary["unmapped"]:
        c.print("not mapped to a spec (kept as written; `gpuparity reference list --unmapped`):")
        for name, n in summary["unmapped"].items():
            c.print(f"  {escape(name)}: {n} rows")


@sub.command("list")
def list_cmd(
    model: Optional[str] = typer.Option(None, "--model", help="Model name or its prefix (llama2-70b)."),
    spec: Optional[str] = typer.Option(None, "--spec", help="GPU spec id or name (mi325x, h200)."),
    scenario: Optional[str] = typer.Option(None, "--scenario", help="Offline | Server | Interactive | ..."),
    category: Optional[str] = typer.Option(None, "--category", help="closed | open"),
    unmapped: bool = typer.Option(False, "--unmapped", help="Only rows whose accelerator has no spec row."),
    source: Optional[str] = typer.Option(None, "--source", help="e.g. mlperf-inference"),
    limit: int = typer.Option(200, "--limit", "-n"),
    db: Optional[str] = db_option(),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List imported reference results (per-accelerator figures are derived, not MLCommons-verified)."""
    from gpuparity.analysis.mlperf import USAGE_NOTE
    from gpuparity.analysis.reference import select
    from gpuparity.results.store import Store

    with Store(db) as store:
        rows = select(store.references(source), model=model, spec=spec, scenario=scenario,
                      category=category, unmapped=unmapped)
    if as_json:
        print_json(rows[:limit])
        return
    from rich.table import Table

    t = Table(title=f"{len(rows)} reference results" + (f" (first {limit})" if len(rows) > limit else ""),
              caption=USAGE_NOTE)
    for col in ("result ID", "div", "submitter", "model", "scenario", "accelerator (spec id or as written)",
                "nodes x acc", "precision", "stack", "result", "units", "per acc. (derived)"):
        t.add_column(col, justify="right" if col in ("result", "per acc. (derived)") else "left",
                     no_wrap=col in ("result ID", "model", "result", "units"))
    for r in rows[:limit]:
        t.add_row(
            escape(r["result_id"]), r["category"], escape(r["submitter"]), escape(r["model"]), escape(r["scenario"]),
            escape(r.get("spec_id") or r.get("accelerator") or "-"),
            f"{r['nodes']}x{r['accelerators_per_node']}", escape(r.get("precision") or "-"),
            escape(r.get("stack") or "-"), fmt(r["result"]), escape(r["units"]), fmt(r.get("per_accelerator")),
        )
    console().print(t)


@sub.command("show")
def show_cmd(
    ref: str = typer.Argument(..., help="A ref_id, or a result ID (5.1-0069) for all its rows."),
    db: Optional[str] = db_option(),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Every field of the reference rows with this ref_id or result ID."""
    from gpuparity.results.store import Store

    with Store(db) as store:
        rows = [r for r in store.references() if ref in (r["ref_id"], r.get("result_id"))]
    if not rows:
        raise UserError(f"no reference result '{ref}' (see `gpuparity reference list`)")
    rows.sort(key=lambda r: r["ref_id"])
    if as_json:
        print_json(rows)
        return
    from rich.table import Table

    c = console()
    for r in rows:
        t = Table(title=escape(r["ref_id"]), show_header=False)
        t.add_column("field")
        t.add_column("value")
        for k, v in r.items():
            if isinstance(v, dict):
                v = ", ".join(f"{a} {b}" for a, b in v.items()) or "-"
            t.add_row(k, escape(fmt(v) if isinstance(v, float) else v if v not in (None, "") else "-"))
        c.print(t)


def register(app: typer.Typer) -> None:
    app.add_typer(sub, name="reference")
