"""The plotly.js a report carries: the smallest bundle that draws its charts, inline, compressed.

plotly.py ships only the full plotly.js (4.8 MB: every trace type, 98% of a report). Every chart
of the report is a scatter or a bar, which plotly.js's "basic" bundle draws (scatter, bar, pie:
1.2 MB). That bundle is shipped in vendor/ gzip-compressed: the same plotly.js version as the
plotly.py the figures are made with (a test checks), from the npm package
plotly.js-basic-dist-min, refreshed by scripts/vendor_plotly.sh; nothing is built at install time.
The report holds it base64-encoded (530 KB) and the browser unpacks it with DecompressionStream
(Chromium 80+, Firefox 113+, Safari 16.4+), then draws the charts. A figure with another trace
type gets the full bundle the same way (about 1.9 MB), so a new chart never draws blank.
Charts stay interactive (hover, zoom, legend toggles); only the bundle shrinks.
"""

from __future__ import annotations

import base64
import functools
import gzip
from importlib import resources

BASIC_TRACES = frozenset({"scatter", "bar", "pie"})      # what plotly.js-basic-dist-min registers
BASIC = "vendor/plotly-basic.min.js.gz"


def trace_types(figures: list[dict]) -> set[str]:
    """The trace types of figures as plotly JSON ({"data": [...], "layout": ...})."""
    return {t.get("type") or "scatter" for f in figures for t in f.get("data") or []}


@functools.lru_cache(maxsize=2)
def _packed(basic: bool) -> str:
    """The bundle, gzip-compressed and base64-encoded."""
    if basic:
        data = resources.files("gpuparity.report").joinpath(BASIC).read_bytes()
    else:
        import plotly.offline

        data = gzip.compress(plotly.offline.get_plotlyjs().encode(), compresslevel=9, mtime=0)
    return base64.b64encode(data).decode("ascii")


def script(figures: list[dict]) -> str:
    """The text of the <script> element that loads plotly.js: it sets window.gpuparityPlotly,
    a promise of the Plotly object, to draw with once it resolves (report.html.j2)."""
    packed = _packed(trace_types(figures) <= BASIC_TRACES)
    return ("window.gpuparityPlotly = (async function () {"
            "var bytes = Uint8Array.from(atob(\"" + packed + "\"), function (c) { return c.charCodeAt(0); });"
            "var text = await new Response(new Blob([bytes]).stream()"
            ".pipeThrough(new DecompressionStream(\"gzip\"))).text();"
            "var s = document.createElement(\"script\"); s.textContent = text; document.head.appendChild(s);"
            "return window.Plotly;})();")


def bundle_version(basic: bool) -> str:
    """'4.1.1': the plotly.js version named in a bundle's header comment."""
    import re

    if basic:
        head = gzip.decompress(resources.files("gpuparity.report").joinpath(BASIC).read_bytes())[:300].decode()
    else:
        import plotly.offline

        head = plotly.offline.get_plotlyjs()[:300]
    found = re.search(r"plotly\.js .*?v(\d+\.\d+\.\d+)", head)
    return found.group(1) if found else ""
