"""The layers are a contract (pyproject.toml's [tool.importlinter], run as `lint-imports` in CI):
the import graph has no loop at all, and the contract really refuses an import that goes up."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "gpuparity"
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"]


def test_no_module_imports_another_that_imports_it_back():
    """At any distance and through the package's __init__ too (the linter's acyclic contract looks
    at siblings of one package at a time)."""
    graph = grimp.build_graph("gpuparity", cache_dir=None)
    loops = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if graph.chain_exists(importer=imported, imported=module):
                loops.append(" -> ".join([module, *graph.find_shortest_chain(importer=imported, imported=module)]))
    assert loops == []


def _lint(package_parent: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(package_parent))
    return subprocess.run([*LINT, str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"], cwd=package_parent,
                          env=env, capture_output=True, text=True, timeout=300)


def test_the_contract_refuses_an_upward_import(tmp_path):
    """A copy of the package passes; the same copy with measure/ importing the report does not,
    and the linter names the import."""
    shutil.copytree(PACKAGE, tmp_path / "gpuparity",
                    ignore=lambda d, names: [n for n in names if not (n.endswith(".py") or os.path.isdir(os.path.join(d, n)))
                                             or n == "__pycache__"])
    ok = _lint(tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    stats = tmp_path / "gpuparity" / "measure" / "stats.py"
    stats.write_text(stats.read_text() + "\n\ndef _upward():\n    from gpuparity.report import html  # noqa: F401\n")
    broken = _lint(tmp_path)
    assert broken.returncode == 1
    assert "gpuparity.measure is not allowed to import gpuparity.report" in broken.stdout
    assert "gpuparity.measure.stats -> gpuparity.report.html" in broken.stdout
