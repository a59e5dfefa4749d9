"""Port reports: a terminal summary, JSON, CSV statistics, and a self-contained HTML page.

All three carry the same numbers (to_dict builds them once). Every string that comes from
the ported files (paths, code lines, API names, compiler errors) is shown through
walk.shown (bytes that were not UTF-8 appear as \\xNN), then terminal_safe in the terminal
and html.escape in the HTML report.
"""

from __future__ import annotations

import csv
import io
import json
from html import escape
from pathlib import Path

from gpuparity.port.hazards import KINDS, SEVERITIES, SEVERITY
from gpuparity.port.run import FileReport, PortReport
from gpuparity.port.walk import shown
from gpuparity.validate import spreadsheet_safe, terminal_safe

SCHEMA = "gpuparity.port/2"
_SEVERITY_RANK = {s: k for k, s in enumerate(SEVERITIES)}
_SEVERITY_WORDS = {"blocks build": "block the build", "wrong results": "may give wrong results",
                   "performance": "cost performance"}


def _file_dict(f: FileReport) -> dict:
    return {
        "path": shown(f.rel),
        "language": f.language,
        "tokenizer": f.engine,
        "lines": f.lines,
        "changed": f.changed,
        "written_to": shown(f.written) if f.written else None,
        "uses": f.score.uses,
        "supported": f.score.supported,
        "blocking": f.score.blocking,
        "score": f.score.value,
        "needs_human": f.needs_human,
        "by_family": f.by_family(),
        "unsupported": [{"name": shown(u.name), "line": u.line, "family": u.family, "reason": u.reason}
                        for u in f.unsupported],
        "hazards": [{"kind": h.kind, "line": h.line, "severity": h.severity, "detail": shown(h.detail)}
                    for h in f.hazards],
        "rewrites": [{"line": w.line, "what": shown(w.what)} for w in f.rewrites],
        "check": None if f.check is None else {"status": f.check.status, "detail": shown(f.check.detail),
                                               "error": shown(f.check.error),
                                               "original": f.check.original or None,
                                               "original_error": shown(f.check.original_error)},
    }


def to_dict(r: PortReport) -> dict:
    total = r.score
    return {
        "schema": SCHEMA,
        "src": shown(r.src),
        "dst": shown(r.dst) if r.dst else None,
        "dry_run": r.dst is None,
        "examine": r.examine,
        "hip_version": r.hip_version,
        "roc": r.roc,
        "launch": r.launch,
        "toolchain": r.toolchain or None,
        "notes": [shown(n) for n in r.notes],
        "summary": {
            "files": len(r.files),
            "skipped": len(r.skipped),
            "lines": r.lines,
            "uses": total.uses,
            "supported": total.supported,
            "not_converted": total.unsupported,
            "blocking": total.blocking,
            "items": total.items,
            "score": total.value,
            "score_text": total.percent(),
            "needs_human": r.needs_human,
            "hazards": len(r.hazards),
            "hazards_by_severity": r.severity_counts(),
            "by_family": r.by_family(),
            "headline": headline(r),
            "check": r.check_counts() if any(f.check for f in r.files) else None,
            "compile": r.compile.as_dict() if r.compile else None,
            "compile_text": r.compile.text() if r.compile else None,
            "seconds": round(r.seconds, 3),
        },
        "files": [_file_dict(f) for f in r.files],
        "unsupported": [{"file": shown(f.rel), "line": u.line, "name": shown(u.name), "family": u.family,
                         "reason": u.reason} for f in r.files for u in f.unsupported],
        "hazards": [{"file": shown(rel), "line": h.line, "kind": h.kind, "severity": h.severity, "why": h.why,
                     "fix": h.fix, "detail": shown(h.detail), "code": shown(h.code)} for rel, h in _by_severity(r)],
        "skipped": [{"path": shown(s.rel), "reason": shown(s.reason)} for s in r.skipped],
        "run": r.run.as_dict() if r.run is not None else None,
    }


def _by_severity(r: PortReport):
    return sorted(r.hazards, key=lambda fh: _SEVERITY_RANK[fh[1].severity])


