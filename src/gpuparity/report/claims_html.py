"""`gpuparity claims check -f html`: the thread's question at a glance, in one offline file: every claim's
verdict with its measured size and URLs, a small chart per claim (claimed band, each measured ratio),
ROCm's gap to CUDA over rounds per generation pair, and the same systems across rounds with their
stacks. Built like the report (report/html.py): plotly.js inline once, text escaped by Jinja2, URLs
linked only when they are http(s)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from importlib import resources

from gpuparity.report import claims_plots

_LINK = re.compile(r"^https?://[^\s<>\"']{1,800}$")


def safe_url(url) -> str | None:
    """A URL a page may link to (http or https, no spaces or quotes); anything else is shown as text."""
    return url if isinstance(url, str) and _LINK.match(url) else None


def claim_figures(results: list[dict], prefix: str = "claim-chart") -> list[dict]:
    """[{id, claim, figure}] one chart per claim (the report's claims section takes these too)."""
    return [{"id": f"{prefix}-{i}", "claim": c["id"], "figure": json.loads(claims_plots.claim_chart(c).to_json())}
            for i, c in enumerate(results)]


def _items(results: list[dict], charts: list[dict]) -> list[dict]:
    from gpuparity.evidence.claims_views import measured_lines, urls_of

    out = []
    for c, chart in zip(results, charts, strict=True):
        urls = urls_of(c)
        out.append({**c, "chart": chart["id"], "measured": measured_lines(c, 10**6),
                    "links": [{"url": u, "href": safe_url(u)} for u in urls],
                    "cited": [{"text": e["summary"], "href": safe_url(e.get("url"))}
                              for e in c.get("evidence") or [] if e.get("kind") != "check" and not e.get("missing")],
                    "lacking": [e["summary"] for e in c.get("evidence") or [] if e.get("missing")]})
    return out


def render_claims_html(results: list[dict], extras: dict | None = None, title: str = "ROCm vs CUDA: the claims, "
                       "checked") -> str:
    from jinja2 import Environment

    from gpuparity.report import plotlyjs
    from gpuparity.report.script_json import script_json
    from gpuparity.version import __version__

    extras = extras or {"gaps": [], "trend": []}
    charts = claim_figures(results)
    gaps = [{"id": f"gap-chart-{i}", "pair": g["pair"], "about": g["about"],
             "figure": json.loads(claims_plots.gap_chart(g).to_json())} for i, g in enumerate(extras["gaps"])]
    by_part: dict[tuple, list] = {}         # MLPerf Inference and Training rounds apart: two programmes
    for s in extras["trend"]:
        by_part.setdefault((s["part"], s["source"]), []).append(s)
    trends = [{"id": f"trend-chart-{i}", "part": part, "source": source, "items": items,
               "figure": json.loads(claims_plots.trend_chart(f"{part.upper()} ({source})", items).to_json())}
              for i, ((part, source), items) in enumerate(sorted(by_part.items()))]
    figures = [{"id": x["id"], "figure": x["figure"]} for x in charts + gaps + trends]
    counts = {v: sum(1 for c in results if c["verdict"] == v) for v in dict.fromkeys(c["verdict"] for c in results)}
    env = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
    template = env.from_string(resources.files("gpuparity.report").joinpath("templates/claims.html.j2")
                               .read_text(encoding="utf-8"))
    return template.render(title=title, version=__version__,
                           generated=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           items=_items(results, charts), counts=counts, gaps=gaps, trends=trends,
                           plotlyjs=plotlyjs.script([f["figure"] for f in figures]), figures_json=script_json(figures))
