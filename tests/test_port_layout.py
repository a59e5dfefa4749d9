"""The port package stays a set of small modules, one job each, a newcomer can find by name."""

from __future__ import annotations

from pathlib import Path

PORT = Path(__file__).resolve().parents[1] / "src" / "gpuparity" / "port"
LIMIT = 500  # lines


def test_no_port_module_is_over_the_limit():
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in PORT.glob("*.py")}
    assert len(sizes) > 20
    assert {name: n for name, n in sizes.items() if n > LIMIT} == {}


def test_every_port_module_says_what_it_is_for():
    """A module docstring on each (what the file's one job is), __init__ aside."""
    import ast

    missing = [p.name for p in sorted(PORT.glob("*.py")) if p.name != "__init__.py"
               and not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))]
    assert missing == []
