"""`port --run`'s table: per program, built, ran, exit status, verdict, the comparison with
--compare-to, and why one did not pass."""

from __future__ import annotations

from gpuparity.cli.common import console, escape

_STYLE = {"pass": "green", "fail": "red", "timed out": "red", "crashed": "red", "build failed": "red",
          "not runnable": "yellow", "no verdict": "yellow"}


def print_runs(report) -> None:
    """report: port.run_programs.RunReport."""
    from rich import box
    from rich.table import Table

    from gpuparity.port.walk import shown

    compare = report.compare_to is not None
    table = Table(box=box.SIMPLE_HEAD, title=f"port --run on {escape(report.hip_cpu)}", title_justify="left")
    for header in ("program", "built", "ran", "exit", "verdict", "status") + (("compare",) if compare else ()) + \
            ("seconds", "detail"):
        table.add_column(header, justify="right" if header in ("exit", "seconds") else "left",
                         overflow="fold")
    for p in report.programs:
        row = [escape(shown(p.program)), "yes" if p.built else "no", "yes" if p.ran else "no",
               "" if p.exit_status is None else str(p.exit_status), escape(p.verdict),
               f"[{_STYLE.get(p.status, 'white')}]{escape(p.status)}[/]"]
        detail = p.detail
        if compare:
            c = p.compare or {}
            row.append(escape(c.get("outcome", "")))
            if c.get("detail"):
                detail = "; ".join(x for x in (detail, f"compare: {c['detail']}") if x)
        row += [f"{p.build_seconds + p.run_seconds:.1f}", escape(shown(detail))]
        table.add_row(*row)
    con = console()
    con.print(table)
    counts = ", ".join(f"{k}: {v}" for k, v in report.counts().items())
    con.print(f"run: {counts}" + (f"; timeout {report.timeout_s:g} s" if report.timeout_s else ""))
