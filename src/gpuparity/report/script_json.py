"""Figures as JSON inside a <script> element of a report page (report/html.py, report/claims_html.py)."""

from __future__ import annotations

import json


def script_json(obj) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' survives, nor the JS line separators."""
    text = json.dumps(obj, separators=(",", ":"), default=str)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text
