"""Port reports: a terminal summary, JSON, and a self-contained HTML page.

Every string that comes from the ported files (paths, code lines, API names, compiler
errors) goes through html.escape in the HTML report.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from gpuparity.port.hazards import KINDS
from gpuparity.port.run import PortReport

SCHEMA = "gpuparity.port/1"


def to_dict(r: PortReport) -> dict:
    total = r.score
    files = []
    for f in r.files:
        files.append({
            "path": f.rel,
            "language": f.language,
            "tokenizer": f.engine,
            "lines": f.lines,
            "changed": f.changed,
            "written_to": f.written,
            "uses": f.score.uses,
            "supported": f.score.supported,
            "score": f.score.value,
            "unsupported": [{"name": u.name, "line": u.line, "family": u.family, "reason": u.reason}
                            for u in f.unsupported],
            "hazards": [{"kind": h.kind, "line": h.line, "detail": h.detail} for h in f.hazards],
            "rewrites": [{"line": w.line, "what": w.what} for w in f.rewrites],
            "check": None if f.check is None else {"status": f.check.status, "detail": f.check.detail,
                                                   "error": f.check.error},
        })
    return {
        "schema": SCHEMA,
        "src": r.src,
        "dst": r.dst,
        "dry_run": r.dst is None,
        "hip_version": r.hip_version,
        "launch": r.launch,
        "toolchain": r.toolchain or None,
        "notes": r.notes,
        "summary": {
            "files": len(r.files),
            "skipped": len(r.skipped),
            "lines": r.lines,
            "uses": total.uses,
            "supported": total.supported,
            "score": total.value,
            "hazards": len(r.hazards),
            "check": r.check_counts() if any(f.check for f in r.files) else None,
            "seconds": round(r.seconds, 3),
        },
        "files": files,
        "unsupported": [{"file": f.rel, "line": u.line, "name": u.name, "family": u.family, "reason": u.reason}
                        for f in r.files for u in f.unsupported],
        "hazards": [{"file": rel, "line": h.line, "kind": h.kind, "why": h.why, "fix": h.fix,
                     "detail": h.detail, "code": h.code} for rel, h in r.hazards],
        "skipped": [{"path": s.rel, "reason": s.reason} for s in r.skipped],
    }


def write_json(r: PortReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_dict(r), indent=2) + "\n", encoding="utf-8")


TERMINAL_LIMIT = 50  # rows per section in the terminal; the JSON and HTML reports list all


def _capped(rows: list[str], what: str) -> list[str]:
    if len(rows) <= TERMINAL_LIMIT:
        return rows
    return rows[:TERMINAL_LIMIT] + [f"  ... and {len(rows) - TERMINAL_LIMIT} more {what} (see --json / --html)"]


def summary_lines(r: PortReport) -> list[str]:
    total = r.score
    out = [f"port: {len(r.files)} file(s), {r.lines} lines, target HIP {r.hip_version}"
           + (f" ({r.toolchain})" if r.toolchain else "")]
    out.append(f"portability score: {total.percent()} ({total.supported}/{total.uses} CUDA API uses map to HIP)")
    rows = []
    for f in r.files:
        line = f"  {f.rel}: score {f.score.percent()}, {len(f.hazards)} hazard(s)"
        if f.check is not None:
            line += f", check: {f.check.status}"
            if f.check.status not in ("pass",) and f.check.detail:
                line += f" ({f.check.detail})"
        rows.append(line)
    out += _capped(rows, "files")
    out += _capped([f"  unsupported {f.rel}:{u.line}: {u.name} - {u.reason}"
                    for f in r.files for u in f.unsupported], "unsupported uses")
    out += _capped([f"  hazard {rel}:{h.line}: {h.kind}" + (f" ({h.detail})" if h.detail else "")
                    for rel, h in r.hazards], "hazards")
    out += [f"  skipped {s.rel}: {s.reason}" for s in r.skipped]  # always all: a skip must be seen
    for note in r.notes:
        out.append(f"  note: {note}")
    if r.check_counts() and any(f.check for f in r.files):
        counts = ", ".join(f"{k}: {v}" for k, v in r.check_counts().items() if v)
        out.append(f"check: {counts}")
    return out


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}
table{border-collapse:collapse;width:100%;font-size:.9em}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}code,pre{font-family:ui-monospace,monospace;font-size:.9em}
.score{font-size:2em;font-weight:bold}.ok{color:#16794c}.bad{color:#b3261e}.warn{color:#9a6700}
.muted{color:#666}
"""


