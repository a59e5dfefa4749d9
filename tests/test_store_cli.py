"""Runs into the store, list/show/export/import, bad files, failures and Ctrl-C."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import default_sigint

from gpuparity.errors import UserError
from gpuparity.results.document import validate_run
from gpuparity.results.schema import new_result, new_run, result_key
from gpuparity.results.store import Store
from gpuparity.results.store_rows import decode_samples
from gpuparity.results.store_schema import STORE_VERSION

WORKLOADS = str(Path(__file__).parent / "data" / "slow_workloads.py")


def table_counts(db):
    with sqlite3.connect(db) as c:
        return c.execute("SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM results)").fetchone()


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two real `gpuparity run gemm --dtype fp32` runs in one store, plus an export of the first."""
    from tests.conftest import run_cli

    d = tmp_path_factory.mktemp("runs")
    db = str(d / "a.db")
    env = {"GPUPARITY_DB": db}
    for _ in range(2):
        p = run_cli("run", "gemm", "--dtype", "fp32", env=env)
        assert p.returncode == 0, p.stderr
    return db, d


def test_two_runs_listed(two_runs, cli):
    db, _ = two_runs
    p = cli("list", "--json", "--db", db)
    runs = json.loads(p.stdout)
    assert len(runs) == 2
    assert all(r["n_results"] == 1 and r["status"] == "complete" for r in runs)
    shown = cli("show", runs[0]["run_id"][:20], "--db", db)
    assert shown.returncode == 0 and "gemm" in shown.stdout and "TFLOP/s" in shown.stdout


def test_export_import_reproduces_document(two_runs, cli, tmp_path):
    db, _ = two_runs
    out = tmp_path / "run.json"
    assert cli("export", "latest", "-o", str(out), "--db", db).returncode == 0
    other = str(tmp_path / "b.db")
    assert cli("import", str(out), "--db", other).returncode == 0
    again = cli("import", str(out), "--db", other)  # idempotent by run id
    assert again.returncode == 0 and "already stored" in again.stderr
    a = json.loads(cli("show", "latest", "--json", "--db", db).stdout)
    b = json.loads(cli("show", "latest", "--json", "--db", other).stdout)
    assert a == b
    assert table_counts(other) == (1, 1)
    r = a["results"][0]
    assert r["status"] == "ok" and r["samples"] and r["metric"]["unit"] == "TFLOP/s"
    assert r["metric"]["ci_low"] <= r["metric"]["value"] <= r["metric"]["ci_high"]


def _bad_files(tmp_path, good: dict) -> dict:
    text = json.dumps(good)
    files = {
        "truncated": text[: len(text) // 2],
        "not json": "hello, world",
        "wrong schema": json.dumps(dict(good, schema_version=99)),
        "no results": json.dumps({k: v for k, v in good.items() if k != "results"}),
        "bad samples": json.dumps(dict(good, results=[dict(good["results"][0], samples=["x"])])),
        "not utf8": b"\xff\xfe\x00garbage",
        "top-level list": "[1, 2]",
        "repeated key": json.dumps(dict(good, results=good["results"][:1] * 2)),
    }
    paths = {}
    for name, content in files.items():
        p = tmp_path / (name.replace(" ", "_") + ".json")
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        paths[name] = str(p)
    return paths


def test_bad_import_files_leave_store_unchanged(two_runs, cli, tmp_path):
    db, _ = two_runs
    good = json.loads(cli("show", "latest", "--json", "--db", db).stdout)
    good["run_id"] = "a-new-id"
    before = table_counts(db)
    for name, path in _bad_files(tmp_path, good).items():
        p = cli("import", path, "--db", db)
        assert p.returncode == 2, name
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), (name, p.stderr)
    # Oversized: the limit is lowered for the test instead of writing 256 MiB.
    ok_path = tmp_path / "ok.json"
    ok_path.write_text(json.dumps(good))
    p = cli("import", str(ok_path), "--db", db, env={"GPUPARITY_MAX_IMPORT_BYTES": "100"})
    assert p.returncode == 2 and "limit" in p.stderr
    # A bad file stops the import there: nothing from it on is written, the runs before it are.
    truncated = _bad_files(tmp_path, good)["truncated"]
    p = cli("import", truncated, str(ok_path), "--db", db)
    assert p.returncode == 2 and "2 of 2 files not imported" in p.stderr and "imported:" not in p.stderr
    assert table_counts(db) == before
    p = cli("import", str(ok_path), truncated, "--db", db)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and lines[0] == f"imported: a-new-id from {ok_path}", p.stderr
    assert lines[1].startswith("error:") and "1 of 2 files not imported" in lines[1] and len(lines) == 2
    assert table_counts(db) == (before[0] + 1, before[1] + 1)
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        c.execute("DELETE FROM results WHERE run_id = 'a-new-id'")   # as it was, for the other tests
        c.execute("DELETE FROM runs WHERE run_id = 'a-new-id'")


