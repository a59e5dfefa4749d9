"""Claims registry: verdicts from MLPerf v5.1 rows, spec data, the price book, own runs and port reports."""

import json
import random
from pathlib import Path

import pytest

from gpuparity.analysis.claims import evaluate_claims, load_claims
from gpuparity.analysis.prices import price_book
from gpuparity.analysis.reference import import_file
from gpuparity.platform.specs import lookup
from gpuparity.results.schema import new_result, new_run, now_iso, validate_run
from gpuparity.results.store import Store

ROOT = Path(__file__).parent.parent
V51 = Path(__file__).parent / "data" / "mlperf_inference_v5.1_summary_results.json"
EXAMPLE = ROOT / "examples" / "claims" / "rocm-vs-cuda-2025.yaml"
SHIPPED = ROOT / "src" / "gpuparity" / "analysis" / "data" / "rocm-vs-cuda-2025.yaml"
VERDICTS = {"supported", "partly", "contradicted", "untested"}


@pytest.fixture(scope="module")
def ref_db(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("claims") / "ref.db")
    with Store(db) as store:
        import_file(store, "mlperf", V51)
    return db


@pytest.fixture(scope="module")
def shipped(ref_db):
    with Store(ref_db) as store:
        return {c["id"]: c for c in evaluate_claims(store)}


def best_per_accelerator(spec_name: str, model: str, scenario: str) -> float:
    """Independent of the importer: straight from the raw file, single node, closed division."""
    spec = lookup(spec_name)
    rows = [r for r in json.loads(V51.read_text())
            if r["Category"] == "closed" and r["Model"] == model and r["Scenario"] == scenario
            and r["Nodes"] == 1 and spec["product"].split()[0] in r["Accelerator"].replace("-", " ")
            and "NVL" not in r["Accelerator"] and "," not in r["Accelerator"]]
    return max(r["Performance_Result"] / r["a#"] for r in rows)


def test_shipped_file_is_the_example():
    assert SHIPPED.read_text() == EXAMPLE.read_text()
    claims = load_claims(EXAMPLE)
    assert {str(i) for i in range(1, 13)} <= {c["id"] for c in claims}


def test_every_claim_gets_a_verdict_with_evidence(shipped):
    for c in shipped.values():
        assert c["verdict"] in VERDICTS and c["evidence"], c["id"]
        assert all(isinstance(e["summary"], str) and e["summary"] for e in c["evidence"])
        assert (c["command"] is not None) == (c["verdict"] == "untested"), c["id"]


def test_mlperf_claims_decided_from_the_data(shipped):
    ratio = best_per_accelerator("h200-sxm", "llama2-70b-99", "Offline")
    ratio = best_per_accelerator("mi325x", "llama2-70b-99", "Offline") / ratio
    c = shipped["mi325x-h200-llama2-70b"]
    assert c["verdict"] == ("supported" if abs(ratio - 1) <= 0.05 else "contradicted")
    assert f"{ratio:.3g}" in c["evidence"][-1]["summary"]
    cited = {e.get("result_id") for e in c["evidence"] if e.get("kind") == "mlperf"}
    assert "5.1-0002" in cited and all(e.get("note") for e in c["evidence"] if e.get("kind") == "mlperf")
    server = best_per_accelerator("mi300x", "llama2-70b-99", "Server") / best_per_accelerator(
        "h200-sxm", "llama2-70b-99", "Server")
    assert shipped["mi300x-h200-llama2-server"]["verdict"] == (
        "supported" if abs(server - 1) <= 0.05 else "contradicted")
    # No MI300X FP4 result exists in v5.1: a claim that it leads at FP4 fails on the data.
    assert shipped["10"]["verdict"] == "contradicted"
    # MI355X is open division only and B200 ran DeepSeek-R1 at FP4: MLPerf cannot decide claim 4.
    assert shipped["4"]["verdict"] == "untested" and "gpuparity run" in shipped["4"]["command"]


def test_spec_and_price_claims(shipped):
    power = lookup("mi355x")["tdp_w"] / lookup("b200")["tdp_w"]
    assert shipped["6"]["verdict"] == ("supported" if power <= 0.75 * 1.05 else "contradicted")
    assert any(f"{lookup('mi355x')['tdp_w']:g}" in e["summary"] for e in shipped["6"]["evidence"])
    mem = lookup("mi300x")["memory_gb"] / lookup("h100-sxm")["memory_gb"]
    assert shipped["mi300x-h100-memory"]["verdict"] == ("supported" if abs(mem / 2.4 - 1) <= 0.02 else "contradicted")
    book = price_book()
    ratios = [book[("mi300x", b)]["usd_per_gpu_hour"] / book[("h100-sxm", b)]["usd_per_gpu_hour"]
              for b in ("hyperscaler", "neocloud", "3yr-rental", "on-demand-typical")]
    holds = [0.5 * 0.95 <= r <= 0.7 * 1.05 for r in ratios]
    expected = "supported" if all(holds) else "partly" if any(holds) or all(r < 1 for r in ratios) else "contradicted"
    assert shipped["5"]["verdict"] == expected


def test_untested_claims_say_how_to_settle(shipped):
    assert shipped["12"]["verdict"] == "untested" and "gpuparity port SRC --json score.json" in shipped["12"]["command"]
    for cid in ("1", "2", "3", "7", "8", "9", "11"):
        assert shipped[cid]["verdict"] == "untested"
        assert shipped[cid]["command"].startswith("gpuparity run "), cid
    assert "--set model=synthetic:deepseek-v3" in shipped["3"]["command"]