def _status_class(status: str) -> str:
    return {"pass": "ok", "fail-translation": "bad", "fail-original": "warn"}.get(status, "muted")


def to_html(r: PortReport) -> str:
    e = escape
    total = r.score
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>gpuparity port: {e(r.src)}</title><style>{_CSS}</style></head><body>",
        f"<h1>CUDA &rarr; HIP port report: <code>{e(r.src)}</code></h1>",
        f"<p>Target HIP {e(r.hip_version)}; launches: {e(r.launch)}; "
        f"{'dry run' if r.dst is None else 'written to <code>' + e(r.dst) + '</code>'}"
        f"{'; ' + e(r.toolchain) if r.toolchain else ''}.</p>",
        f"<p class='score'>{e(total.percent())}</p>",
        f"<p>{total.supported} of {total.uses} CUDA API uses map to a supported HIP API "
        f"({len(r.files)} files, {r.lines} lines, {len(r.hazards)} hazards).</p>",
    ]
    for note in r.notes:
        parts.append(f"<p class='warn'>{e(note)}</p>")
    parts.append("<h2>Files</h2><table><tr><th>File</th><th>Lines</th><th>Score</th><th>Uses</th>"
                 "<th>Unsupported</th><th>Hazards</th><th>Check</th></tr>")
    for f in r.files:
        chk = ""
        if f.check is not None:
            chk = (f"<span class='{_status_class(f.check.status)}'>{e(f.check.status)}</span>"
                   f"<br><span class='muted'>{e(f.check.detail)}</span>")
            if f.check.error:
                chk += f"<br><code>{e(f.check.error)}</code>"
        parts.append(f"<tr><td><code>{e(f.rel)}</code></td><td>{f.lines}</td><td>{e(f.score.percent())}</td>"
                     f"<td>{f.score.uses}</td><td>{f.score.unsupported}</td><td>{len(f.hazards)}</td>"
                     f"<td>{chk}</td></tr>")
    parts.append("</table>")
    parts.append("<h2>Hazards</h2>")
    if r.hazards:
        parts.append("<table><tr><th>Where</th><th>Kind</th><th>Code</th><th>Why it breaks on AMD</th>"
                     "<th>Suggested fix</th></tr>")
        for rel, h in r.hazards:
            detail = f"<br><span class='muted'>{e(h.detail)}</span>" if h.detail else ""
            parts.append(f"<tr><td><code>{e(rel)}:{h.line}</code></td><td>{e(h.kind)}{detail}</td>"
                         f"<td><code>{e(h.code)}</code></td><td>{e(h.why)}</td><td>{e(h.fix)}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p class='ok'>No hazards found.</p>")
    unsupported = [(f.rel, u) for f in r.files for u in f.unsupported]
    parts.append("<h2>Unsupported API uses</h2>")
    if unsupported:
        parts.append("<table><tr><th>Where</th><th>CUDA API</th><th>Family</th><th>Reason</th></tr>")
        for rel, u in unsupported:
            parts.append(f"<tr><td><code>{e(rel)}:{u.line}</code></td><td><code>{e(u.name)}</code></td>"
                         f"<td>{e(u.family)}</td><td>{e(u.reason)}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p class='ok'>Every CUDA API use has a HIP counterpart on this target.</p>")
    if r.skipped:
        parts.append("<h2>Skipped</h2><table><tr><th>Path</th><th>Reason</th></tr>")
        for s in r.skipped:
            parts.append(f"<tr><td><code>{e(s.rel)}</code></td><td>{e(s.reason)}</td></tr>")
        parts.append("</table>")
    parts.append("<h2>Hazard kinds</h2><table><tr><th>Kind</th><th>Why</th><th>Fix</th></tr>")
    for kind, (why, fix) in KINDS.items():
        parts.append(f"<tr><td>{e(kind)}</td><td>{e(why)}</td><td>{e(fix)}</td></tr>")
    parts.append("</table><p class='muted'>API map from ROCm HIPIFY's tables (MIT) and torch.utils.hipify; "
                 "generated by gpuparity port.</p></body></html>\n")
    return "".join(parts)


def write_html(r: PortReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_html(r), encoding="utf-8")