def headline(r: PortReport) -> str:
    """One sentence a person can act on: what was done, and what is left for them."""
    total = r.score
    if not total.items:
        return "Nothing to port: no CUDA API use and no AMD hazard found."
    sev = r.severity_counts()
    parts = [f"{n} {_SEVERITY_WORDS[s]}" for s, n in sev.items() if n]
    left = f"{r.needs_human} place(s) need a human"
    detail = []
    if total.unsupported:
        detail.append(f"{total.unsupported} API use(s) with no HIP counterpart")
    if parts:
        detail.append("hazards: " + ", ".join(parts))
    return (f"{total.percent()} of the port was done automatically ({total.supported} of {total.items} items); "
            f"{left}" + (f" ({'; '.join(detail)})." if detail else "."))


def write_json(r: PortReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_dict(r), indent=2) + "\n", encoding="utf-8")


def to_csv(r: PortReport) -> str:
    """HIPIFY-style statistics: converted / not converted CUDA references per file and API
    family, then the tree's totals (file '*')."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["file", "family", "converted", "not_converted"])
    for f in r.files:
        for family, row in f.by_family().items():
            w.writerow([spreadsheet_safe(shown(f.rel)), family, row["converted"], row["not_converted"]])
    for family, row in r.by_family().items():
        w.writerow(["*", family, row["converted"], row["not_converted"]])
    return out.getvalue()


def write_csv(r: PortReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_csv(r), encoding="utf-8")


TERMINAL_LIMIT = 50  # rows per section in the terminal; the JSON and HTML reports list all


def _capped(rows: list[str], what: str) -> list[str]:
    if len(rows) <= TERMINAL_LIMIT:
        return rows
    return rows[:TERMINAL_LIMIT] + [f"  ... and {len(rows) - TERMINAL_LIMIT} more {what} (see --json / --html)"]


def _t(text: str) -> str:
    return terminal_safe(shown(text))


def _target(r: PortReport) -> str:
    return f"target HIP {r.hip_version}" + (" (--roc: ROCm libraries)" if r.roc else "")


def summary_lines(r: PortReport) -> list[str]:
    out = [f"port: {len(r.files)} file(s), {r.lines} lines, {_target(r)}"
           + (f" ({r.toolchain})" if r.toolchain else "")]
    out.append(f"portability score: {headline(r)}")
    if r.compile:
        out.append(f"compile pass rate: {_t(r.compile.text())}")
    rows = []
    for f in r.files:
        line = f"  {_t(f.rel)}: score {f.score.percent()}, {f.needs_human} need a human, {len(f.hazards)} hazard(s)"
        if f.check is not None:
            line += f", check: {f.check.status}"
            if f.check.status not in ("pass",) and f.check.detail:
                line += f" ({_t(f.check.detail)})"
            if f.check.original:
                line += f", original with nvcc: {f.check.original}"
        rows.append(line)
    out += _capped(rows, "files")
    out += _capped([f"  unsupported {_t(f.rel)}:{u.line}: {_t(u.name)} - {u.reason}"
                    for f in r.files for u in f.unsupported], "unsupported uses")
    out += _capped([f"  hazard {_t(rel)}:{h.line}: {h.kind} [{h.severity}]" + (f" ({_t(h.detail)})" if h.detail else "")
                    for rel, h in _by_severity(r)], "hazards")
    out += [f"  skipped {_t(s.rel)}: {_t(s.reason)}" for s in r.skipped]  # always all: a skip must be seen
    for note in r.notes:
        out.append(f"  note: {_t(note)}")
    if r.check_counts() and any(f.check for f in r.files):
        counts = ", ".join(f"{k}: {v}" for k, v in r.check_counts().items() if v)
        out.append(f"check: {counts}")
    return out


def examine_lines(r: PortReport) -> list[str]:
    """--examine: CUDA references converted / not converted, per API family and per file."""
    total = r.score
    out = [f"examine: {len(r.files)} file(s), {r.lines} lines, {_target(r)}; nothing written",
           f"{'family':<12} {'converted':>10} {'not converted':>14}"]
    for family, row in r.by_family().items():
        out.append(f"{family:<12} {row['converted']:>10} {row['not_converted']:>14}")
    out.append(f"{'total':<12} {total.supported:>10} {total.unsupported:>14}")
    rows = []
    for f in r.files:
        fam = ", ".join(f"{k} {v['converted']}/{v['not_converted']}" for k, v in f.by_family().items())
        rows.append(f"  {_t(f.rel)}: {f.score.supported} converted, {f.score.unsupported} not converted"
                    + (f" ({fam})" if fam else ""))
    out += _capped(rows, "files")
    out += [f"  skipped {_t(s.rel)}: {_t(s.reason)}" for s in r.skipped]
    return out


# ---------------------------------------------------------------- HTML

_CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}
h1{font-size:1.4em;overflow-wrap:anywhere}h2{font-size:1.15em;margin-top:1.8em}
table{border-collapse:collapse;width:100%;table-layout:fixed;font-size:.9em}
th,td{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere;
word-break:break-word}
th{background:#f4f4f4}code,pre{font-family:ui-monospace,monospace;font-size:.9em;white-space:pre-wrap;
overflow-wrap:anywhere}
.score{font-size:2em;font-weight:bold;margin:.2em 0}.headline{font-size:1.1em}
.ok{color:#16794c}.bad{color:#b3261e}.warn{color:#9a6700}.muted{color:#666}
.sev-blocks{color:#b3261e;font-weight:bold}.sev-wrong{color:#9a6700;font-weight:bold}.sev-perf{color:#555}
"""
_SEV_CLASS = {"blocks build": "sev-blocks", "wrong results": "sev-wrong", "performance": "sev-perf"}