def test_without_reference_data_mlperf_claims_are_untested(tmp_path):
    with Store(str(tmp_path / "empty.db")) as store:
        out = {c["id"]: c for c in evaluate_claims(store)}
    c = out["mi325x-h200-llama2-70b"]
    assert c["verdict"] == "untested" and "gpuparity reference import mlperf" in c["command"]
    assert out["mi300x-h100-memory"]["verdict"] == "supported"  # spec claims need no store


def _run(product: str, spec: str, stack: dict, seconds: float, seed: int) -> dict:
    fp = {"vendor": "AMD", "product": product, "spec": lookup(spec), "host": f"box{seed}", **stack}
    doc = new_run(fp)
    rng = random.Random(seed)
    for model in ("deepseek-ai/DeepSeek-R1", "meta-llama/Llama-3.1-8B"):
        r = new_result("llm", "model", {"model": model, "batch": 8}, "fp8")
        r["samples"] = [seconds * (1 + 0.02 * rng.random()) for _ in range(15)]
        r["work"] = {"tokens": 1000}
        r["metric"] = {"unit": "tokens/s", "value": 1000 / seconds}
        doc["results"].append(r)
    doc.update(status="complete", finished_at=now_iso())
    return validate_run(doc) or doc


@pytest.mark.parametrize("speedup, verdict", [(3.7, "supported"), (1.5, "partly"), (0.9, "contradicted")])
def test_own_run_claims(tmp_path, speedup, verdict):
    pytest.importorskip("gpuparity.analysis.compare")
    with Store(str(tmp_path / "runs.db")) as store:
        store.save_run(_run("AMD Instinct MI300X", "mi300x", {"rocm_version": "7.0.1"}, 1.0, 1))
        store.save_run(_run("AMD Instinct MI300X", "mi300x", {"rocm_version": "6.0.2"}, speedup, 2))
        out = {c["id"]: c for c in evaluate_claims(store)}
    c = out["3"]  # 3.8x DeepSeek R1 (ROCm 7 vs 6): only the deepseek result counts
    assert c["verdict"] == ("supported" if verdict == "supported" and abs(speedup / 3.8 - 1) <= 0.1 else verdict)
    assert [e["workload"] for e in c["evidence"] if e.get("workload")] == ["llm"]
    assert c["command"] is None
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
    p = cli("claims", "check", "--port-report", str(low), "--format", "json", "--db", ref_db)
    assert next(c for c in json.loads(p.stdout) if c["id"] == "12")["verdict"] == "contradicted"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"summary": {"score": None}}))
    p = cli("claims", "check", "--port-report", str(bad), "--db", ref_db)
    assert p.returncode == 2 and "no tree-level score" in p.stderr


def test_cli_formats(ref_db, cli):
    table = cli("claims", "check", "--db", ref_db)
    assert table.returncode == 0, table.stderr
    assert "contradicted" in table.stdout and "settle with" in table.stdout and "MLCommons" in table.stdout
    md = cli("claims", "check", str(EXAMPLE), "--format", "markdown", "--db", ref_db)
    assert md.returncode == 0 and "## mi325x-h200-llama2-70b: " in md.stdout and "```" in md.stdout
    assert cli("claims", "check", "--format", "yaml", "--db", ref_db).returncode == 2


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
""")
    with Store(ref_db) as store:
        out = {c["id"]: c for c in evaluate_claims(store, path)}
    # MI355X has open-division rows only; they never stand against closed B200 rows.
    assert out["mi355x-b200-closed"]["verdict"] == "untested"
    assert any("open/" in e["summary"] for e in out["mi355x-b200-closed"]["evidence"])
    # H100's v5.1 Llama 2 70B rows are multi-node: excluded from per-accelerator figures.
    assert out["mi300x-h100"]["verdict"] == "untested"


@pytest.mark.parametrize("body, message", [
    ("claims: [{id: x, text: t, kind: bogus, subject: {gpu: h100}, baseline: {gpu: mi300x}, expected: {ratio: 1}}]",
     "claim 1 \\(x\\): field 'kind'"),
    ("claims: [{id: x, text: t, kind: spec, subject: {gpu: h100}, baseline: {gpu: mi300x}}]",
     "claim 1 \\(x\\): field 'expected'"),
    ("claims: [{id: x, text: t, kind: spec, subject: {gpu: h100}, baseline: {gpu: mi300x}, expected: {ratio: 1}}]",
     "kind spec needs"),
    ("nothing: here", "no top-level 'claims' list"),
    ("claims: [unclosed", "not valid YAML"),
])
def test_bad_claims_files(tmp_path, body, message):
    from gpuparity.errors import UserError

    path = tmp_path / "bad.yaml"
    path.write_text(body)
    with pytest.raises(UserError, match=message):
        load_claims(path)


def test_bad_claims_file_cli(tmp_path, cli):
    path = tmp_path / "bad.yaml"
    path.write_text("claims: [{id: x}]")
    p = cli("claims", "check", str(path), "--db", str(tmp_path / "s.db"))
    assert p.returncode == 2 and "claim 1 (x): field 'text' is missing" in p.stderr