def test_unknown_run_and_workload_are_one_line_errors(tmp_db, cli):
    for args in (["show", "nope"], ["export", "nope", "-o", "/tmp/x.json"], ["run", "no-such-workload"],
                 ["run", "--suite", "huge"], ["run", "gemm", "--set", "novalue"]):
        p = cli(*args)
        assert p.returncode == 2, args
        assert p.stderr.strip().startswith("error:") and len(p.stderr.strip().splitlines()) == 1, args


def test_failures_are_recorded_and_the_run_goes_on(tmp_db, cli):
    p = cli("run", "t_broken", "t_oom", "t_wrong", "t_quick", "--workload-file", WORKLOADS)
    assert p.returncode == 1, p.stderr          # stored, but a failed result makes the exit status 1
    doc = json.loads(cli("show", "latest", "--json").stdout)
    by = {r["workload"]: r for r in doc["results"]}
    assert by["t_broken"]["status"] == "failed" and "on purpose" in by["t_broken"]["reason"]
    assert by["t_oom"]["status"] == "skipped" and "out of memory" in by["t_oom"]["reason"]
    assert by["t_wrong"]["status"] == "failed" and "wrong result" in by["t_wrong"]["reason"]
    assert by["t_quick"]["status"] == "ok" and by["t_quick"]["metric"]["value"] > 0


def test_a_workload_named_twice_is_measured_once(tmp_db, cli):
    p = cli("run", "t_quick", "t_wrong", "t_quick", "--workload-file", WORKLOADS)
    assert p.returncode == 1 and "spooled" not in p.stderr, p.stderr    # the store took the run
    doc = json.loads(cli("show", "latest", "--json").stdout)
    assert doc["status"] == "complete"
    assert [r["workload"] for r in doc["results"]] == ["t_quick", "t_wrong"]



