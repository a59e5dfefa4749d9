"""Claims: verdicts from MLPerf Inference and Training rows, round over round, spec data, the price
book, own runs and port reports; reasoning and cited rows on every verdict; hostile claims files."""

import json
import random
import re
import time
from pathlib import Path

import pytest

from gpuparity.errors import UserError
from gpuparity.evidence.claims import evaluate_claims, load_claims
from gpuparity.evidence.reference import import_file
from gpuparity.platform.prices import price_book
from gpuparity.platform.specs import lookup
from gpuparity.results.document import validate_run
from gpuparity.results.figure import derive
from gpuparity.results.schema import new_result, new_run, now_iso
from gpuparity.results.store import Store
from tests.test_mlperf_training import TREE, TREE51, expected_score
from tests.test_reference import V41, V51, cli_inprocess, one_line_error

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "claims" / "rocm-vs-cuda-2025.yaml"
SHIPPED = ROOT / "src" / "gpuparity" / "evidence" / "data" / "rocm-vs-cuda-2025.yaml"
VERDICTS = {"supported", "partly", "not supported", "contradicted", "mixed", "untested", "not testable"}


def parity_grade(ratio: float, tol: float) -> str:
    """A parity claim's grade, written out here: within the band, within twice it, beyond."""
    return ("supported" if 1 / (1 + tol) <= ratio <= 1 + tol else
            "partly" if 1 / (1 + tol) ** 2 <= ratio <= (1 + tol) ** 2 else "not supported")


@pytest.fixture(scope="module")
def ref_db(tmp_path_factory):
    """MLPerf Inference v5.1 and v4.1 rows and the MLPerf Training v5.0 sample."""
    db = str(tmp_path_factory.mktemp("claims") / "ref.db")
    with Store(db) as store:
        import_file(store, "mlperf", V51)
        import_file(store, "mlperf", V41)
        import_file(store, "mlperf-training", TREE)
    return db


@pytest.fixture(scope="module")
def shipped(ref_db):
    with Store(ref_db) as store:
        return {c["id"]: c for c in evaluate_claims(store)}


def best_per_accelerator(spec_name: str, model: str, scenario: str) -> float:
    """Independent of the importer: straight from the raw file, single node, closed division."""
    spec = lookup(spec_name)
    part = next(w for w in spec["product"].split() if any(ch.isdigit() for ch in w))      # "MI300X", "H200"
    rows = [r for r in json.loads(V51.read_text())
            if r["Category"] == "closed" and r["Model"] == model and r["Scenario"] == scenario
            and r["Nodes"] == 1 and part in r["Accelerator"].replace("-", " ").split()
            and "NVL" not in r["Accelerator"] and "," not in r["Accelerator"]]
    return max(r["Performance_Result"] / r["a#"] for r in rows)


def test_shipped_file_is_the_example():
    assert SHIPPED.read_text() == EXAMPLE.read_text()
    claims = load_claims(EXAMPLE)
    assert {str(i) for i in range(1, 13)} <= {c.id for c in claims}


def test_every_verdict_carries_reasoning_rows_and_evidence(shipped):
    for c in shipped.values():
        assert c["verdict"] in VERDICTS and (c["evidence"] or c["verdict"] == "not testable"), c["id"]
        assert all(isinstance(e["summary"], str) and e["summary"] for e in c["evidence"])
        assert c["reasoning"].startswith(c["verdict"].capitalize()) or c["reasoning"].count(".") > 1, c["id"]
        assert c["verdict"].capitalize() in c["reasoning"], c["id"]
        assert isinstance(c["rows"], list)
        for row in c["rows"]:
            if row["source"].startswith("mlperf"):
                assert row["round"] and row["result_id"] and row["submitter"] and row["side"], c["id"]
        if c["verdict"] != "untested":
            assert c["command"] is None
    assert {c["verdict"] for c in shipped.values()} >= {"supported", "untested"}


