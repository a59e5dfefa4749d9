"""Shared fixtures: an isolated store and data dir per test, and a CLI runner in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def tmp_db(tmp_path, monkeypatch):
    """A fresh SQLite store path; also the default store for CLI subprocesses."""
    path = str(tmp_path / "store.db")
    monkeypatch.setenv("GPUPARITY_DB", path)
    monkeypatch.setenv("GPUPARITY_SPOOL", str(tmp_path / "spool"))
    return path


def default_sigint() -> None:
    """A child's preexec_fn: SIGINT at its default. A shell that starts CI in the background hands its
    jobs SIGINT ignored, and Python keeps an ignored SIGINT ignored; a user's Ctrl-C finds the default."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_cli(*args: str, env: dict | None = None, timeout: float = 600, input: str | None = None,
            cwd: str | None = None) -> subprocess.CompletedProcess:
    """Run `python -m gpuparity ARGS` as a user would; returns the completed process."""
    full_env = dict(os.environ)
    full_env.setdefault("HF_HUB_OFFLINE", "1")
    full_env["COLUMNS"] = "200"
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "gpuparity", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, input=input, cwd=cwd)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def quick_suite_run(tmp_path_factory):
    """The quickstart's run, once per test session: `gpuparity run --suite quick -f json -o
    quick-run.json` into its own store (a few minutes on two busy cores). Returns (doc, db, json
    path, env, the run's printed table). $GPUPARITY_QUICK_RUN names an existing quick-run.json to
    reuse instead (imported into the store, so store-reading tests still see it)."""
    import json

    folder = tmp_path_factory.mktemp("quick-suite")
    db, out = str(folder / "s.db"), str(folder / "quick-run.json")
    env = {"GPUPARITY_DB": db, "GPUPARITY_SPOOL": str(folder / "spool")}
    given = os.environ.get("GPUPARITY_QUICK_RUN")
    if given:
        with open(given, encoding="utf-8") as fh, open(out, "w", encoding="utf-8") as dst:
            dst.write(fh.read())
        p = run_cli("import", out, env=env)
        assert p.returncode == 0, p.stderr
        table = run_cli("show", "latest", env=env).stdout
    else:
        p = run_cli("run", "--suite", "quick", "-f", "json", "-o", out, env=env)
        assert p.returncode in (0, 1), p.stderr
        table = p.stdout
    with open(out, encoding="utf-8") as fh:
        return json.load(fh), db, out, env, table
