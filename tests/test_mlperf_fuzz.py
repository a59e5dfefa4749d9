"""Property-based fuzzing (hypothesis, fixed seed, bounded examples) of the MLPerf Inference and
Training importers and the claims checker, through the CLI in this process: every case exits 0 or 2,
an error is one line (no traceback), no case takes 10 s, a refused input leaves the store as it was,
and whatever is accepted can be listed, compared, shown and checked."""

import copy
import gzip
import json
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.test_mlperf_training import TREE
from tests.test_mlperf_v61 import V61
from tests.test_reference import V41, V51, cli_inprocess, ref_rows

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CASE_SECONDS = 10
pytestmark = pytest.mark.timeout(240)      # a hang fails the file instead of stalling CI

HOSTILE = [None, "", " ", -1, -0.0, 0, 1.5, 8.0, "8.0", "-8", 2**64, 10**30, 1e308, "1e999", "NaN", "Infinity",
           True, False, [], {}, [1, [2, [3]]], {"a": {"b": {}}}, "x" * 20_000, "9" * 20_000, "\x00", "\x1b[2J",
           "a\nb", "<script>alert(1)</script>", "[x](javascript:alert(1))", "Latency (ms)", "Tokens/s",
           "v4.1-0001", "5.1", "AMD Instinct MI300X 192GB HBM3", "NVIDIA H200-SXM-141GB", "\u202e\u0301"]
value = (st.sampled_from(HOSTILE) | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
         | st.text(max_size=30))


def run(*args: str) -> tuple[int, str, str]:
    started = time.perf_counter()
    code, out, err = cli_inprocess(*args)
    assert time.perf_counter() - started < CASE_SECONDS, args
    event(f"{args[0]} {args[1]}: exit {code}")
    assert code in (0, 2), (args, code, err)
    assert "Traceback" not in err and "Traceback" not in out
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, err
    return code, out, err


def check_store_usable(db: str, spec: str = "mi300x") -> None:
    code, out, _ = run("reference", "list", "--db", db, "--json", "-n", "100000")
    assert code == 0
    rows = json.loads(out)
    assert run("reference", "list", "--db", db)[0] == 0
    assert run("reference", "compare", spec, "h200", "--db", db)[0] == 0
    if rows:
        assert run("reference", "show", rows[-1]["ref_id"], "--db", db)[0] == 0
    assert run("claims", "check", "--db", db, "-f", "json")[0] == 0


def imported_or_unchanged(db: str, args: list[str]) -> int:
    before = ref_rows(db)
    code, _, _ = run("reference", "import", *args, "--db", db)
    if code == 2:
        assert ref_rows(db) == before
    else:
        assert len(ref_rows(db)) >= len(before)
    return code


# -- MLPerf Inference summaries --------------------------------------------------------------------
V61_ROWS = list(json.loads(V61.read_text()).values())   # MI355X and B300 throughput and latency, two mixed systems
BASE_ROWS = (json.loads(V51.read_text())[:6] + json.loads(V41.read_text())[4:7] + V61_ROWS[:4]
             + [V61_ROWS[9], V61_ROWS[12]] + V61_ROWS[34:36])


@st.composite
def inference_file(draw) -> bytes:
    rows = copy.deepcopy(BASE_ROWS)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(rows) - 1))
        action = draw(st.sampled_from(["set", "set", "set", "drop", "replace", "rename"]))
        field = draw(st.sampled_from(sorted(BASE_ROWS[0]) + sorted(V61_ROWS[0])))
        if not isinstance(rows[i], dict) or action == "replace":
            rows[i] = draw(value)
        elif action == "drop":
            rows[i].pop(field, None)
        elif action == "rename":
            rows[i][draw(st.sampled_from(["Organization", "Division", "Units", "number_of_nodes"]))] = \
                rows[i].pop(field, draw(value))
        else:
            rows[i][field] = draw(value)
    if draw(st.booleans()):              # as v6.1 publishes it: an object of rows keyed by index
        rows = {str(i): r for i, r in enumerate(rows)}
    data = json.dumps(rows, allow_nan=False).encode()
    shape = draw(st.sampled_from(["plain", "plain", "gzip", "truncate", "flip", "infinity"]))
    if shape == "infinity":
        return data.replace(b"8840.42", b"1e999", 1).replace(b'"a#": 8,', b'"a#": -8,', 1)
    if shape == "gzip":
        return gzip.compress(data)
    if shape == "truncate":
        return data[:draw(st.integers(0, len(data)))]
    if shape == "flip":
        at = draw(st.integers(0, len(data) - 1))
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1:]
    return data


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@SETTINGS
@given(body=inference_file(), strict=st.booleans())
def test_fuzz_inference_import(workdir, body, strict):
    db = str(workdir / "inference.db")
    path = workdir / "summary.json"
    path.write_bytes(body)
    code = imported_or_unchanged(db, ["mlperf", str(path)] + (["--strict"] if strict else []))
    if code == 0:
        check_store_usable(db)
        assert run("reference", "compare", "mi355x", "b300", "--db", db)[0] == 0


# -- MLPerf Training trees --------------------------------------------------------------------------
SYSTEM = "MI300X_EPYC_9575F_pytorch"
SYSTEM_DESC = json.loads((TREE / "AMD" / "systems" / f"{SYSTEM}.json").read_text())
LOG_LINES = [line for line in (TREE / "AMD" / "results" / SYSTEM / "llama2_70b_lora" / "result_0.txt").read_text()
             .splitlines() if any(k in line for k in ('"run_start"', '"run_stop"', '"submission_benchmark"'))]


