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
