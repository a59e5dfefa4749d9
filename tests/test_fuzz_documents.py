"""Mutated run documents fed to import / show / compare / report / export (hypothesis, fixed seed,
bounded): every case exits 0 or 2 with a one-line message and no traceback, within 10 s; a
rejected document leaves the store as it was; an accepted one can be shown, compared, reported
and exported (and the export imports again)."""

from __future__ import annotations

import copy
import gzip
import json
import os
import sqlite3
import time

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_compare import main_inprocess, make_result, make_run, noisy, noisy_trials
from test_store_pg import pg_db, pg_server  # noqa: F401  (the session's PostgreSQL server, a database per test)

from gpuparity.results.figure import WORKLOAD_FIGURES, derive_rates, peak_kind_for
from gpuparity.results.schema import new_result
from gpuparity.results.store import Store

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def base_doc() -> dict:
    serving_info = {"curve_key": "c", "serving": {"interactivity": 30.0, "throughput_per_gpu": 100.0},
                    "table": {"title": "t", "columns": ["a", "b"], "rows": [["1", "2"]]}}
    results = [
        make_result("gemm", {"m": 512, "n": 512, "k": 512}, [], trials=noisy_trials(100, 0.01, 8, 1)),
        make_result("memory", {"op": "copy"}, noisy(2000, 0.01, 9, 2), dtype="fp32", unit="GB/s"),
        make_result("serving", {"concurrency": 4}, noisy(100, 0.02, 5, 3), dtype=None, unit="tokens/s/GPU",
                    category="serving", info=serving_info),
        make_result("attention", {"seq": 256}, [], status="failed", reason="kernel crashed"),
    ]
    results[0]["work"] = {"flop": 2.0 * 512**3}
    results[0]["info"] = {"peak_kind": "flop:bf16"}
    doc = make_run(results, run_id="fuzz-run")
    derive_rates(results[0], doc["fingerprint"]["spec"])     # tflops and % of peak, as `run` derives them
    return doc


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def paths(obj, prefix=()):
    """Every (container, key) position in a document."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield prefix + (i,)
            yield from paths(v, prefix + (i,))


@st.composite
def mutated(draw):
    doc = base_doc()
    for _ in range(draw(st.integers(1, 2))):
        where = draw(st.sampled_from(list(paths(doc))))
        parent = doc
        for k in where[:-1]:
            parent = parent[k]
        action = draw(st.sampled_from(["replace"] * 4 + ["delete"] * 4 + ["duplicate", "control", "bigstring"]))
        key = where[-1]
        if action == "replace":
            parent[key] = draw(JSONISH)
        elif action == "delete":
            del parent[key]
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif action == "control":
            parent[key] = "bad\x00\x1b[2Jvalue\n# heading"
        elif action == "bigstring":
            parent[key] = "x" * 200_000
    return doc


def counts(db: str) -> tuple:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM results)").fetchone()


def check(code: int, err: str, what: str) -> None:
    assert code in (0, 2), (what, code, err[-2000:])
    assert "Traceback" not in err, (what, err[-2000:])
    if code == 2:
        assert err.strip().startswith("error:") and len(err.strip().splitlines()) == 1, (what, err)


def timed(capsys, args: list[str]) -> tuple[int, str, str]:
    t0 = time.monotonic()
    out = main_inprocess(args, capsys)
    assert time.monotonic() - t0 < 10, (args, "took more than 10 s")
    return out


@pytest.mark.slow
@SETTINGS
@given(doc=mutated())
def test_mutated_documents_are_refused_cleanly_or_fully_usable(doc, tmp_path_factory, capsys):
    folder = tmp_path_factory.mktemp("fuzz")
    db, path = str(folder / "s.db"), str(folder / "run.json")
    with open(path, "w") as fh:
        fh.write(json.dumps(doc, allow_nan=True, default=str))
    Store(db).close()                                         # an empty store (a reader never makes one)
    before = counts(db)
    code, _, err = timed(capsys, ["import", path, "--db", db])
    check(code, err, "import")
    if code == 2:
        assert counts(db) == before
        code, _, err = timed(capsys, ["compare", path, path, "-f", "json"])
        check(code, err, "compare of a refused file")
        return
    run_id = doc["run_id"]
    for args in (["show", run_id, "--db", db], ["show", run_id, "--json", "--db", db],
                 ["compare", path, path, "-f", "json"], ["compare", run_id, run_id, "--db", db],
                 ["compare", path, path, "-f", "markdown"],
                 ["report", path, path, "-o", str(folder / "r.html"), "--no-claims"],
                 ["export", run_id, "-o", str(folder / "out.json"), "--db", db]):
        code, _, err = timed(capsys, args)
        assert code == 0, (args, err[-2000:])
    code, _, err = timed(capsys, ["import", str(folder / "out.json"), "--db", str(folder / "again.db")])
    assert code == 0, err


@pytest.mark.parametrize("content", [b"", b"{", b"[1, 2]", b"null", b"\xff\xfe\x00", b'{"schema_version": 2}',
                                     b'{"schema_version": 2, "run_id": "../x", "started_at": "2026-01-01",'
                                     b' "fingerprint": {}, "results": []}',
                                     b"[" * 100_000 + b"]" * 100_000, b'{"a": NaN}'])
def test_garbage_files_are_one_line_errors(tmp_path, capsys, content):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    db = str(tmp_path / "s.db")
    code, _, err = main_inprocess(["import", str(path), "--db", db], capsys)
    check(code, err, content[:20])
    assert code == 2


def test_an_endless_file_is_refused_and_a_big_one_bounded_by_bytes_read(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GPUPARITY_MAX_IMPORT_BYTES", str(8 * 2**20))
    t0 = time.monotonic()
    code, _, err = main_inprocess(["import", "/dev/zero", "--db", str(tmp_path / "s.db")], capsys)
    assert code == 2 and "not a regular file" in err and time.monotonic() - t0 < 10
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(9 * 2**20)                  # sparse: 9 MiB of zeros, past the 8 MiB limit
    code, _, err = main_inprocess(["import", str(big), "--db", str(tmp_path / "s.db")], capsys)
    assert code == 2 and "limit" in err and time.monotonic() - t0 < 10


def test_run_ids_with_wildcards_name_one_run(tmp_path, capsys):
    db = str(tmp_path / "s.db")
    for run_id in ("run-1", "run_1", "run%1", "a/b"):
        doc = base_doc()
        doc["run_id"] = run_id
        path = tmp_path / "r.json"
        path.write_text(json.dumps(doc))
        code, _, err = main_inprocess(["import", str(path), "--db", db], capsys)
        if "%" in run_id or "/" in run_id:
            assert code == 2 and "run_id" in err             # ids are [A-Za-z0-9._:+-]: no patterns, no paths
        else:
            assert code == 0, err
    code, out, err = main_inprocess(["show", "run_", "--json", "--db", db], capsys)
    assert code == 0 and json.loads(out)["run_id"] == "run_1"  # '_' is itself, not a LIKE wildcard
    code, out, err = main_inprocess(["show", "run", "--db", db], capsys)
    assert code == 2 and "several runs" in err


# -- evidence: real run documents, mutated as a forger would -----------------------------------
EVIDENCE = settings(max_examples=24, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FACTORS = (0.1, 0.5, 2.0, 10.0, 1000.0)
STRUCTURAL = ("duplicate", "copies", "bigint", "future", "power", "work")     # refused even with --recompute
FIGURE_FIELDS = [("metric", f) for f in ("value", "ci_low", "ci_high", "log_se", "spread")] + \
    [("derived", f) for f in ("tflops", "gbs", "tokens_per_s", "pct_peak", "interactivity", "mfu", "ttft_s",
                              "tpot_s", "prefill_tokens_per_s", "busbw_gbs", "algbw_gbs")] + \
    [("summary", "median")] + [("info", "serving", f) for f in ("throughput_per_gpu", "output_throughput",
                                                               "interactivity", "completed")]


QUICK_RUN = os.path.join(os.path.dirname(__file__), "data", "quick-run-cpu.json.gz")


def recorded_docs() -> dict:
    """Results of the recorded CPU quick run (tests/data): an llm and a training result, and a
    memory result written as schema 1 wrote it (no trials, the interval from the bootstrap of the
    median time, the peak without its kind); each in a document of its own."""
    with gzip.open(QUICK_RUN, "rt") as fh:
        run = json.load(fh)
    by = {r["workload"]: r for r in run["results"] if r["status"] == "ok"}
    training = by["training"]
    # recorded before peak kinds carried a tokens/s figure's FLOP per token: as `run` records it now
    training["info"]["peak_kind"] = peak_kind_for(training["info"]["peak_kind"], training["work"])
    legacy = by["memory"]
    s, amount = legacy["summary"], legacy["work"]["bytes"]
    legacy["metric"] = {"name": "bytes", "unit": "GB/s", "value": amount / s["median"] / 1e9,
                        "higher_is_better": True, "ci_low": amount / s["ci_high"] / 1e9,
                        "ci_high": amount / s["ci_low"] / 1e9}
    for field in ("trials", "flags"):
        legacy.pop(field)
    legacy["info"].pop("peak_kind", None)
    docs = {name: dict(copy.deepcopy(run), results=[r]) for name, r in
            (("llm", by["llm"]), ("training", training), ("legacy", legacy))}
    docs["legacy"]["schema_version"] = 1
    return docs


def collectives_doc(fingerprint: dict) -> dict:
    """A collectives point as its execute makes each trial (timed samples, work in bus bytes,
    derive, its bandwidths) and its merge_trials folds two: a real one takes a torchrun job."""
    from gpuparity.measure.stats import summarize
    from gpuparity.results.figure import bus_factor, derive, fill_workload_figures
    from gpuparity.results.schema import new_run
    from gpuparity.workloads.base import registry

    trials = []
    for seed in (1, 2):
        r = new_result("collectives", "comm", {"op": "all_reduce", "bytes": 65536, "ranks": 2, "nodes": 1,
                                               "dtype": "fp32"}, "fp32")
        r["samples"] = noisy(2e-4, 0.03, 12, seed)
        r["summary"] = summarize(r["samples"])
        r["work"] = {"bytes": 65536 * bus_factor("all_reduce", 2)}
        r["info"].update(size_bytes=65536, world_size=2)
        derive(r, "bytes:interconnect", fingerprint.get("spec"))
        fill_workload_figures(r)
        trials.append(r)
    doc = new_run(fingerprint)
    doc["results"] = [registry()["collectives"].merge_trials(trials, type("Ctx", (), {"spec": fingerprint["spec"]}))]
    doc.update(status="complete", finished_at=doc["started_at"])
    return json.loads(json.dumps(doc))


@pytest.fixture(scope="module")
def real_docs(tmp_path_factory):
    """Run documents `gpuparity run` wrote on this machine: memory kernels and a serving point
    (the project's fault server's well-behaved route), two trials each; the recorded quick run's
    llm, training and (as schema 1) memory results; a collectives point."""
    from serving_fixtures import start_own, stop

    folder = tmp_path_factory.mktemp("real")
    docs = {}
    proc, url = start_own(folder, "honest", "--model", "none", "--faults")
    try:
        runs = {"memory": ["memory", "--set", "op=copy,triad", "--set", "elements=65536"],
                "serving": ["serving", "--set", f"url={url.rsplit('/v1', 1)[0]}/fault/refuse_ignore_eos/v1",
                            "--set", "model=fault", "--set", "concurrency=2", "--set", "num_prompts=6",
                            "--set", "warmup=0", "--set", "tokenizer=none", "--set", "input_len=4",
                            "--set", "output_len=4"]}
        for name, args in runs.items():
            path = folder / f"{name}.json"
            out = main_inprocess(["run", *args, "--trials", "2", "--in-process", "--no-store", "--json", str(path)],
                                 _NoCapture())
            assert out[0] == 0, out
            docs[name] = json.loads(path.read_text())
    finally:
        stop(proc)
    docs.update(recorded_docs())
    docs["collectives"] = collectives_doc(docs["memory"]["fingerprint"])
    return docs


class _NoCapture:
    """main_inprocess's capsys for a module fixture (output goes where it goes)."""

    def readouterr(self):
        class Out:
            out = err = ""
        return Out()