def test_training_claim_decided_from_mlperf_training_rows(shipped):
    scores = {}
    for bench in TREE.glob("*/results/*/llama2_70b_lora"):
        scores[bench.parts[-2]] = expected_score(bench)[1]
    h200, mi325x = scores["1xXE9680Lx8H200-SXM-141GB"], scores["MI325X_EPYC_9575F_pytorch"]
    c = shipped["mi325x-h200-llama2-lora-training"]
    assert c["verdict"] == ("supported" if h200 / mi325x > 1 else "contradicted" if h200 / mi325x < 1 / 1.05
                            else "not supported")
    assert f"{h200 / mi325x:.3g}" in c["reasoning"] and "5.0" in c["reasoning"]
    # the names and the numbers in one order: "8x H200 SXM 23.88 min (...) vs 8x MI325X 22.04 min (...)"
    assert f"8x H200 SXM {h200:.2f} min" in c["reasoning"] and f"8x MI325X {mi325x:.2f} min" in c["reasoning"]
    assert c["reasoning"].index("8x H200 SXM") < c["reasoning"].index("8x MI325X")
    cited = {(r["round"], r["result_id"], r["submitter"], r["side"]) for r in c["rows"]}
    assert cited == {("5.0", "AMD/MI325X_EPYC_9575F_pytorch", "AMD", "subject"),
                     ("5.0", "Dell/1xXE9680Lx8H200-SXM-141GB", "Dell", "baseline")}
    # claim 7 names no GPU: read on each generation pair the sample holds (v5.0: H200 with MI300X and MI325X)
    seven = shipped["7"]
    mi300x = scores["MI300X_EPYC_9575F_pytorch"]
    assert [(k["label"], round(k["value"], 12)) for k in seven["checks"]] == [
        ("H200/MI300X llama2_70b_lora v5.0", round(mi300x / h200, 12)),
        ("H200/MI325X llama2_70b_lora v5.0", round(mi325x / h200, 12))]
    assert seven["pairs"][:3] == ["H100/MI300X", "H200/MI300X", "H200/MI325X"]
    assert "H100/MI300X: " in seven["reasoning"] or any("H100/MI300X" in e["summary"] for e in seven["evidence"])


def test_mlperf_claims_decided_from_the_data(shipped):
    ratio = best_per_accelerator("mi325x", "llama2-70b-99", "Offline") / best_per_accelerator(
        "h200-sxm", "llama2-70b-99", "Offline")
    c = shipped["mi325x-h200-llama2-70b"]
    assert c["verdict"] == parity_grade(ratio, 0.05)
    assert f"{ratio:.3g}" in c["reasoning"]
    cited = {r["result_id"] for r in c["rows"]}
    assert "5.1-0002" in cited and all(r["round"] == "5.1" for r in c["rows"])
    assert all(e.get("note") for e in c["evidence"] if e.get("kind") == "mlperf")
    server = best_per_accelerator("mi300x", "llama2-70b-99", "Server") / best_per_accelerator(
        "h200-sxm", "llama2-70b-99", "Server")
    assert shipped["mi300x-h200-llama2-server"]["verdict"] == parity_grade(server, 0.05)


def test_missing_evidence_is_untested_with_the_reason(shipped):
    # v5.1 is held whole and has no MI300X FP4 result: the round answers "no".
    ten = shipped["10"]
    assert ten["verdict"] == "contradicted" and ten["reasoning"].startswith("MI300X (CDNA3) has no FP4 matrix unit")
    assert "v5.1 has no MI300X FP4 result" in ten["reasoning"]
    # MI355X is open division only and B200 ran DeepSeek-R1 at FP4: MLPerf cannot decide claim 4.
    four = shipped["4"]
    assert four["verdict"] == "untested" and "gpuparity run" in four["command"]
    assert "open division only" in four["reasoning"]


def test_round_over_round_on_the_same_system(shipped, ref_db, tmp_path):
    # Claim 1 wants ROCm 7 over ROCm 6.0: the same MI300X system ran ROCm 6.1.2 (v4.1) and 6.4.1 (v5.1).
    one = shipped["1"]
    assert one["verdict"] == "not supported"     # >= 3.5x claimed, 1.18x measured
    raw41 = next(r for r in json.loads(V41.read_text()) if r["ID"] == "v4.1-0002" and r["Model"] == "llama2-70b-99"
                 and r["Scenario"] == "Offline")
    raw51 = next(r for r in json.loads(V51.read_text()) if r["System"] == raw41["System"] and r["a#"] == 8
                 and r["Model"] == "llama2-70b-99" and r["Scenario"] == "Offline" and r["Category"] == "closed")
    uplift = raw51["Performance_Result"] / raw41["Performance_Result"]
    assert f"x{uplift:.3g}" in one["reasoning"] and "rocm 6.1.2 in 4.1 -> rocm 6.4.1 in 5.1" in one["reasoning"]
    path = tmp_path / "rounds.yaml"
    path.write_text("""
claims:
  - id: rocm64-uplift
    text: A year of ROCm (6.1 to 6.4) lifts MI300X Llama 2 70B throughput by at least 10%.
    kind: mlperf-rounds
    subject: {gpu: mi300x, stack: rocm 6.4}
    baseline: {gpu: mi300x, stack: rocm 6.1}
    expected: {min: 1.1}
    tolerance: 0
    mlperf: {model: llama2-70b-99, scenario: Offline, rounds: ["4.1", "5.1"]}
""")
    with Store(ref_db) as store:
        (c,) = evaluate_claims(store, path)
    assert c["verdict"] == ("supported" if uplift >= 1.1 else "partly" if uplift > 1 else "contradicted")
    assert {(r["round"], r["result_id"]) for r in c["rows"]} == {("5.1", raw51["ID"]), ("4.1", "v4.1-0002")}