@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_run_keeps_finished_results(tmp_db, tmp_path, signum, code):
    """Ctrl-C or SIGTERM (a scheduler's time limit) in the middle of a run."""
    marker = tmp_path / "started"
    env = dict(os.environ, GPUPARITY_TEST_MARKER=str(marker), COLUMNS="200")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpuparity", "run", "t_quick", "t_block", "t_broken", "--workload-file", WORKLOADS,
         "--suite", "full", "--in-order"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    try:
        deadline = time.time() + 60
        while not marker.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert marker.exists(), proc.communicate()
        time.sleep(0.3)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    with sqlite3.connect(tmp_db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        status, doc = c.execute("SELECT status, doc FROM runs").fetchone()
        rows = c.execute("SELECT workload, status FROM results").fetchall()
    assert status == "interrupted"
    assert rows == [("t_quick", "ok")]
    assert len(json.loads(doc)["results"]) == 1
    assert json.loads(doc)["interrupted_by"] == signal.Signals(signum).name


def test_a_signal_during_a_save_waits_for_the_commit(tmp_path):
    got = []

    def mine(signum, frame):
        got.append(signum)

    old = signal.signal(signal.SIGTERM, mine)
    try:
        with Store(str(tmp_path / "s.db")) as store:
            with store.transaction() as cur:
                signal.raise_signal(signal.SIGTERM)
                assert got == []             # held back while the transaction is open
                cur.execute("INSERT INTO reference_results (ref_id, source, doc) VALUES (?, ?, ?)", ("r", "t", "{}"))
            assert got == [signal.SIGTERM]   # delivered to the handler the process had, after COMMIT
            assert store.count("reference_results") == 1
            assert signal.getsignal(signal.SIGTERM) is mine          # the process's handler is back
    finally:
        signal.signal(signal.SIGTERM, old)


def test_schema_round_trip_and_key_stability(tmp_path):
    fp = {"host": "h", "backend": "cpu", "product": "x", "spec": {"id": "cpu"}}
    doc = new_run(fp)
    r = new_result("gemm", "kernel", {"m": 8, "n": 8, "k": 8}, "fp32")
    r["samples"] = [1e-3, 1.1e-3]
    r["work"] = {"flop": 1024.0}
    doc["results"].append(r)
    assert result_key("gemm", {"k": 8, "n": 8, "m": 8}, "fp32") == r["key"]  # param order does not matter
    assert result_key("gemm", {"m": 8, "n": 8, "k": 8}, "bf16") != r["key"]
    with Store(str(tmp_path / "s.db")) as s:
        assert s.save_run(doc) is True
        assert s.save_run(doc) is False
        assert s.get_run(doc["run_id"]) == json.loads(json.dumps(doc))
    validate_run(doc)
    with pytest.raises(UserError):
        validate_run(dict(doc, results=[dict(r, status="great")]))


def test_store_from_an_earlier_schema_is_upgraded_in_place(tmp_path):
    """Stores written before runs.fingerprint and binary samples existed keep working, nothing lost."""
    db = str(tmp_path / "old.db")
    fp = {"host": "h", "backend": "cpu", "product": "x", "spec": {"id": "cpu", "fp32_tflops": 1.0}}
    doc = new_run(fp)
    r = new_result("gemm", "kernel", {"m": 8}, "fp32")
    r.update(samples=[1e-3, 1e-3], work={"flop": 1e9}, metric={"unit": "TFLOP/s", "value": 1.0})
    doc["results"].append(r)
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, finished_at TEXT,"
                  " status TEXT NOT NULL, host TEXT, vendor TEXT, product TEXT, spec_id TEXT, stack TEXT,"
                  " torch TEXT, schema_version INTEGER NOT NULL, benchmark_version INTEGER NOT NULL,"
                  " n_results INTEGER NOT NULL, doc TEXT NOT NULL)")
        c.execute("CREATE TABLE results (run_id TEXT NOT NULL, key TEXT NOT NULL, workload TEXT NOT NULL,"
                  " category TEXT, dtype TEXT, params TEXT, status TEXT NOT NULL, reason TEXT, unit TEXT,"
                  " value REAL, samples TEXT, PRIMARY KEY (run_id, key))")
        c.execute("INSERT INTO runs VALUES (?, ?, NULL, 'complete', 'h', NULL, 'x', 'cpu', 'cpu', NULL, 1, 1, 1, ?)",
                  (doc["run_id"], doc["started_at"], json.dumps(doc)))
        c.execute("INSERT INTO results VALUES (?, ?, 'gemm', 'kernel', 'fp32', '{}', 'ok', NULL, 'TFLOP/s', 1.0, ?)",
                  (doc["run_id"], r["key"], "[1.0, 0.5]"))
    with Store(db) as s:
        assert s.run_fingerprints([doc["run_id"]]) == {doc["run_id"]: fp}
        (blob,) = s.query("SELECT samples FROM results")[0]
        assert decode_samples(blob) == [1.0, 0.5]
        assert s.get_run(doc["run_id"]) == json.loads(json.dumps(doc))
    with Store(db) as s:  # a second open changes nothing
        assert s.count("runs") == 1 and s.count("results") == 1


