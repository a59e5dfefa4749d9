"""One output convention (issue 40): every verb that prints takes -f/--format and -o/--output;
`-f json` prints JSON on stdout, `-f json -o FILE` writes the same JSON to FILE (through the
output guard), a table goes to FILE as it would print, and the old spellings (`--json` flags,
`run --json FILE`, `port --json FILE`, `port -o DIR`) still work, the FILE ones with a note."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from conftest import run_cli
from test_compare import main_inprocess

DATA = Path(__file__).parent / "data"
V51 = DATA / "mlperf_inference_v5.1_summary_results.json"
SAMPLE = str(DATA / "cuda_samples" / "vector_add_streams.cu")
RUN = ["run", "memory", "--set", "op=copy", "--set", "elements=4096", "--in-process", "--no-store"]

# verb: (its command, the same command in the spelling it had before -f/-o)
VERBS = {
    "list": (["list"], ["list", "--json"]),
    "show": (["show", "latest"], ["show", "latest", "--json"]),
    "plan": (["plan", "memory", "--spec", "h200-sxm"], ["plan", "memory", "--spec", "h200-sxm", "--json"]),
    "info": (["info"], ["info", "--json"]),
    "specs": (["specs", "h200-sxm", "mi300x"], ["specs", "h200-sxm", "mi300x", "--json"]),
    "reference import": (["reference", "import", "mlperf", str(V51)],
                         ["reference", "import", "mlperf", str(V51), "--json"]),
    "reference list": (["reference", "list", "-n", "5"], ["reference", "list", "-n", "5", "--json"]),
    "reference show": (["reference", "show", "5.1-0001"], ["reference", "show", "5.1-0001", "--json"]),
    "reference compare": (["reference", "compare", "mi325x", "h200"],
                          ["reference", "compare", "mi325x", "h200", "--json"]),
    "compare": (["compare", "label=one", "label=two"], ["compare", "label=one", "label=two", "--format", "json"]),
    "trend": (["trend", "--by", "label"], ["trend", "--by", "label", "--format", "json"]),
    "claims check": (["claims", "check"], ["claims", "check", "--format", "json"]),
    "export": (["export", "latest"], ["export", "latest", "-o", "-"]),
    "run": (RUN, [*RUN, "--json", "-"]),
    "port": (["port", SAMPLE, "--examine"], ["port", SAMPLE, "--examine", "--json", "-"]),
}
TABLES = [v for v in VERBS if v not in ("export", "run", "info")]     # a table that prints the same twice


def comparable(verb: str, doc):
    """What two outputs of the verb share: all of it, but for what is measured anew each time."""
    if verb == "run":
        return sorted(doc), [(r["workload"], r["params"], r["status"]) for r in doc["results"]]
    if verb == "port":           # its summary says how long the translation took
        return {**doc, "summary": {k: v for k, v in doc["summary"].items() if k != "seconds"}}
    if verb == "plan":           # when it was made
        return {k: v for k, v in doc.items() if k != "created_at"}
    if verb == "info":
        return sorted(doc), [doc.get(k) for k in ("backend", "product", "arch_target", "torch_version")]
    return doc


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A real store: two labelled runs of a tiny CPU workload, and an MLPerf summary imported."""
    folder = tmp_path_factory.mktemp("convention")
    env = {"GPUPARITY_DB": str(folder / "s.db"), "GPUPARITY_SPOOL": str(folder / "spool")}
    for label in ("one", "two"):
        p = run_cli(*RUN[:-1], "--label", label, env=env)
        assert p.returncode in (0, 1), p.stderr
    p = run_cli("reference", "import", "mlperf", str(V51), env=env)
    assert p.returncode == 0, p.stderr
    return env


@pytest.fixture
def env(store, monkeypatch, tmp_path):
    for k, v in store.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(tmp_path)
    return store


def sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.mark.parametrize("verb", list(VERBS))
def test_f_json_prints_json_and_o_writes_the_same_json(env, capsys, tmp_path, verb):
    args = VERBS[verb][0]
    code, out, err = main_inprocess([*args, "-f", "json"], capsys)
    assert code == 0, err
    printed = json.loads(out)                        # stdout is the JSON alone
    target = tmp_path / "out.json"
    code, out, err = main_inprocess([*args, "-f", "json", "-o", str(target)], capsys)
    assert code == 0, err
    assert comparable(verb, json.loads(target.read_text())) == comparable(verb, printed)
    assert f"wrote {target}" in err
    if verb in ("run", "port"):     # the run's table, port's summary stay on stdout beside a JSON file
        assert ("throughput" if verb == "run" else "converted") in out and not out.lstrip().startswith("{")
    else:
        assert out == ""


@pytest.mark.parametrize("verb", list(VERBS))
def test_the_old_spelling_still_prints_the_same(env, capsys, verb):
    new, old = VERBS[verb]
    code, out, err = main_inprocess([*new, "-f", "json"], capsys)
    assert code == 0, err
    code, out_old, err_old = main_inprocess(old, capsys)
    assert code == 0, err_old
    assert comparable(verb, json.loads(out_old)) == comparable(verb, json.loads(out))
    # `run --json -` and `port --json -` are the deprecated spellings; a --json flag is -f json
    assert ("deprecated" in err_old) == (verb in ("run", "port")), err_old