def figure_paths(r: dict) -> list[tuple]:
    out = []
    for path in FIGURE_FIELDS:
        node = r
        for k in path:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, (int, float)) and not isinstance(node, bool) and node:
            out.append(path)
    out += [("trials", j, "value") for j, t in enumerate(r.get("trials") or []) if t.get("value")]
    return out


def figure_paths_of(r: dict) -> set:
    return {p[-1] for p in figure_paths(r) if p[0] == "derived"}


def set_path(r: dict, path: tuple, value) -> None:
    node = r
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def get_path(r: dict, path: tuple):
    for k in path:
        r = r[k]
    return r


@st.composite
def forged(draw, docs, names):
    name = draw(st.sampled_from(names))
    doc = copy.deepcopy(docs[name])
    i = draw(st.sampled_from([j for j, r in enumerate(doc["results"]) if r["status"] == "ok"]))
    r = doc["results"][i]
    serving = r["category"] == "serving"
    own = [("derived", f) for f in WORKLOAD_FIGURES.get(r["workload"], ()) if f in figure_paths_of(r)]
    kinds = ["figure", "figure", "samples", "key", *(k for k in STRUCTURAL if k != "work")] + \
        ([] if serving else ["work"]) + \
        (["own", "own"] if own else [])        # own: MFU, TTFT, busbw ... (results.figure.workload_figures)
    if not r.get("trials"):                 # schema 1: no trials to duplicate
        kinds = [k for k in kinds if k not in ("duplicate", "copies")]
    kind = draw(st.sampled_from(kinds))
    factor = draw(st.sampled_from(FACTORS))
    if kind in ("figure", "own"):
        path = draw(st.sampled_from(figure_paths(r) if kind == "figure" else own))
        event(f"{name} {'.'.join(map(str, path))}")
        old = get_path(r, path)
        set_path(r, path, type(old)(old * factor) if isinstance(old, float) else int(old * factor) + 1)
    elif kind == "samples":        # the raw measurements themselves: the stated figures now disagree
        if serving:                # every time of every request stretched: throughput / factor
            for row in r["info"]["requests"]:
                for f in ("start_us", "end_us", "ttft_us"):
                    row[f] = int(round(row[f] * factor))
                row["itl_us"] = [int(round(g * factor)) for g in row["itl_us"]]
        else:
            r["samples"] = [s * factor for s in r["samples"]]
    elif kind == "work":           # more work stated for the same times (each trial's too): not what the params give
        for node in [r] + [t for t in r.get("trials") or [] if t.get("work")]:
            node["work"] = {k: v * factor for k, v in node["work"].items()}
    elif kind == "key":
        r["key"] = f"{(int(r['key'], 16) + draw(st.integers(1, 2**40))) % 2**64:016x}"
    elif kind in ("duplicate", "copies"):      # one trial again as trial 3 (or as 100 trials)
        first = r["trials"][0]
        copies = 1 if kind == "duplicate" else 99
        if serving:
            rows = [row for row in r["info"]["requests"] if row["trial"] == first["trial"]]
            r["info"]["requests"] += [dict(row, trial=3 + c) for c in range(copies) for row in rows]
        else:
            r["samples"] += r["samples"][:first["n"]] * copies
        r["trials"] += [dict(first, trial=3 + c) for c in range(copies)]
    elif kind == "bigint":
        where = draw(st.sampled_from(["n", "benchmark_version", "param"] if r.get("trials") else
                                     ["benchmark_version", "param"]))
        if where == "n":
            r["trials"][0]["n"] = 2**64 + 7
        elif where == "benchmark_version":
            doc["benchmark_version"] = 2**70
        else:
            r["params"]["num_prompts" if serving else "elements"] = -(2**65)
    elif kind == "future":
        doc["started_at"] = draw(st.sampled_from(["9999-01-01T00:00:00+00:00", "2199-06-01T00:00:00"]))
    elif kind == "power":
        r["telemetry"] = {"method": "nvml", "valid": True, "mean_power_w": draw(st.sampled_from([1e5, 1e9]))}
    return name, doc, kind, r["key"] if kind != "key" else docs[name]["results"][i]["key"], factor