@st.composite
def training_tree(draw) -> dict:
    """{relative path: bytes} of a one-system tree, a few fields or lines mutated."""
    desc = dict(SYSTEM_DESC)
    events = [json.loads(line.split(":::MLLOG ", 1)[1]) for line in LOG_LINES]
    logs = []
    for n in range(draw(st.sampled_from([1, 3, 4, 5, 5]))):
        ev = copy.deepcopy(events)
        for e in ev:
            e["time_ms"] += n * 1000 * (1 + (n % 3))     # runs of different lengths
        logs.append(ev)
    files = {}
    for _ in range(draw(st.integers(0, 2))):
        target = draw(st.sampled_from(["desc", "event", "event", "line", "scaling"]))
        if target == "desc":
            desc[draw(st.sampled_from(["number_of_nodes", "accelerators_per_node", "accelerator_model_name",
                                       "framework", "other_software_stack", "division", "submitter"]))] = draw(value)
        elif target == "event":
            e = draw(st.sampled_from(logs))[draw(st.integers(0, len(events) - 1))]
            key = draw(st.sampled_from(["time_ms", "key", "metadata", "value"]))
            e[key] = draw(value) if key != "metadata" else {"status": draw(value)}
        elif target == "scaling":
            files["scaling.json"] = json.dumps({"scaling_factor": draw(value)}).encode()
        else:
            files[f"result_{draw(st.integers(0, 9))}.txt"] = (":::MLLOG " + draw(st.sampled_from(
                ["{", "[]", "null", '{"key": 1}', "9" * 5000, '{"key": "run_stop"}']))).encode()
    for n, ev in enumerate(logs):
        files.setdefault(f"result_{n}.txt", "\n".join(":::MLLOG " + json.dumps(e) for e in ev).encode())
    out = {f"AMD/results/{SYSTEM}/llama2_70b_lora/{k}": v for k, v in files.items()}
    out[f"AMD/systems/{SYSTEM}.json"] = json.dumps(desc).encode()
    return out


@SETTINGS
@given(files=training_tree(), strict=st.booleans())
def test_fuzz_training_import(workdir, files, strict):
    import shutil

    db = str(workdir / "training.db")
    root = workdir / "training_results_v5.0"
    shutil.rmtree(root, ignore_errors=True)
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    code = imported_or_unchanged(db, ["mlperf-training", str(root)] + (["--strict"] if strict else []))
    if code == 0:
        check_store_usable(db)


# -- claims files --------------------------------------------------------------------------------------
BASE_CLAIMS = yaml.safe_load((Path(__file__).parent.parent / "examples" / "claims" / "rocm-vs-cuda-2025.yaml")
                             .read_text())["claims"]
RAW_YAML = [
    "claims: [{id: &a x, text: *a, kind: porting, expected: {min: 1}}]",
    "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nclaims: []",
    "claims: !!python/object/apply:os.system [echo hi]",
    "claims: [{id: x, text: t, kind: porting, expected: {min: 1" + "0" * 4000 + "}}]",
    "claims: " + "[" * 200 + "]" * 200,
    "claims: [{id: x, text: t, kind: porting, expected: {min: 2001-01-01}}]",
    "claims: [{id: x, text: t, kind: porting, expected: {min: 1}, tolerance: .nan}]",
    "claims:\n  - id: x\n    text: t\n  - *unknown",
    "\ufeffclaims: []",
    "claims: [{? [a, b] : c}]",
]


@st.composite
def claims_text(draw) -> str:
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(RAW_YAML))
    claims = copy.deepcopy(draw(st.lists(st.sampled_from(BASE_CLAIMS), min_size=1, max_size=3, unique_by=lambda c: c["id"])))
    for _ in range(draw(st.integers(0, 2))):      # text that is valid as text but hostile to print
        c = draw(st.sampled_from(claims))
        c[draw(st.sampled_from(["text", "source", "note", "reasoning"]))] = draw(st.sampled_from(
            [h for h in HOSTILE if isinstance(h, str) and h and "\x00" not in h and "\x1b" not in h]))
    for _ in range(draw(st.integers(0, 2))):
        c = draw(st.sampled_from(claims))
        key = draw(st.sampled_from(sorted({k for c in BASE_CLAIMS for k in c}) + ["bogus"]))
        if isinstance(c.get(key), dict) and draw(st.booleans()):
            sub = c[key]
            sub[draw(st.sampled_from(sorted(sub) + ["extra"]))] = draw(value)
        else:
            c[key] = draw(value)
    return yaml.safe_dump({"claims": claims}, allow_unicode=True)


@pytest.fixture(scope="module")
def claims_db(workdir):
    db = str(workdir / "claims.db")
    assert cli_inprocess("reference", "import", "mlperf", str(V41), "--db", db)[0] == 0
    assert cli_inprocess("reference", "import", "mlperf-training", str(TREE), "--db", db)[0] == 0
    return db


@SETTINGS
@given(text=claims_text(), fmt=st.sampled_from(["table", "json", "markdown"]))
def test_fuzz_claims_check(workdir, claims_db, text, fmt):
    path = workdir / "claims.yaml"
    path.write_text(text, encoding="utf-8")
    before = ref_rows(claims_db)
    code, out, _ = run("claims", "check", str(path), "--db", claims_db, "-f", fmt)
    assert ref_rows(claims_db) == before
    if code == 0 and fmt == "json":
        from gpuparity.evidence.claims import VERDICTS

        assert all(c["verdict"] in VERDICTS and isinstance(c["reasoning"], str) for c in json.loads(out))
    if code == 0 and fmt == "markdown":
        from markdown_it import MarkdownIt

        assert "<script" not in MarkdownIt().render(out)
