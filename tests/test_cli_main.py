"""The CLI's look: --version, plain help text (no rich escapes), choices and argument help shown,
every option of these verbs documented."""

from __future__ import annotations

import re

import pytest
from test_compare import main_inprocess

import gpuparity

OWN_VERBS = ["report", "trend", "show", "list", "import", "info", "specs"]


def test_version(cli):
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == (
        f"gpuparity {gpuparity.__version__} (benchmark version {gpuparity.BENCHMARK_VERSION})")
    assert cli("-V").stdout == r.stdout and not r.stderr


def test_no_arguments_prints_help(capsys):
    code, out, err = main_inprocess([], capsys)
    text = out + err
    assert "Usage: " in text and "--version" in text and "report" in text and "Traceback" not in text


@pytest.mark.parametrize("verb", ["compare", "run", *OWN_VERBS])
def test_help_is_plain_text(verb, capsys):
    code, out, err = main_inprocess([verb, "--help"], capsys)
    assert code == 0, err
    assert "\\[" not in out                                   # rich's escape, printed as plain text
    if verb in ("compare", "run", "report", "trend", "list", "show"):
        assert "[default: " in out
    assert "Positional arguments" not in out                                       # one list of arguments


def test_choices_and_argument_help_are_shown(capsys):
    _, out, _ = main_inprocess(["report", "--help"], capsys)
    assert "-f, --format [html|markdown]" in out and "[default: html]" in out
    assert re.search(r"\[A\]\s+Side A: an exported run file", out)
    _, out, _ = main_inprocess(["trend", "--help"], capsys)
    assert "--by [all|date|label|stack|torch|driver|run]" in out and "[table|markdown|json]" in out
    _, out, _ = main_inprocess(["show", "--help"], capsys)
    assert re.search(r"\[RUN\]\s+Run id, a unique prefix, or 'latest'", out)


def test_every_option_of_these_verbs_is_documented():
    import typer.main

    from gpuparity.cli.main import _register_all, app

    _register_all()
    group = typer.main.get_command(app)
    for verb in OWN_VERBS:
        command = group.commands[verb]
        assert command.help, verb
        for param in command.params:
            assert (param.help or "").strip(), f"{verb} {param.name} has no help text"


def test_bad_choice_is_one_line_exit_2(capsys):
    code, _, err = main_inprocess(["trend", "--format", "yaml"], capsys)
    assert code == 2 and "Invalid value for '--format' / '-f': 'yaml' is not one of" in err
    assert "Traceback" not in err