def test_spec_and_price_claims(shipped):
    power = lookup("mi355x")["tdp_w"] / lookup("b200")["tdp_w"]
    assert power > 1.05 and shipped["6"]["verdict"] == "contradicted"      # 1400 W against 1000 W
    assert any(f"{lookup('mi355x')['tdp_w']:g}" in e["summary"] for e in shipped["6"]["evidence"])
    mem = lookup("mi300x")["memory_gb"] / lookup("h100-sxm")["memory_gb"]
    assert shipped["mi300x-h100-memory"]["verdict"] == ("supported" if abs(mem / 2.4 - 1) <= 0.02 else "contradicted")
    book = price_book()
    ratios = [book[("mi300x", b)]["usd_per_gpu_hour"] / book[("h100-sxm", b)]["usd_per_gpu_hour"]
              for b in ("hyperscaler", "neocloud", "3yr-rental", "on-demand-typical")]
    import math

    grades = ["supported" if 0.5 * 0.95 <= r <= 0.7 * 1.05 else "contradicted" if r * 1.05 > 1 and r > 1 else
              "partly" if math.log(r) / math.log(0.7) >= 2 / 3 else "not supported" for r in ratios]
    assert [k["grade"] for k in shipped["5"]["checks"]] == grades
    assert shipped["5"]["verdict"] == ("mixed" if {"supported", "partly"} & set(grades) and
                                       {"not supported", "contradicted"} & set(grades) else shipped["5"]["verdict"])


def test_untested_claims_say_how_to_settle(shipped):
    assert shipped["12"]["verdict"] == "untested" and "gpuparity port SRC --json score.json" in shipped["12"]["command"]
    for cid in ("2", "3", "8", "11", "24"):
        assert shipped[cid]["verdict"] == "untested"
        assert "gpuparity run " in shipped[cid]["command"], cid
        assert "What would settle it: " in shipped[cid]["reasoning"] and "gpuparity run" in shipped[cid]["reasoning"]
    assert "--set model=synthetic:deepseek-v3" in shipped["3"]["command"]


def test_without_reference_data_mlperf_claims_are_untested(tmp_path):
    with Store(str(tmp_path / "empty.db")) as store:
        out = {c["id"]: c for c in evaluate_claims(store)}
    c = out["mi325x-h200-llama2-70b"]
    assert c["verdict"] == "untested" and "gpuparity reference import mlperf" in c["command"]
    t = out["mi325x-h200-llama2-lora-training"]
    assert t["verdict"] == "untested" and "gpuparity reference import mlperf-training" in t["command"]
    assert out["mi300x-h100-memory"]["verdict"] == "supported"  # spec claims need no store


def _run(product: str, spec: str, stack: dict, seconds: float, seed: int) -> dict:
    fp = {"vendor": "AMD", "product": product, "spec": lookup(spec), "host": f"box{seed}", **stack}
    doc = new_run(fp)
    rng = random.Random(seed)
    for model in ("deepseek-ai/DeepSeek-R1", "meta-llama/Llama-3.1-8B"):
        r = new_result("llm", "model", {"model": model, "batch": 8}, "fp8")
        r["samples"] = [seconds * (1 + 0.02 * rng.random()) for _ in range(15)]
        r["work"] = {"tokens": 1000}
        r["summary"] = {"n": len(r["samples"])}
        derive(r, None, fp["spec"])          # the figure from the samples, as `run` derives it
        doc["results"].append(r)
    doc.update(status="complete", finished_at=now_iso())
    return validate_run(doc) or doc


@pytest.mark.parametrize("speedup, verdict", [(3.7, "supported"), (3.0, "partly"), (1.5, "not supported"),
                                              (0.9, "contradicted")])