def ratios(capsys, original: str, run_id: str, db: str) -> dict:
    code, out, err = main_inprocess(["compare", original, run_id, "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    return {row["key"]: row["ratio"] for row in json.loads(out)["rows"]}


@pytest.mark.slow
@EVIDENCE
@given(data=st.data())
def test_forged_documents_are_refused_or_stored_as_their_samples_say(real_docs, data, tmp_path_factory, capsys):
    check_forged(data.draw(forged(real_docs, ["memory", "serving"])), real_docs, tmp_path_factory, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["legacy", "llm", "training", "collectives"])
@settings(EVIDENCE, max_examples=15)
@given(data=st.data())
def test_forged_schema_1_and_workload_figures_likewise(real_docs, name, data, tmp_path_factory, capsys):
    """The same forgeries of a schema-1 document and of the workloads whose own figures (MFU,
    TTFT / TPOT, busbw) are derived beside the rates; 15 each: a few seconds on 2 cores."""
    check_forged(data.draw(forged(real_docs, [name])), real_docs, tmp_path_factory, capsys)


def check_forged(drawn: tuple, real_docs: dict, tmp_path_factory, capsys) -> None:
    name, doc, kind, key, factor = drawn
    event(f"{name} {kind}")
    folder = tmp_path_factory.mktemp("forged")
    original, path = str(folder / "original.json"), str(folder / "forged.json")
    with open(original, "w") as fh:
        json.dump(real_docs[name], fh)
    with open(path, "w") as fh:
        fh.write(json.dumps(doc))
    plain, fixed = str(folder / "plain.db"), str(folder / "fixed.db")
    Store(plain).close()
    before = counts(plain)
    code, _, err = timed(capsys, ["import", path, "--db", plain])
    assert code == 2, (kind, err)                          # a stated figure the samples do not give: refused
    check(code, err, kind)
    assert counts(plain) == before
    code, _, err = timed(capsys, ["import", "--recompute", path, "--db", fixed])
    check(code, err, kind)
    if kind in STRUCTURAL:
        assert code == 2, (kind, err)                      # nothing to recompute that would make it true
        return
    assert code == 0, (kind, err)
    code, out, err = main_inprocess(["show", doc["run_id"], "--json", "--db", fixed], capsys)
    assert code == 0, err
    stored = json.loads(out)
    (r,) = [x for x in stored["results"] if x["key"] == key]
    assert "recomputed" in r["flags"] and stored["recomputed"]["count"] >= 1
    want = 1.0 / factor if kind == "samples" else 1.0        # the samples' ratio (work follows from the params)
    got = ratios(capsys, original, doc["run_id"], fixed)
    assert got[key] == pytest.approx(want, rel=0.02), (kind, factor)      # the ratio the samples give
    assert all(v == pytest.approx(1.0, rel=1e-9) for k, v in got.items() if k != key)


# -- forged through the work: real time samples kept, the work, params, samples, ids or text altered --
# (each refused with one line, or, if stored, compared against the original at the samples' ratio)
WORK_MUTANTS = ("work", "trial_work", "negative", "zero", "rates", "params", "duration", "id_latest", "id_prefix",
                "surrogate")
THROUGH_WORK = settings(EVIDENCE, max_examples=40)


def quick_run() -> dict:
    """The recorded CPU quick run (tests/data) as this version stores it: its figures recomputed
    from its samples once (it was recorded before some of today's rules), each trial's work stated."""
    from gpuparity.results.document import validate_run

    with gzip.open(QUICK_RUN, "rt") as fh:
        run = validate_run(json.load(fh), "quick run", recompute=True)
    run.pop("recomputed", None)
    for r in run["results"]:
        for t in r.get("trials") or []:
            if r["status"] == "ok" and r["work"]:
                t["work"] = dict(r["work"])        # as trial_record writes it now
        r["flags"] = [f for f in r.get("flags") or [] if f != "recomputed"]
    return json.loads(json.dumps(run))


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    return quick_run()


def forge(run: dict, r: dict, kind: str, factor: float = 10.0, pick: int = 0) -> tuple[dict, dict, str]:
    """(the original one-result document, its forgery, the key to compare): result r of the run
    forged by `kind` (WORK_MUTANTS); `pick` chooses among the ways (which param, which prefix)."""
    from gpuparity.results.schema import primary_metric, result_key

    original = dict(copy.deepcopy(run), results=[copy.deepcopy(r)])
    doc = copy.deepcopy(original)
    doc["run_id"] = "forged-" + run["run_id"]
    f = doc["results"][0]
    if kind == "work":                 # every work.flop (bytes, tokens) x factor, the result's and each trial's
        for node in [f, *f["trials"]]:
            node["work"] = {k: v * factor for k, v in node["work"].items()}
    elif kind == "trial_work":         # only the per-trial work
        for t in f["trials"]:
            t["work"] = {k: v * factor for k, v in f["work"].items()}
    elif kind in ("negative", "zero"):  # the slow half of the samples (the median of the rest is faster)
        cut = sorted(f["samples"])[len(f["samples"]) // 2]
        f["samples"] = [(-s if kind == "negative" else 0.0) if s >= cut else s for s in f["samples"]]
    elif kind == "rates":              # rates x factor beside the time samples (read before them)
        name, _, scale = primary_metric(f["work"])
        f["metric"]["samples"] = [f["work"][name] / s / scale * factor for s in f["samples"]]
    elif kind == "params":             # a bigger case named, the work (and samples) left as they were
        fields = sorted(k for k, v in f["params"].items() if isinstance(v, int) and not isinstance(v, bool) and v > 1)
        field = fields[pick % len(fields)] if fields else "m"
        f["params"][field] = int(f["params"].get(field, 512) * 8)
        f["key"] = result_key(f["workload"], f["params"], f["dtype"])      # as a careful forger would
        return original, doc, r["key"]
    elif kind == "duration":
        doc["duration_s"] = -5.0
    elif kind == "id_latest":
        doc["run_id"] = ["latest", "LATEST"][pick % 2]
    elif kind == "id_prefix":          # a prefix of the stored original's id: `show PREFIX` would name this one
        doc["run_id"] = run["run_id"][:1 + pick % (len(run["run_id"]) - 1)].rstrip("-")
    elif kind == "surrogate":
        where = ["info", "key", "label"][pick % 3]
        if where == "label":
            doc["label"] = "box \ud800"
        else:
            f["info"]["note" if where == "info" else "\udc80"] = "a lone \udfff surrogate"
    return original, doc, f["key"]


@st.composite
def through_work(draw, run: dict):
    from gpuparity.results.schema import primary_metric

    ok = [r for r in run["results"] if r["status"] == "ok" and r["samples"] and primary_metric(r["work"])]
    r = draw(st.sampled_from(ok))
    kind = draw(st.sampled_from(WORK_MUTANTS))
    event(f"{kind} {r['workload']}")
    return (kind, *forge(run, r, kind, draw(st.sampled_from([x for x in FACTORS if x != 1.0])),
                         draw(st.integers(0, 1000))))


@pytest.mark.slow
@THROUGH_WORK
@given(data=st.data())
def test_forgeries_through_the_work_are_refused_or_read_at_the_samples_ratio(quick, data, tmp_path_factory, capsys):
    kind, original, doc, key = data.draw(through_work(quick))
    folder = tmp_path_factory.mktemp("work")
    first, path = str(folder / "original.json"), str(folder / "forged.json")
    with open(first, "w") as fh:
        json.dump(original, fh)
    with open(path, "w") as fh:
        fh.write(json.dumps(doc))                # a lone surrogate travels as JSON's \ud800 escape
    for mode in ([], ["--recompute"]):
        db = str(folder / f"s{len(mode)}.db")
        with Store(db) as s:
            assert s.save_run(copy.deepcopy(original))    # the run whose id a prefix would take over
        before = counts(db)
        code, _, err = timed(capsys, ["import", *mode, path, "--db", db])
        check(code, err, kind)
        if code == 2:
            assert counts(db) == before, kind
            continue
        event(f"stored: {kind} {' '.join(mode)}")
        code, out, err = timed(capsys, ["show", doc["run_id"], "--json", "--db", db])
        assert code == 0 and json.loads(out)["run_id"] == doc["run_id"], (kind, err)
        got = ratios(capsys, first, doc["run_id"], db)
        assert got.get(key) == pytest.approx(1.0, rel=1e-9), (kind, mode, got)


def test_each_forgery_through_the_work_is_refused_naming_what(quick, tmp_path, capsys):
    """One of each, on a GEMM of the recorded run: the one line says what is wrong."""
    gemm = next(r for r in quick["results"] if r["workload"] == "gemm" and r["status"] == "ok")
    needles = {"work": "but its params give", "trial_work": "trial 1: work states", "negative": "samples holds -",
               "zero": "samples holds 0", "rates": "metric.samples are not the rates", "params": "but its params give",
               "duration": "duration_s", "id_latest": "names the newest run", "id_prefix": "is a prefix of the stored run",
               "surrogate": "lone surrogate"}
    assert set(needles) == set(WORK_MUTANTS)
    db = str(tmp_path / "s.db")
    with Store(db) as s:
        s.save_run(dict(copy.deepcopy(quick), results=[gemm]))
    before = counts(db)
    for kind, needle in needles.items():
        for pick in range(3):
            _, doc, _ = forge(quick, gemm, kind, pick=pick)
            path = tmp_path / f"{kind}.json"
            path.write_text(json.dumps(doc))
            code, _, err = main_inprocess(["import", str(path), "--db", db], capsys)
            check(code, err, kind)
            assert code == 2 and needle in err, (kind, pick, err)
    assert counts(db) == before


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_refused_id_in_a_batch_keeps_the_runs_before_it(backend, quick, tmp_path, capsys, request):
    """Import stops at a run whose id is a prefix of a stored one; the runs before it in the same
    batch stay stored (nothing of the refused one is). SQLite and the tests' real PostgreSQL."""
    gemm = next(r for r in quick["results"] if r["workload"] == "gemm" and r["status"] == "ok")
    db = str(tmp_path / "s.db") if backend == "sqlite" else request.getfixturevalue("pg_db")
    paths = []
    for i, run_id in enumerate(["base-run-0001", "other-1", "base-run", "other-2"]):
        doc = dict(copy.deepcopy(quick), results=[gemm], run_id=run_id)
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps(doc))
    code, _, err = main_inprocess(["import", str(paths[0]), "--db", db], capsys)
    assert code == 0, err
    code, _, err = main_inprocess(["import", *map(str, paths[1:]), "--db", db], capsys)
    assert code == 2 and "prefix of the stored run base-run-0001" in err, err
    with Store(db) as s:
        assert sorted(s.run_ids()) == ["base-run-0001", "other-1"]
        assert s.resolve_run_id("base-run") == "base-run-0001"