def _status_class(status: str) -> str:
    return {"pass": "ok", "fail-translation": "bad", "fail-original": "warn"}.get(status, "muted")


def _h(text: str) -> str:
    """Text from the ported files for HTML: escaped, control characters shown as \\xNN."""
    return escape(terminal_safe(shown(text)))


def _table(headers: list[tuple[str, int]], rows: list[list[str]]) -> str:
    """A table whose columns wrap (fixed layout, widths in percent), so it never overflows."""
    cols = "".join(f"<col style='width:{w}%'>" for _, w in headers)
    head = "".join(f"<th>{escape(h)}</th>" for h, _ in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><colgroup>{cols}</colgroup><tr>{head}</tr>{body}</table>"


def _severity(sev: str) -> str:
    return f"<span class='{_SEV_CLASS[sev]}'>{escape(sev)}</span>"


def to_html(r: PortReport) -> str:
    d = to_dict(r)["summary"]
    sev = d["hazards_by_severity"]
    mode = "examined only (nothing written)" if r.examine else (
        "dry run" if r.dst is None else "written to <code>" + _h(r.dst) + "</code>")
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>gpuparity port: {_h(r.src)}</title><style>{_CSS}</style></head><body>",
        f"<h1>CUDA &rarr; HIP port report: <code>{_h(r.src)}</code></h1>",
        f"<p class='score' id='score'>{escape(d['score_text'])} automatic</p>",
    ]
    if r.compile:
        rate = r.compile.rate
        parts.append(f"<p class='score' id='compile'>{'n/a' if rate is None else f'{100 * rate:.0f}%'} compile</p>"
                     f"<p id='compile-text'>Compile pass rate (measured): {_h(r.compile.text())}</p>")
    parts += [
        f"<p class='headline' id='headline'>{escape(d['headline'])}</p>",
        f"<p>{_h(_target(r))}; launches: {escape(r.launch)}; {mode}"
        f"{'; ' + _h(r.toolchain) if r.toolchain else ''}; {len(r.files)} files, {r.lines} lines.</p>",
    ]
    for note in r.notes:
        parts.append(f"<p class='warn'>{_h(note)}</p>")
    parts.append("<h2>What needs a human</h2>")
    parts.append(_table([("Kind", 40), ("Count", 15), ("What it means", 45)], [
        [_severity("blocks build"), str(sev["blocks build"]), "the AMD build fails until fixed; each lowers the score"],
        [_severity("wrong results"), str(sev["wrong results"]), "builds, but can fail or compute wrong values on AMD"],
        [_severity("performance"), str(sev["performance"]), "works; runs slower than it could"],
        ["API uses with no HIP counterpart", str(d["not_converted"]), "left as CUDA names; port by hand"],
    ]))
    rows = []
    for f in r.files:
        chk = ""
        if f.check is not None:
            chk = (f"<span class='{_status_class(f.check.status)}'>{escape(f.check.status)}</span>"
                   f"<br><span class='muted'>{_h(f.check.detail)}</span>")
            if f.check.error:
                chk += f"<br><code>{_h(f.check.error)}</code>"
            if f.check.original:
                chk += f"<br><span class='muted'>original with nvcc: {escape(f.check.original)}</span>"
        blocking = f" ({f.score.blocking} blocking)" if f.score.blocking else ""
        rows.append([f"<code>{_h(f.rel)}</code>", str(f.lines), escape(f.score.percent()), str(f.score.supported),
                     str(f.score.unsupported), f"{len(f.hazards)}{blocking}", str(f.needs_human), chk])
    parts.append("<h2>Files</h2>")
    parts.append(_table([("File", 26), ("Lines", 7), ("Score", 8), ("Converted", 9), ("Not converted", 10),
                         ("Hazards", 10), ("Needs a human", 9), ("Check", 21)], rows))
    parts.append("<h2>Hazards</h2>")
    if r.hazards:
        rows = []
        for rel, h in _by_severity(r):
            detail = f"<br><span class='muted'>{_h(h.detail)}</span>" if h.detail else ""
            rows.append([f"<code>{_h(rel)}:{h.line}</code>", _severity(h.severity), f"{escape(h.kind)}{detail}",
                         f"<code>{_h(h.code)}</code>", escape(h.why), escape(h.fix)])
        parts.append(_table([("Where", 14), ("Severity", 12), ("Kind", 13), ("Code", 23), ("Why it breaks on AMD", 19),
                             ("Suggested fix", 19)], rows))
    else:
        parts.append("<p class='ok'>No hazards found.</p>")
    unsupported = [(f.rel, u) for f in r.files for u in f.unsupported]
    parts.append("<h2>Unsupported API uses</h2>")
    if unsupported:
        parts.append(_table([("Where", 25), ("CUDA API", 25), ("Family", 12), ("Reason", 38)],
                            [[f"<code>{_h(rel)}:{u.line}</code>", f"<code>{_h(u.name)}</code>", escape(u.family),
                              escape(u.reason)] for rel, u in unsupported]))
    else:
        parts.append("<p class='ok'>Every CUDA API use has a HIP counterpart on this target.</p>")
    parts.append("<h2>CUDA references by API family</h2>")
    parts.append(_table([("Family", 40), ("Converted", 30), ("Not converted", 30)],
                        [[escape(k), str(v["converted"]), str(v["not_converted"])] for k, v in d["by_family"].items()]))
    if r.skipped:
        parts.append("<h2>Skipped</h2>")
        parts.append(_table([("Path", 50), ("Reason", 50)],
                            [[f"<code>{_h(s.rel)}</code>", _h(s.reason)] for s in r.skipped]))
    parts.append("<h2>Hazard kinds</h2>")
    parts.append(_table([("Kind", 18), ("Severity", 12), ("Why", 35), ("Fix", 35)],
                        [[escape(k), _severity(SEVERITY[k]), escape(why), escape(fix)]
                         for k, (why, fix) in KINDS.items()]))
    parts.append("<p class='muted'>Score: the share of items (CUDA API uses, plus hazards that block the build) "
                 "the translation handled on its own: how much of the work was done, not whether the result is "
                 "right. The compile pass rate (with --check) is measured: the share of translated files hipcc "
                 "compiles, beside the originals' share with nvcc. API map from ROCm HIPIFY's tables (MIT) and "
                 "torch.utils.hipify; generated by gpuparity port.</p></body></html>\n")
    return "".join(parts)


def write_html(r: PortReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_html(r), encoding="utf-8")