def test_own_run_claims(tmp_path, speedup, verdict):
    with Store(str(tmp_path / "runs.db")) as store:
        store.save_run(_run("AMD Instinct MI300X", "mi300x", {"rocm_version": "7.0.1"}, 1.0, 1))
        store.save_run(_run("AMD Instinct MI300X", "mi300x", {"rocm_version": "6.0.2"}, speedup, 2))
        out = {c["id"]: c for c in evaluate_claims(store)}
    c = out["3"]  # 3.8x DeepSeek R1 (ROCm 7 vs 6): only the deepseek result counts
    assert c["verdict"] == ("supported" if verdict == "supported" and abs(speedup / 3.8 - 1) <= 0.1 else verdict)
    assert [e["workload"] for e in c["evidence"] if e.get("workload")] == ["llm"]
    assert c["command"] is None and {r["source"] for r in c["rows"]} == {"own-runs"}
    assert out["1"]["verdict"] == verdict  # up to 3.5x: best of both results


def test_port_report(tmp_path, ref_db, cli):
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text("#include <cuda_runtime.h>\nint main() { float* d; cudaMalloc(&d, 64);\n"
                              "  cudaDeviceSynchronize(); cudaFree(d); return 0; }\n")
    report = tmp_path / "score.json"
    p = cli("port", str(src), "--json", str(report))
    assert p.returncode == 0, p.stderr
    score = json.loads(report.read_text())["summary"]["score"]
    with Store(ref_db) as store:
        c = next(c for c in evaluate_claims(store, port_report=str(report)) if c["id"] == "12")
    assert c["verdict"] == ("supported" if score >= 0.9 * 0.98 else "contradicted")
    assert f"{score:.1%}" in c["evidence"][0]["summary"] and c["command"] is None
    low = tmp_path / "low.json"
    low.write_text(json.dumps({"schema": "gpuparity.port/1", "summary": {"uses": 100, "supported": 41, "score": 0.41}}))
    code, out, _ = cli_inprocess("claims", "check", "--port-report", str(low), "--format", "json", "--db", ref_db)
    assert next(c for c in json.loads(out) if c["id"] == "12")["verdict"] == "contradicted"
    for body, message in (({"summary": {"score": None}}, "no tree-level score"), ("[", "not valid JSON")):
        bad = tmp_path / "bad.json"
        bad.write_text(body if isinstance(body, str) else json.dumps(body))
        code, _, err = cli_inprocess("claims", "check", "--port-report", str(bad), "--db", ref_db)
        assert one_line_error(code, err) and message in err


def test_cli_formats_show_the_reasoning(ref_db):
    code, out, err = cli_inprocess("claims", "check", "--db", ref_db)
    assert code == 0, err
    flat = " ".join(re.sub(r"[│┃]", " ", out).split())      # table cells wrap: read the words in order
    assert "contradicted" in out and "What would settle it:" in flat and "gpuparity run" in flat and "MLCommons" in out
    assert "MI300X (CDNA3) has no FP4" in flat and "Supported: the evidence meets the" in flat
    code, md, _ = cli_inprocess("claims", "check", str(EXAMPLE), "--format", "markdown", "--db", ref_db)
    assert code == 0 and "## mi325x-h200-llama2-70b: " in md and "```" in md
    assert "**Reasoning:** MI300X (CDNA3) has no FP4 matrix unit" in md
    code, _, err = cli_inprocess("claims", "check", "--format", "yaml", "--db", ref_db)
    assert one_line_error(code, err)


HOSTILE = ["<script>alert(1)</script>", "x\n# injected heading", "[click](javascript:alert(1))",
           "![img](http://evil.example/x.png)", "<img src=x onerror=alert(1)>", "| a | b |", "```\n<script>x</script>"]


def test_markdown_escapes_data(tmp_path, ref_db):
    from markdown_it import MarkdownIt

    claims = []
    for i, bad in enumerate(HOSTILE):
        claims.append({"id": f"c{i}", "text": bad, "source": bad, "note": bad, "reasoning": bad,
                       "kind": ["spec", "own-runs"], "subject": {"gpu": "mi300x", "label": bad.replace("\n", " ")},
                       "baseline": {"gpu": "h100"}, "expected": {"ratio": 2.4}, "spec": {"field": "memory_gb"},
                       "run": {"workloads": ["llm"], "set": {"model": bad.replace("\n", " ")}}})
    path = tmp_path / "hostile.yaml"
    path.write_text(json.dumps({"claims": claims}))          # JSON is YAML
    code, md, err = cli_inprocess("claims", "check", str(path), "-f", "markdown", "--db", ref_db)
    assert code == 0, err
    html = MarkdownIt().render(md)
    assert "<script" not in html and "<img" not in html and "<a " not in html and "<table" not in html
    assert html.count("<h2>") == len(HOSTILE) and html.count("<h1>") == 1
    code, out, _ = cli_inprocess("claims", "check", str(path), "--db", ref_db)
    assert code == 0 and "\x1b" not in out