# -- labels, and tables that fit a 100-column terminal ------------------------------------------
def _labelled_store(path: str) -> str:
    """Two labelled runs of one CPU with quick-suite-like keys: conv rows that differ only in
    channels_last, long MoE parameters, dtypes, an unstable result and a wild CI."""
    from test_compare import make_result, make_run, noisy, noisy_trials

    def results(scale: float, seed: int) -> list[dict]:
        out = [make_result("gemm", {"m": m, "n": m, "k": m, "layout": "nn"}, None, dtype=dt,
                           trials=noisy_trials(scale * v, 0.01, 9, seed + i))
               for i, (m, dt, v) in enumerate([(512, "fp32", 20.0), (512, "bf16", 170.0), (256, "fp8", 40.0)])]
        out += [make_result("conv", {"net": "resnet50", "layer": "res2_3x3", "batch": 1, "cin": 64, "cout": 64,
                                     "hw": 56, "kernel": 3, "stride": 1, "channels_last": cl, "pass": p}, None,
                            trials=noisy_trials(scale * v, 0.01, 9, seed + 10 + i))
                for i, (cl, p, v) in enumerate([(True, "fwd", 7.7), (False, "fwd", 3.0), (True, "bwd", 3.3)])]
        out += [make_result("moe", {"preset": pr, "tokens": 64, "experts": e, "top_k": k, "hidden": h, "ffn": f,
                                    "shared": sh}, None, unit="tokens/s",
                            trials=noisy_trials(scale * v, 0.01, 9, seed + 20 + i))
                for i, (pr, e, k, h, f, sh, v) in enumerate([("mixtral-8x7b", 8, 2, 128, 448, 0, 37000.0),
                                                             ("deepseek-v3", 64, 8, 224, 64, 1, 590.0)])]
        out.append(make_result("memory", {"op": "copy", "elements": 314572800}, None, unit="GB/s", dtype="fp32",
                               trials=noisy_trials(scale * 6.7, 0.01, 9, seed + 30), flags=["unstable"]))
        out.append(make_result("attention", {"seq": 256, "pass": "fwd"}, None,
                               trials=[noisy(scale * 0.08, 0.9, 5, seed + 40 + t) for t in range(2)]))
        out.append(make_result("gemm", {"m": 512, "n": 512, "k": 512, "layout": "nn"}, [], dtype="tf32",
                               status="skipped", reason="TF32 is a GPU tensor-core mode; a CPU has no TF32 units"))
        return out

    with Store(path) as s:
        for run_id, label, scale, day in (("r-a1", "aa-A1", 1.0, 1), ("r-a2", "aa-A2", 0.6, 2),
                                          ("r-none", None, 1.0, 3)):
            doc = make_run(results(scale, 100 * day), run_id=run_id, spec_id="cpu",
                           started_at=f"2026-04-0{day}T00:00:00+00:00")
            doc["label"] = label
            s.save_run(doc)
        return s.url


def _table_rows(out: str, first_col: set[str]) -> list[list[str]]:
    """Rows of a printed table: a row starts on a line whose first word is a workload; the lines
    below it (first column blank) continue it."""
    rows, inside = [], False
    for line in out.splitlines():
        if line.startswith("─"):
            inside, rows = True, rows
            continue
        if not inside:
            continue
        word = line.split(" ", 1)[0]
        if word in first_col:
            rows.append([line])
        elif line.startswith(" ") and rows and line.strip():
            rows[-1].append(line)
        else:
            inside = False
    return rows


def test_compare_at_100_columns_keeps_verdicts_cis_and_what_tells_rows_apart(tmp_path, capsys, monkeypatch):
    import re

    from test_compare import main_inprocess

    url = _labelled_store(str(tmp_path / "l.db"))
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = main_inprocess(["compare", "label=aa-A1", "label=aa-A2", "--db", url], capsys)
    assert code == 0, err
    assert all(len(line) <= 100 for line in out.splitlines()), max(out.splitlines(), key=len)
    assert "A (aa-A1): " in out and "B (aa-A2): " in out
    assert re.search(r"B \(aa-A2\) is 0\.\d\dx A \(aa-A1\) on kernels \[\d\.\d\d,", " ".join(out.split()))
    start = out.index("B / A per result")
    rows = _table_rows(out[start:], {"gemm", "conv", "moe", "memory", "attention"})
    assert len(rows) == 10                                        # every compared result, once
    names = []
    for lines in rows:
        first = lines[0]
        assert re.search(r"\b(faster|slower|parity|inconclusive)\b", first), first        # the whole word
        ci = re.search(r"\d\.\d{3} \[[\d.e+-]+, [\d.e+-]+\]", first)                   # the whole CI
        assert ci, first
        # what tells the row apart: workload, parameters (all its lines) and dtype, before the CI
        names.append(" ".join((first[:ci.start()] + " " + " ".join(x.strip() for x in lines[1:])).split()))
    assert len(set(names)) == len(names), names
    conv = [n for n in names if n.startswith("conv")]
    assert sum("channels_last=True" in n for n in conv) == 2 and sum("channels_last=False" in n for n in conv) == 1
    assert "same in every row:" in " ".join(out.split()) and "layout=nn" in out        # constants said once
    assert "--wide shows all" in out
    # --wide: every column, every parameter, one line per row
    code, out, err = main_inprocess(["compare", "label=aa-A1", "label=aa-A2", "--db", url, "--wide"], capsys)
    assert code == 0, err
    wide_rows = _table_rows(out[out.index("B / A per result"):], {"gemm", "conv", "moe", "memory", "attention"})
    assert len(wide_rows) == 10 and all(len(r) == 1 for r in wide_rows)
    assert all("layout=nn" in r[0] for r in wide_rows if r[0].startswith("gemm"))
    assert "trials" in out and "unit" in out and "not shown for lack of width" not in out