@pytest.mark.parametrize("verb", ["run", "port"])
def test_json_file_of_run_and_port_still_writes_the_file_with_a_note(env, capsys, tmp_path, verb):
    args = VERBS[verb][0]
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    code, out, err = main_inprocess([*args, "--json", str(old)], capsys)
    assert code == 0, err
    assert "note: " in err and "--json FILE is deprecated, use -f json -o FILE" in err
    code, _, err = main_inprocess([*args, "-f", "json", "-o", str(new)], capsys)
    assert code == 0 and "deprecated" not in err, err
    assert comparable(verb, json.loads(old.read_text())) == comparable(verb, json.loads(new.read_text()))


@pytest.mark.parametrize("verb", TABLES)
def test_o_writes_the_table_as_it_prints(env, capsys, tmp_path, verb):
    args = VERBS[verb][0] + (["-f", "text"] if verb == "port" else [])    # port -o alone: the old tree
    code, printed, err = main_inprocess(args, capsys)
    assert code == 0 and printed.strip(), err
    target = tmp_path / "out.txt"
    code, out, err = main_inprocess([*args, "-o", str(target)], capsys)
    assert code == 0, err
    assert out == "" and target.read_text() == printed
    assert "\x1b[" not in target.read_text()          # no terminal colours in a file


def test_report_and_export_write_what_they_print(env, capsys, tmp_path):
    for args in (["report", "label=one", "label=two", "-f", "markdown"], ["export", "latest"],
                 ["claims", "check", "-f", "markdown"], ["compare", "label=one", "label=two", "-f", "csv"]):
        code, printed, err = main_inprocess(args, capsys)
        assert code == 0 and printed, (args, err)
        target = tmp_path / "out"
        code, out, err = main_inprocess([*args, "-o", str(target)], capsys)
        # stdout ends the text with a newline (export's stored document has none)
        assert code == 0 and out == "" and target.read_text().rstrip("\n") == printed.rstrip("\n"), (args, err)


# every verb's output file goes through the output guard: the store, as any output, is refused
GUARDED = {**{v: [*a, "-f", "json"] for v, (a, _) in VERBS.items()},
           "report": ["report", "label=one", "-f", "markdown"], "export --requests": ["export", "latest", "--requests"],
           "run table": RUN, "port text": ["port", SAMPLE, "--examine", "-f", "text"]}


@pytest.mark.parametrize("verb", list(GUARDED))
def test_every_output_file_goes_through_the_guard(env, capsys, verb):
    db = env["GPUPARITY_DB"]
    before = sha(db)
    code, out, err = main_inprocess([*GUARDED[verb], "-o", db], capsys)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert "refusing to write over it" in err and out == ""
    assert "cases x" not in err and sha(db) == before                # refused before any work


def test_an_output_inside_the_port_tree_or_over_a_compared_file_is_refused(env, capsys, tmp_path):
    code, _, err = main_inprocess(["port", SAMPLE, "--examine", "-f", "json", "-o", SAMPLE], capsys)
    assert code == 2 and "is a file of the source tree" in err and err.count("\n") == 1
    code, out, err = main_inprocess(["export", "latest", "-o", str(tmp_path / "a.json")], capsys)
    assert code == 0, err
    side = str(tmp_path / "a.json")
    code, _, err = main_inprocess(["compare", side, "label=two", "-f", "json", "-o", side], capsys)
    assert code == 2 and "an input of this command" in err and err.count("\n") == 1


def test_json_with_another_format_and_run_json_with_o_are_one_line_errors(env, capsys, tmp_path):
    for args in (["compare", "label=one", "label=two", "-f", "markdown", "--json"],
                 [*RUN, "--json", str(tmp_path / "a.json"), "-o", str(tmp_path / "b.json")]):
        code, out, err = main_inprocess(args, capsys)
        assert code == 2 and err.count("\n") == 1 and out == "", (args, err)
    assert not list(tmp_path.iterdir())


def test_port_o_without_f_is_still_the_hip_tree_with_a_note(env, capsys, tmp_path):
    code, out, err = main_inprocess(["port", SAMPLE, "-o", str(tmp_path / "hip")], capsys)
    assert code == 0, err
    assert (tmp_path / "hip").exists() and "port -o DIR is deprecated, use --out DIR" in err
    code, out, err = main_inprocess(["port", SAMPLE, "--out", str(tmp_path / "hip2"), "-f", "text", "-o",
                                     str(tmp_path / "summary.txt")], capsys)
    assert code == 0 and (tmp_path / "hip2").exists(), err
    assert "portability score:" in (tmp_path / "summary.txt").read_text() and "portability score" not in out


HELP = ["list", "show", "plan", "info", "specs", "reference import", "reference list", "reference show",
        "reference compare", "compare", "trend", "report", "claims check", "export", "run", "port"]


@pytest.mark.parametrize("verb", HELP)
def test_every_printing_verb_says_the_convention_in_its_help(capsys, verb):
    code, out, _ = main_inprocess([*verb.split(), "--help"], capsys)
    text = " ".join(out.split())
    assert code == 0 and "-f, --format" in text and "-o, --output FILE" in text
    assert "-o FILE writes it to FILE instead of stdout" in text
    if "--json FILE" in text:                      # run and port: the value-taking --json is marked as old
        assert "Deprecated: -f json -o FILE" in text
    elif verb not in ("report",):
        assert "--json Same as -f json." in text, text


def test_readme_says_the_convention():
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert "-f json -o FILE" in readme and "--json FILE" in readme


def test_no_output_file_is_left_when_a_verb_fails(env, capsys, tmp_path):
    target = tmp_path / "out.json"
    code, _, err = main_inprocess(["show", "nosuchrun", "-f", "json", "-o", str(target)], capsys)
    assert code == 2 and not target.exists() and not os.listdir(tmp_path), err