@pytest.mark.parametrize("body, message", [
    ("claims: [{id: x, text: t, kind: bogus, subject: {gpu: h100}, baseline: {gpu: mi300x}, expected: {ratio: 1}}]",
     "claim 1 (x): kind.0: Input should be"),
    ("claims: [{id: x, text: t, kind: spec, subject: {gpu: h100}, baseline: {gpu: mi300x}}]",
     "claim 1 (x): expected: Field required"),
    ("claims: [{id: x, text: t, kind: spec, subject: {gpu: h100}, baseline: {gpu: mi300x}, expected: {ratio: 1}}]",
     "kind spec needs"),
    ("claims: [{id: x, text: t, kind: porting, expected: {min: 0.9}, expcted: 1}]", "expcted: Extra inputs"),
    ("claims: [{id: x, text: t, kind: porting, expected: {min: .inf}}]", "finite"),
    ("claims: [{id: x, text: t, kind: porting, expected: {min: 1" + "0" * 400 + "}}]", "out of range"),
    ("claims: [{id: x, text: t, kind: porting, expected: {min: 1" + "0" * 5000 + "}}]", "not readable"),
    ("claims: [{id: x, text: [1, 2], kind: porting, expected: {min: 1}}]", "text: must be text"),
    ("claims: [{id: x, text: t, kind: porting, expected: {min: 1}}, {id: x, text: t, kind: porting, "
     "expected: {min: 1}}]", "duplicate id"),
    ("claims: [{id: \"a\\u0000b\", text: t, kind: porting, expected: {min: 1}}]", "control characters"),
    ("nothing: here", "no top-level 'claims' list"),
    ("claims: [unclosed", "not valid YAML"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
     "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\nclaims: []",
     "expands to more than"),
    ("claims: " + "[" * 10000 + "]" * 10000, "nesting depth"),
    ("claims: " + "[" * 100 + "]" * 100, "nested deeper than 64 levels"),
    ("l: &l [" + ", ".join(["abcdefgh"] * 100) + "]\nclaims: [{id: x, text: t, kind: porting, expected: {min: 1}, "
     "note: *l, source: *l}]", "source: must be text"),
])
def test_bad_claims_files_one_line_and_fast(tmp_path, body, message):
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    started = time.perf_counter()
    with pytest.raises(UserError, match=re.escape(message)):
        load_claims(path)
    assert time.perf_counter() - started < 2
    code, _, err = cli_inprocess("claims", "check", str(path), "--db", str(tmp_path / "s.db"))
    assert one_line_error(code, err), err


def test_claims_file_bounded_by_bytes(tmp_path, monkeypatch):
    from gpuparity.evidence import claims

    monkeypatch.setattr(claims, "MAX_CLAIMS_BYTES", 1000)
    path = tmp_path / "big.yaml"
    path.write_text("claims: []\n#" + "x" * 2000)
    with pytest.raises(UserError, match="over the 1000-byte limit"):
        load_claims(path)
    for name in ("/dev/zero", str(tmp_path)):
        with pytest.raises(UserError):
            load_claims(name)
    (tmp_path / "latin.yaml").write_bytes(b"claims: [\xff]")
    with pytest.raises(UserError, match="not UTF-8"):
        load_claims(tmp_path / "latin.yaml")