def test_labels_in_list_show_and_filters(tmp_path, capsys, monkeypatch):
    from test_compare import main_inprocess

    url = _labelled_store(str(tmp_path / "l.db"))
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = main_inprocess(["list", "--db", url], capsys)
    assert code == 0, err
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("r-")}
    assert "aa-A1" in lines["r-a1"] and "aa-A2" in lines["r-a2"] and " - " in lines["r-none"]
    code, out, err = main_inprocess(["list", "--db", url, "--label", "aa-A2", "--json"], capsys)
    assert code == 0, err
    assert [r["run_id"] for r in json.loads(out)] == ["r-a2"] and json.loads(out)[0]["label"] == "aa-A2"
    code, out, err = main_inprocess(["show", "r-a1", "--db", url], capsys)
    assert code == 0, err
    assert out.startswith("r-a1 label aa-A1 ")
    # show at 100 columns: one line per row with its figure and CI, skip reasons listed below
    assert all(len(line) <= 100 for line in out.splitlines())
    assert "skipped: gemm m=n=k=512 tf32: TF32 is a GPU tensor-core mode" in out
    assert " .. " in out and "TFLOP/s" in out
    code, out, err = main_inprocess(["compare", "label=aa-A1", "label=nope", "--db", url], capsys)
    assert code == 2 and "no stored run matches label=nope" in err
    code, out, err = main_inprocess(["compare", "label=aa-A1", "colour=red", "--db", url], capsys)
    assert code == 2 and "unknown filter 'colour'; use gpu, stack, host, since, label, job, db" in err
    code, out, err = main_inprocess(["report", "label=aa-A1", "label=aa-A2", "--db", url, "-o", "-"], capsys)
    assert code == 0, err
    assert "<title>gpuparity: aa-A2: " in out and " vs aa-A1: " in out


def test_fail_if_slower_takes_a_bare_number_as_percent(tmp_path, capsys):
    from test_compare import main_inprocess

    from gpuparity.cli.compare import parse_fraction

    assert parse_fraction("5", "--x") == pytest.approx(0.05) and parse_fraction("5%", "--x") == pytest.approx(0.05)
    assert parse_fraction("0.05", "--x") == pytest.approx(0.05)
    with pytest.raises(UserError, match="between 0 and 100%"):
        parse_fraction("150", "--x")
    url = _labelled_store(str(tmp_path / "l.db"))
    code, _, err = main_inprocess(["compare", "label=aa-A1", "label=aa-A2", "--db", url, "--fail-if-slower", "5",
                                   "--run-spread", "2"], capsys)      # one run a side: a known spread
    assert code == 1 and "more than 5% slower" in err


def test_llm_load_draws_no_progress_bar(capfd):
    """Loading the shipped SmolLM2 checkpoint prints no transformers 'Loading weights' bar, and the
    bars are as they were afterwards."""
    pytest.importorskip("transformers")
    from transformers.utils import logging as hf_logging

    from gpuparity.models.load import load_causal_lm

    hf_logging.enable_progress_bar()
    try:
        loaded = load_causal_lm("smollm2", "cpu", "fp32")
    except UserError as exc:
        pytest.skip(f"SmolLM2 package not installed: {exc}")
    out, err = capfd.readouterr()
    assert loaded.info["params"] > 1e8
    assert "Loading weights" not in out + err and "it/s]" not in out + err
    assert hf_logging.is_progress_bar_enabled()


def test_quickstart_output_is_ignored_and_setup_uses_the_cpu_index():
    root = Path(__file__).parent.parent
    quick = (root / "scripts" / "quickstart.sh").read_text()
    out = next(w for line in quick.splitlines() if "-o" in line.split() for w in line.split() if w.endswith(".json"))
    ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", out], cwd=root)
    assert ignored.returncode == 0, f"{out} (the quickstart's run file) is not ignored by .gitignore"
    setup = (root / "scripts" / "setup.sh").read_text().splitlines()
    cpu = next(i for i, line in enumerate(setup) if "download.pytorch.org/whl/cpu" in line)
    assert "torch==2.13.0" in setup[cpu] and "|| pip install" in setup[cpu + 1] + setup[cpu]
    assert setup[cpu - 1].lstrip().startswith("#") and "nvidia" in " ".join(setup[cpu - 4:cpu])