def test_custom_claims_keep_divisions_and_nodes_apart(tmp_path, ref_db):
    path = tmp_path / "c.yaml"
    path.write_text("""
claims:
  - id: mi355x-b200-closed
    text: MI355X beats B200 on Llama 2 70B.
    kind: mlperf
    subject: {gpu: mi355x}
    baseline: {gpu: b200}
    expected: {direction: higher}
    mlperf: {model: llama2-70b-99, scenario: Offline, category: closed}
  - id: mi300x-h100
    text: MI300X matches H100 on Llama 2 70B.
    kind: mlperf
    subject: {gpu: mi300x}
    baseline: {gpu: h100}
    expected: {direction: parity}
    mlperf: {model: llama2-70b-99, scenario: Offline}
  - id: b200-mi300x-training
    text: B200 trains Llama 2 70B LoRA at least 3x as fast as MI300X.
    kind: mlperf-training
    subject: {gpu: b200}
    baseline: {gpu: mi300x}
    expected: {min: 3}
    tolerance: 0
    training: {benchmark: llama2_70b_lora}
  - id: mi300x-b200-training
    text: MI300X trains Llama 2 70B LoRA faster than B200.
    kind: mlperf-training
    subject: {gpu: mi300x}
    baseline: {gpu: b200}
    expected: {direction: higher}
    training: {benchmark: llama2_70b_lora}
""")
    with Store(ref_db) as store:
        out = {c["id"]: c for c in evaluate_claims(store, path)}
    # MI355X has open-division rows only; they never stand against closed B200 rows.
    assert out["mi355x-b200-closed"]["verdict"] == "untested"
    assert any("open/" in e["summary"] for e in out["mi355x-b200-closed"]["evidence"])
    # H100's v5.1 Llama 2 70B rows are multi-node: excluded from per-accelerator figures.
    assert out["mi300x-h100"]["verdict"] == "untested"
    # training: a shortfall in size keeps the direction (partly); the opposite direction contradicts
    scores = {b.parts[-2]: expected_score(b)[1] for b in TREE.glob("*/results/*/llama2_70b_lora")}
    ratio = scores["MI300X_EPYC_9575F_pytorch"] / scores["1xXE9680Lx8B200-SXM-180GB"]
    import math

    assert out["b200-mi300x-training"]["verdict"] == (
        "supported" if ratio >= 3 else "partly" if math.log(ratio) / math.log(3) >= 2 / 3 else "not supported"
        if ratio > 1 else "contradicted")
    assert f"{ratio:.3g}" in out["b200-mi300x-training"]["reasoning"]
    assert out["mi300x-b200-training"]["verdict"] == ("contradicted" if ratio > 1.05 else "supported")
    assert len(out["mi300x-b200-training"]["rows"]) == 2


@pytest.fixture(scope="module")
def every_round_db(tmp_path_factory):
    """Inference v5.1 and v4.1, Training v5.0 and v5.1: pairs in more than one round."""
    db = str(tmp_path_factory.mktemp("agree") / "ref.db")
    with Store(db) as store:
        for fmt, path in (("mlperf", V51), ("mlperf", V41), ("mlperf-training", TREE), ("mlperf-training", TREE51)):
            import_file(store, fmt, path)
    return db


PAIRS = [("mi325x", "h200-sxm"), ("mi300x", "h200-sxm"), ("h200-sxm", "b200"), ("mi300x", "mi325x"),
         ("mi300x", "b200"), ("mi355x", "b200"), ("mi325x", "mi355x"), ("b200", "gb200")]


@pytest.mark.parametrize("statistic", ["best", "median"])
def test_claims_check_and_reference_compare_agree(every_round_db, tmp_path, statistic):
    """For every pair of parts and every benchmark either decides: a claim with B as subject and A as
    baseline gets one check per group `reference compare A B` reports, with the same ratio, and is
    untested exactly where compare has no group (divisions, rounds, precision, scale kept apart alike)."""
    claims, expected = [], {}
    for a, b in PAIRS:
        code, out, err = cli_inprocess("reference", "compare", a, b, "--db", every_round_db, "--json",
                                       "--statistic", statistic)
        assert code == 0, err
        result = json.loads(out)
        ratios: dict[tuple, list] = {}
        for g in result["groups"]:
            ratios.setdefault((g["source"], g["benchmark"], g["scenario"]), []).append(g["ratio"])
        source_of = {"time-to-train": "mlperf-training"}
        asked = set(ratios) | {(source_of.get(x["scenario"], "mlperf-inference"), x["benchmark"], x["scenario"])
                               for x in result["unpaired"]}
        for source, bench, scenario in sorted(asked):
            cid = f"{a}-{b}-{bench}-{scenario}"
            claim = {"id": cid, "text": "x", "kind": "mlperf" if source == "mlperf-inference" else "mlperf-training",
                     "subject": {"gpu": b}, "baseline": {"gpu": a}, "expected": {"direction": "parity"}}
            if source == "mlperf-inference":
                claim["mlperf"] = {"model": bench, "scenario": scenario, "statistic": statistic}
            else:
                claim["training"] = {"benchmark": bench, "statistic": statistic}
            claims.append(claim)
            expected[cid] = sorted(ratios.get((source, bench, scenario), []))
    assert sum(1 for v in expected.values() if v) >= 20 and any(len(v) > 1 for v in expected.values())
    path = tmp_path / "agree.yaml"
    path.write_text(json.dumps({"claims": claims}))
    with Store(every_round_db) as store:
        verdicts = {c["id"]: c for c in evaluate_claims(store, path)}
    for cid, ratios in expected.items():
        values = sorted(e["value"] for e in verdicts[cid]["evidence"] if e["kind"] == "check")
        assert values == pytest.approx(ratios, rel=1e-12), cid
        assert (verdicts[cid]["verdict"] == "untested") == (not ratios), cid


def test_claims_keep_precision_classes_apart(tmp_path, ref_db):
    """v5.1 B200 ran Llama 3.1 8B at FP4 and H200 at FP8: no like-for-like pair unless asked."""
    path = tmp_path / "p.yaml"
    path.write_text("""
claims:
  - id: same-class
    text: B200 is at least twice H200 on Llama 3.1 8B.
    kind: mlperf
    subject: {gpu: b200}
    baseline: {gpu: h200}
    expected: {min: 2}
    mlperf: {model: llama3.1-8b, scenario: Offline, round: "5.1"}
  - id: fp8-only
    text: B200 at FP8 is at least twice H200 on Llama 3.1 8B.
    kind: mlperf
    subject: {gpu: b200}
    baseline: {gpu: h200}
    expected: {min: 2}
    mlperf: {model: llama3.1-8b, scenario: Offline, round: "5.1", precision: fp8}
""")
    with Store(ref_db) as store:
        out = {c["id"]: c for c in evaluate_claims(store, path)}
    same = out["same-class"]
    assert same["verdict"] == "untested" and "no like-for-like pair" in same["reasoning"]
    assert "fp4 precision" in same["reasoning"] and "fp8 precision" in same["reasoning"]
    assert {r["side"] for r in same["rows"]} == {"subject", "baseline"}      # what there is, cited
    fp8 = out["fp8-only"]                                      # v5.1 is held whole: no B200 FP8 row exists
    assert fp8["verdict"] == "contradicted" and "v5.1 has no B200 FP8 llama3.1-8b Offline result" in fp8["reasoning"]


def _list(db: str, *args: str) -> list[dict]:
    code, out, err = cli_inprocess("reference", "list", "--db", db, "--json", "--limit", "100000",
                                   "--source", "mlperf-inference", *args)
    assert code == 0, err
    return json.loads(out)


def test_claims_rounds_and_reference_rules_agree(every_round_db, tmp_path):
    """mlperf-rounds, the one comparison across rounds, under the rules `reference list` and
    `reference compare` apply: for every part in both inference rounds, each benchmark and scenario,
    the claim's checks are the same-system ratios of the rows `reference list` admits (closed,
    available, one per distinct run, a published precision), paired within one precision class,
    and each pair stands in a group `reference compare P P` reports in both rounds."""
    early, late = "4.1", "5.1"
    parts = sorted({p for pair in PAIRS for p in pair})
    claims, expected, groups = [], {}, {}
    for part in parts:
        rows = {rnd: [r for r in _list(every_round_db, "--accelerator", part, "--round", rnd)
                      if not r.get("duplicate_of") and r.get("precision_class") and r.get("throughput") is not None]
                for rnd in (early, late)}
        for rnd in (early, late):
            code, out, err = cli_inprocess("reference", "compare", part, part, "--db", every_round_db, "--json",
                                           "--round", rnd)
            groups[part, rnd] = {(g["benchmark"], g["scenario"], g["precision"], g["accelerators"])
                                 for g in json.loads(out)["groups"]} if code == 0 else set()
        benches = ({(r["model"], r["scenario"]) for r in rows[early]} & {(r["model"], r["scenario"]) for r in rows[late]})
        for model, scenario in sorted(benches):
            best: dict[tuple, dict] = {}
            for rnd in (early, late):
                for r in rows[rnd]:
                    if (r["model"], r["scenario"]) == (model, scenario):
                        key = (r["submitter"].lower(), r["system"].lower(), r["accelerators"], r["nodes"],
                               r["precision_class"])
                        best.setdefault(key, {}).setdefault(rnd, []).append(r["result"])
            ratios: dict[str, list] = {}
            for key, by_round in best.items():
                if len(by_round) == 2:
                    ratios.setdefault(key[-1], []).append(max(by_round[late]) / max(by_round[early]))
                    for rnd in (early, late):   # a pair is a like-for-like group of each round
                        assert (model, scenario, key[-1], key[2]) in groups[part, rnd], (part, model, key)
            cid = f"{part}-{model}-{scenario}"
            claims.append({"id": cid, "text": "x", "kind": "mlperf-rounds", "subject": {"gpu": part},
                           "baseline": {"gpu": part}, "expected": {"min": 1},
                           "mlperf": {"model": model, "scenario": scenario, "rounds": [early, late]}})
            expected[cid] = sorted(max(v) for v in ratios.values())
    assert sum(1 for v in expected.values() if v) >= 4       # MI300X llama2-70b-99/-99.9, Offline/Server
    path = tmp_path / "rounds.yaml"
    path.write_text(json.dumps({"claims": claims}))
    with Store(every_round_db) as store:
        verdicts = {c["id"]: c for c in evaluate_claims(store, path)}
    for cid, ratios in expected.items():
        c = verdicts[cid]
        assert sorted(e["value"] for e in c["evidence"] if e["kind"] == "check") == pytest.approx(ratios), cid
        assert (c["verdict"] == "untested") == (not ratios), cid
        rules = [e["summary"] for e in c["evidence"] if e["summary"].startswith("rules: ")]
        assert rules and "rounds 4.1 and 5.1 mixed on purpose: the same system" in rules[0], cid
        assert "closed division" in rules[0] and "same precision class" in rules[0]
        for row in c["rows"]:
            assert row["category"] == "closed" and row["round"] == (late if row["side"] == "subject" else early)