# -- a team store at scale (issue 28): steps on named runs do not grow with the store ---------------
def _run_doc(run_id: str, spec_id: str, stack: dict, minute: int, n: int = 20) -> dict:
    from gpuparity.measure.stats import summarize
    from gpuparity.platform.specs import all_specs
    from gpuparity.results.figure import derive

    spec = all_specs()[spec_id]
    fp = {"host": f"{spec_id}-box", "backend": "cuda", "product": spec["product"], "vendor": spec["vendor"],
          "spec": spec, "torch_version": "2.6.0", **stack}
    doc = new_run(fp)
    started = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=minute)
    doc.update(run_id=run_id, started_at=started.isoformat(), status="complete", spec_id=spec_id)
    for i in range(n):
        r = new_result("gemm", "kernel", {"m": 256 * (i + 1), "n": 1024, "k": 1024}, "bf16")
        flop = 2.0 * 256 * (i + 1) * 1024 * 1024
        r["samples"] = [flop / 1e14 * (1 + 0.01 * (j % 3)) for j in range(9)]
        r["work"] = {"flop": flop}
        r["summary"] = summarize(r["samples"])
        derive(r, "flop:bf16", spec)         # the figure, rates and % of peak as `run` states them
        doc["results"].append(r)
    return doc


REAL_CONNECT = sqlite3.connect
NAMED = [("named-a", "mi300x", {"rocm_version": "7.0.1", "hip_version": "7.0"}),
         ("named-a6", "mi300x", {"rocm_version": "6.4.1", "hip_version": "6.4"}),
         ("named-b", "h100-sxm", {"cuda_version": "12.8"})]