def test_rounds_pair_a_system_within_its_precision_class(tmp_path):
    """One system ran fp4 and fp8 in both rounds (and a repeat, an open and a preview row): fp8 pairs
    with fp8, fp4 with fp4, one check each; the others never enter the ratio."""
    from gpuparity.evidence import mlperf
    from gpuparity.evidence.rules import annotate

    ids = iter(range(1, 100))

    def rec(version: str, result: float, precision: str, **fields) -> dict:
        raw = {"ID": f"{version.lstrip('v')}-{next(ids):04d}", "Submitter": "AMD", "Category": "closed",
               "System": "box", "Model": "llama2-70b-99", "Scenario": "Offline", "Performance_Units": "Tokens/s",
               "Nodes": 1, "Availability": "available", "weight_data_types": precision, "version": version,
               "Software": "ROCm 6.4", "Accelerator": "AMD Instinct MI300X 192GB HBM3", "a#": 8,
               "Performance_Result": result, **fields}
        return annotate(mlperf.parse_row(raw, 1))

    rows = [rec("v4.1", 20000, "fp4"), rec("v4.1", 10000, "fp8"), rec("v4.1", 5000, "fp8", Category="open"),
            rec("v5.1", 12000, "fp8"), rec("v5.1", 12000, "fp8"), rec("v5.1", 30000, "fp4"),
            rec("v5.1", 40000, "fp8", Availability="preview")]
    assert {r["round"] for r in rows} == {"4.1", "5.1"} and {r["precision_class"] for r in rows} == {"fp4", "fp8"}
    db = str(tmp_path / "r.db")
    with Store(db) as store:
        store.save_references(rows)
    path = tmp_path / "c.yaml"
    path.write_text("""
claims:
  - id: uplift
    text: A year of ROCm lifts MI300X Llama 2 70B throughput by at least 10%.
    kind: mlperf-rounds
    subject: {gpu: mi300x}
    baseline: {gpu: mi300x}
    expected: {min: 1.1}
    tolerance: 0
    mlperf: {model: llama2-70b-99, scenario: Offline, rounds: ["4.1", "5.1"], statistic: median}
  - id: fp4-only
    text: x
    kind: mlperf-rounds
    subject: {gpu: mi300x}
    baseline: {gpu: mi300x}
    expected: {min: 1.1}
    mlperf: {model: llama2-70b-99, scenario: Offline, rounds: ["4.1", "5.1"], precision: mxfp4}
""")
    with Store(db) as store:
        out = {c["id"]: c for c in evaluate_claims(store, path)}
    checks = {e["summary"].split("precision")[0].rsplit(" ", 2)[-2]: e["value"]
              for e in out["uplift"]["evidence"] if e["kind"] == "check"}
    assert checks == pytest.approx({"fp8": 12000 / 10000, "fp4": 30000 / 20000})
    assert out["uplift"]["verdict"] == "supported"
    cited = [(r["side"], r["value"] * 8) for r in out["uplift"]["rows"]]     # per accelerator, 8 of them
    assert sorted(cited) == [("baseline", 10000), ("baseline", 20000), ("subject", 12000), ("subject", 30000)]
    assert rows[3]["result_id"] in {r["result_id"] for r in out["uplift"]["rows"]}     # the lower ID of the repeat
    assert "mixed on purpose" in out["uplift"]["evidence"][0]["summary"]
    fp4 = [e["value"] for e in out["fp4-only"]["evidence"] if e["kind"] == "check"]
    assert fp4 == pytest.approx([1.5]) and "fp4 precision" in out["fp4-only"]["evidence"][0]["summary"]