@pytest.fixture(scope="module")
def small_and_big(tmp_path_factory):
    """Two stores holding the same three named runs (the GPUs the shipped claims name), amid 3 and
    300 runs of another GPU (20 results each): 120 and 6,060 results."""
    d = tmp_path_factory.mktemp("scale")
    out = {}
    for name, fillers in (("small", 3), ("big", 300)):
        db = str(d / f"{name}.db")
        with Store(db) as store, store.writer() as w:
            for i in range(fillers):
                w.save_run(_run_doc(f"fill-{i:04d}", "a100-sxm-80gb", {"cuda_version": "12.4"}, i))
            for k, (run_id, spec_id, stack) in enumerate(NAMED):
                w.save_run(_run_doc(run_id, spec_id, stack, fillers // 2 + k))
        out[name] = db
    return out


def _sqlite_spy(monkeypatch) -> dict:
    """Every statement the store's SQLite connections run, and their VM instructions (in 100s)."""
    log = {"sql": [], "steps": 0, "connections": 0}
    real = REAL_CONNECT

    def tick() -> int:
        log["steps"] += 1
        return 0

    def connect(*args, **kwargs):
        conn = real(*args, **kwargs)
        log["connections"] += 1
        conn.set_trace_callback(log["sql"].append)
        conn.set_progress_handler(tick, 100)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    return log


def _scans(db: str, statements: list[str]) -> list[str]:
    """The full-table scans of runs or results among the statements' query plans."""
    out = []
    with REAL_CONNECT(db) as c:
        for sql in statements:
            if sql.lstrip().upper().startswith("SELECT"):
                plan = " | ".join(row[3] for row in c.execute("EXPLAIN QUERY PLAN " + sql))
                if re.search(r"\bSCAN (runs|results)\b(?! USING)", plan):
                    out.append(f"{sql[:120]} -> {plan}")
    return out


def test_opening_a_store_runs_no_table_scan(small_and_big, monkeypatch):
    """Opening reads the metadata row: no query plan scans runs or results, and the SQLite work
    is the same for 120 and 6,060 results."""
    steps = {}
    for name, db in small_and_big.items():
        log = _sqlite_spy(monkeypatch)
        with Store(db) as store:
            assert store.version == STORE_VERSION
        assert log["sql"] and not _scans(db, log["sql"]), _scans(db, log["sql"])
        assert not any(s.startswith(("BEGIN", "CREATE", "ALTER", "UPDATE")) for s in log["sql"]), log["sql"]
        steps[name] = log["steps"]
    assert steps["big"] <= steps["small"] + 1, steps


def test_a_store_without_the_version_row_is_upgraded_once(tmp_path, monkeypatch):
    db = str(tmp_path / "v2.db")
    with Store(db) as store:
        store.save_run(_run_doc("r1", "mi300x", {"rocm_version": "6.4.1"}, 0))
    with sqlite3.connect(db) as c:           # as a version 2 store: no metadata, no indexes, no work column
        c.execute("DROP TABLE gpuparity_meta")
        for index in ("runs_started", "runs_spec", "runs_product", "runs_host"):
            c.execute(f"DROP INDEX {index}")
        c.execute("ALTER TABLE results DROP COLUMN work")
    log = _sqlite_spy(monkeypatch)
    with Store(db) as store:
        assert store.version == STORE_VERSION and store.query("SELECT value FROM gpuparity_meta") == [
            (str(STORE_VERSION),)]
        assert "work" in store.columns("results")
        assert {r[0] for r in store.query("SELECT name FROM sqlite_master WHERE type = 'index'")} >= {
            "runs_started", "runs_spec", "runs_product", "runs_host"}
    assert any(s.startswith("CREATE INDEX") for s in log["sql"])
    log["sql"].clear()
    with Store(db):
        pass
    assert not any(s.startswith(("BEGIN", "CREATE", "ALTER")) for s in log["sql"]), log["sql"]


def test_an_older_store_has_its_rows_recomputed_so_compare_reads_the_samples(tmp_path, capsys):
    """A version 4 store holding a forged import (version 4 stored a document's figures as stated):
    the upgrade writes its result rows again from the document, so `compare`, which reads those
    rows, gives the ratio the samples give; the document itself is kept as it came."""
    import copy

    db = str(tmp_path / "v4.db")
    truth = _run_doc("honest", "mi300x", {"rocm_version": "6.4.1"}, 0, n=3)
    forged = copy.deepcopy(truth)
    forged.update(run_id="forged", started_at=(datetime(2026, 1, 2, tzinfo=timezone.utc)).isoformat())
    for r in forged["results"]:
        for field in ("value", "ci_low", "ci_high"):
            r["metric"][field] *= 10
    with Store(db) as s:
        s.save_run(truth)
        s.save_run(forged)                  # as a version 4 import stored it: no recomputation
    with sqlite3.connect(db) as c:
        c.execute("UPDATE gpuparity_meta SET value = '4' WHERE name = 'schema'")
        rows = dict(c.execute("SELECT run_id, SUM(value) FROM results GROUP BY run_id").fetchall())
        assert rows["forged"] == pytest.approx(10 * rows["honest"])      # the rows say what the forger stated
    code, out, err = _inprocess(["compare", "honest", "forged", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    ratios = [row["ratio"] for row in json.loads(out)["rows"]]
    assert len(ratios) == 3 and all(x == pytest.approx(1.0, rel=1e-9) for x in ratios), ratios
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT value FROM gpuparity_meta WHERE name = 'schema'").fetchone()[0] == str(STORE_VERSION)
        doc = json.loads(c.execute("SELECT doc FROM runs WHERE run_id = 'forged'").fetchone()[0])
    assert doc["results"][0]["metric"]["value"] == pytest.approx(10 * truth["results"][0]["metric"]["value"])


@pytest.mark.parametrize("odd", ["\x1b[2J", "\u202e"])
def test_file_names_from_the_command_line_reach_the_terminal_escaped(tmp_path, capsys, odd):
    """import and export echo the file names they were given: an ESC or a bidi override in one
    is shown as an escape, never obeyed."""
    db = str(tmp_path / "s.db")
    name = tmp_path / f"run{odd}.json"
    name.write_text(json.dumps(_run_doc("odd-name", "mi300x", {"rocm_version": "6.4.1"}, 0, n=1)))
    code, _, err = _inprocess(["import", str(name), "--db", db], capsys)
    assert code == 0 and "imported: odd-name from" in err, err
    code, _, err2 = _inprocess(["export", "odd-name", "-o", str(tmp_path / f"out{odd}.json"), "--db", db], capsys)
    assert code == 0 and "wrote " in err2, err2
    for text in (err, err2):
        assert odd not in text and ascii(odd)[1:-1] in text, text


def _inprocess(args: list[str], capsys) -> tuple[int, str, str]:
    from gpuparity.cli.main import main

    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def test_steps_on_named_runs_cost_the_same_in_a_store_50x_larger(small_and_big, tmp_db, tmp_path, monkeypatch,
                                                                  capsys):
    """list, show, export, compare, report and claims check of the named runs: the SQLite work of
    each (VM instructions) is the same with 3 or 300 other runs in the store, no query plan
    scans runs or results in the large one, and each command opens the store once."""
    steps: dict[str, dict[str, int]] = {}
    commands = {
        "list": ["list", "-n", "3"], "show": ["show", "named-a"], "show latest": ["show", "latest"],
        "export": ["export", "named-a", "-o", str(tmp_path / "x.json")],
        "compare": ["compare", "named-a", "named-b", "-f", "json"],
        "report": ["report", "named-a", "named-b", "-o", str(tmp_path / "r.html")],
        "claims": ["claims", "check", "-f", "json"],
    }
    for name, db in small_and_big.items():
        for what, args in commands.items():
            log = _sqlite_spy(monkeypatch)
            code, out, err = _inprocess([*args, "--db", db], capsys)
            assert code == 0, (what, err)
            assert log["connections"] == 1, (what, log["connections"])
            if name == "big":       # (in the small store the named runs are most of it: a scan is cheaper)
                assert not _scans(db, log["sql"]), (what, _scans(db, log["sql"]))
            steps.setdefault(what, {})[name] = log["steps"]
    for what, per in steps.items():
        assert per["big"] <= 1.2 * per["small"] + 5, (what, per)
    claims = {c["id"]: c for c in json.loads(_inprocess(["claims", "check", "-f", "json", "--db",
                                                          small_and_big["big"]], capsys)[1])}
    # claim 24 (MI300X with ROCm vs "h100" with CUDA, on training results): both named GPUs' runs are
    # found (h100 is the spec h100-sxm), and their GEMM results do not answer it
    assert "2 and 1 stored runs share no results for training" in claims["24"]["reasoning"], claims["24"]


def test_report_of_stores_reads_the_columns_compare_reads(small_and_big, tmp_db, tmp_path, monkeypatch, capsys):
    """No stored run document is parsed for a report of stored runs (serving results aside); the
    markdown keeps the HTML's row limit and says how many rows it left out."""
    def refuse(self, ref):
        raise AssertionError(f"document of {ref} read")

    monkeypatch.setattr(Store, "get_run", refuse)
    db = small_and_big["big"]
    out = str(tmp_path / "r.html")
    code, _, err = _inprocess(["report", "named-a", "named-b", "-o", out, "--db", db, "--no-claims"], capsys)
    assert code == 0, err
    text = open(out, encoding="utf-8").read()
    assert text.count('class="chart"') >= 2 and "m=5120" in text          # forest and roofline of 20 GEMMs
    import gpuparity.report.context as context

    monkeypatch.setattr(context, "MAX_TABLE_ROWS", 7)
    code, md, err = _inprocess(["report", "fill-0001", "fill-0002", "-f", "markdown", "--db", db, "--no-claims"],
                               capsys)
    assert code == 0, err
    assert md.count("\n| gemm ") == 7 and "... 13 more results" in md


def test_import_commits_in_batches_and_stores_the_work(tmp_db, tmp_path, monkeypatch, capsys):
    files = []
    for i in range(25):
        path = tmp_path / f"run{i}.json"
        path.write_text(json.dumps(_run_doc(f"imp-{i:02d}", "mi250x", {"rocm_version": "6.2.4"}, 2000 + i)))
        files.append(str(path))
    db = str(tmp_path / "imported.db")
    log = _sqlite_spy(monkeypatch)
    code, _, err = _inprocess(["import", *files, "--db", db], capsys)
    assert code == 0 and err.count("imported: imp-") == 25, err
    commits = sum(s == "COMMIT" for s in log["sql"])
    assert 1 <= commits < 25, commits          # batched (by rows or by the second), not one per run
    assert table_counts(db) == (25, 500)
    with Store(db) as s:
        (work,), = s.query("SELECT work FROM results WHERE run_id = 'imp-00' AND key = ?",
                           (s.get_run("imp-00")["results"][0]["key"],))
        assert json.loads(work) == {"flop": 2.0 * 256 * 1024 * 1024}
        assert s.run_text("imp-00")[1] == s.query("SELECT doc FROM runs WHERE run_id = 'imp-00'")[0][0]
