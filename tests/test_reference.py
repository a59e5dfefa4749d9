"""MLPerf Inference summaries of every round: the real v5.1 file, v4.1 rows, rows written the way older
rounds write them, unreadable rows listed, --strict, twins, filters, per-accelerator comparison, and
inputs that must fail fast with one line and leave the store as it was."""

import contextlib
import gzip
import io
import json
import re
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from gpuparity.cli import main as cli_main
from gpuparity.errors import UserError
from gpuparity.evidence import mlperf
from gpuparity.evidence.reference import import_file
from gpuparity.evidence.rules import Rules, annotate, compare_groups
from gpuparity.results.store import Store

DATA = Path(__file__).parent / "data"
V51 = DATA / "mlperf_inference_v5.1_summary_results.json"
V41 = DATA / "mlperf_inference_v4.1_excerpt.json"
OLDER = DATA / "mlperf_inference_older_rounds.json"


def records(path=V51):
    return json.loads(path.read_text())


def ref_rows(db) -> list[tuple]:
    """Everything stored, to compare a store before and after a refused input ([] before the first)."""
    with sqlite3.connect(db) as c:
        try:
            return c.execute("SELECT ref_id, doc FROM reference_results ORDER BY ref_id").fetchall()
        except sqlite3.OperationalError:     # no store there yet
            return []


_registered = []


def cli_inprocess(*args: str) -> tuple[int, str, str]:
    """The CLI entry point in this process: (exit code, stdout, stderr). The verbs are registered once
    (main() registers them again on every call, which makes many calls slow)."""
    if not _registered:
        cli_main._register_all()
        _registered.append(True)
    out, err, original = io.StringIO(), io.StringIO(), cli_main._register_all
    cli_main._register_all = lambda: None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli_main.main(list(args))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        cli_main._register_all = original
    return code, out.getvalue(), err.getvalue()


def one_line_error(code: int, err: str) -> bool:
    return code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The real v5.1 file imported once through the CLI (a subprocess, as a user runs it)."""
    from tests.conftest import run_cli

    db = str(tmp_path_factory.mktemp("ref") / "ref.db")
    p = run_cli("reference", "import", "mlperf", str(V51), "--db", db, "--json")
    assert p.returncode == 0, p.stderr
    return db, json.loads(p.stdout)


def test_v51_imports_every_row_and_is_idempotent(imported):
    db, summary = imported
    assert summary["rows"] == summary["added"] == len(records()) == len(ref_rows(db)) == 1448
    assert summary["unreadable"] == [] and summary["rounds"] == {"5.1": 1448}
    assert summary["categories"] == {"closed": 609, "open": 839}
    code, out, _ = cli_inprocess("reference", "import", "mlperf", str(V51), "--db", db)
    assert code == 0 and "0 added" in out and "1448 already stored" in out
    assert len(ref_rows(db)) == 1448


def test_twins_marked_and_counted_once():
    rows, _ = mlperf.parse_rows(records())
    # independently: same ID, model family and scenario at both accuracy targets, same result
    raw = {(r["ID"], r["Model"], r["Scenario"]): r["Performance_Result"] for r in records()}
    same = {k for k, v in raw.items() if k[1].endswith("-99") and raw.get((k[0], k[1] + ".9", k[2])) == v}
    twins = [r for r in rows if r["twin"]]
    assert len(twins) == 2 * sum(1 for k in raw if k[1].endswith("-99") and (k[0], k[1] + ".9", k[2]) in raw)
    assert {(r["result_id"], r["model"], r["scenario"]) for r in rows
            if r["twin_same_result"] and r["accuracy_target"] == "99"} == same
    assert len(mlperf.distinct(rows)) == len(rows) - len(same)
    r = next(r for r in rows if r["twin_same_result"])
    other = next(x for x in rows if x["ref_id"] == r["twin"])
    assert other["twin"] == r["ref_id"] and other["result"] == r["result"]


def test_v41_rows_float_counts_and_v_ids():
    rows, bad = mlperf.parse_rows(records(V41))
    assert bad == [] and len(rows) == len(records(V41))
    raw = records(V41)[4]                       # 8xMI300X, a# written as 8.0
    row = next(r for r in rows if r["ref_id"] == f"mlperf-inference:{raw['ID']}/{raw['Model']}/{raw['Scenario']}")
    assert raw["a#"] == 8.0 and row["accelerators"] == 8 and row["round"] == "4.1"
    assert row["per_accelerator"] == pytest.approx(raw["Performance_Result"] / 8)
    assert row["versions"]["rocm"] == "6.1.2" and row["spec_id"] == "mi300x"


def test_older_round_shapes_keep_every_readable_row(tmp_path):
    db = str(tmp_path / "s.db")
    code, out, err = cli_inprocess("reference", "import", "mlperf", str(OLDER), "--db", db, "--json")
    assert code == 0, err
    summary = json.loads(out)
    recs = records(OLDER)
    readable = 5     # the first six rows are readable; the sixth names no round
    assert summary["rows"] == summary["added"] == readable == len(ref_rows(db))
    assert [b["row"] for b in summary["unreadable"]] == list(range(readable + 1, len(recs) + 1))
    reasons = {b["row"]: b["reason"] for b in summary["unreadable"]}
    assert "give --round" in reasons[6] and "negative" in reasons[7] and "whole number" in reasons[8]
    assert "whole number" in reasons[9] and "less than 1" in reasons[10] and "finite" in reasons[11]
    assert "negative" in reasons[12] and "not a number" in reasons[13] and "Model" in reasons[14]
    assert "control characters" in reasons[15] and "not an object" in reasons[16]
    rows = {r["result_id"]: r for r in Store(db).references()}
    checker = rows["v3.1-0101"]     # the submission checker's field names, counts as "8.0"
    assert (checker["submitter"], checker["model"], checker["round"], checker["accelerators"]) == \
        ("ExampleCo", "llama2-70b-99", "3.1", 8)
    assert checker["per_accelerator"] == pytest.approx(recs[0]["Result"] / 8) and checker["stack"] == "cuda"
    cpu = rows["4.0-0042"]          # CPU only: no accelerator, latency units never per accelerator
    assert cpu["accelerators"] == 0 and cpu["per_accelerator"] is None and cpu["throughput"] is None
    assert rows["4.0-0043"]["software"] == "" and rows["4.0-0043"]["round"] == "4.0"
    two = rows["v4.0-0044"]         # two nodes: derived but not per-GPU eligible
    assert two["accelerators"] == 16 and two["per_accelerator"] == pytest.approx(98765.4 / 16)
    assert not two["per_gpu_eligible"]
    assert rows["4.0-0045"]["precision"] is None
    # --round fills the round where the file names none; the table lists what was left out
    code, out, _ = cli_inprocess("reference", "import", "mlperf", str(OLDER), "--db", db, "--round", "4.0")
    assert code == 0 and "1 added" in out and "10 unreadable" in out and "row 7 (ID 4.0-0100): a#: negative" in out


def test_strict_is_all_or_nothing(tmp_path):
    db = str(tmp_path / "s.db")
    assert cli_inprocess("reference", "import", "mlperf", str(V41), "--db", db)[0] == 0
    before = ref_rows(db)
    code, _, err = cli_inprocess("reference", "import", "mlperf", str(OLDER), "--db", db, "--strict")
    assert one_line_error(code, err) and "row 6 (ID 0046): no round" in err
    assert ref_rows(db) == before
    code, _, _ = cli_inprocess("reference", "import", "mlperf", str(V41), "--db", db, "--strict")
    assert code == 0


def test_list_filters_by_round_benchmark_accelerator_division(imported, tmp_path):
    db = str(tmp_path / "s.db")
    shutil.copy(imported[0], db)
    assert cli_inprocess("reference", "import", "mlperf", str(V41), "--db", db)[0] == 0

    def listed(*args):
        code, out, err = cli_inprocess("reference", "list", "--db", db, "--json", "-n", "100000", *args)
        assert code == 0, err
        return json.loads(out)

    both = listed("--benchmark", "llama2-70b-99", "--accelerator", "mi300x", "--division", "closed")
    assert {r["round"] for r in both} == {"4.1", "5.1"} and all(r["spec_id"] == "mi300x" for r in both)
    old = listed("--round", "v4.1", "--benchmark", "llama2-70b")   # the prefix takes both accuracy targets
    assert {r["model"] for r in old} == {"llama2-70b-99", "llama2-70b-99.9"} and {r["round"] for r in old} == {"4.1"}
    raw = [r for r in records() if r["Category"] == "open" and r["Scenario"] == "Offline"]
    assert len(listed("--round", "5.1", "--division", "open", "--scenario", "offline")) == len(raw)
    # a name with no spec row matches the accelerator as written
    nvl = listed("--accelerator", "H200-NVL")
    assert nvl and all("H200-NVL" in r["accelerator"] for r in nvl)
    code, out, _ = cli_inprocess("reference", "list", "--db", db, "--benchmark", "llama2-70b", "--accelerator", "h200")
    assert code == 0 and "5.1-0026" in out and "not verified by MLCommons" in out and "(twin)" in out
    code, out, _ = cli_inprocess("reference", "show", "5.1-0002", "--json", "--db", db)
    assert {r["model"] for r in json.loads(out)} >= {"llama2-70b-99", "mixtral-8x7b"}
    code, _, err = cli_inprocess("reference", "show", "5.1-9999", "--db", db)
    assert one_line_error(code, err)


def test_compare_per_accelerator(imported):
    code, out, err = cli_inprocess("reference", "compare", "mi325x", "h200", "--db", imported[0], "--json",
                                   "--division", "closed")
    assert code == 0, err
    result = json.loads(out)
    group = next(g for g in result["groups"] if (g["benchmark"], g["scenario"]) == ("llama2-70b-99", "Offline"))

    def best(spec_word):  # straight from the raw file: single node, one accelerator type, closed
        rows = [r for r in records() if r["Category"] == "closed" and r["Model"] == "llama2-70b-99"
                and r["Scenario"] == "Offline" and r["Nodes"] == 1 and spec_word in r["Accelerator"]
                and "NVL" not in r["Accelerator"] and "," not in r["Accelerator"]]
        return max(r["Performance_Result"] / r["a#"] for r in rows)

    assert group["ratio"] == pytest.approx(best("H200") / best("MI325X"))          # B / A
    assert group["a"]["best"] == "5.1-0003" and group["round"] == "5.1"
    assert all(g["division"] == "closed" for g in result["groups"])
    code, out, _ = cli_inprocess("reference", "compare", "mi325x", "h200", "--db", imported[0])
    assert code == 0 and "llama2-70b-99" in out and "5.1-0003" in out
    code, _, err = cli_inprocess("reference", "compare", "mi325x", "nosuchgpu", "--db", imported[0])
    assert one_line_error(code, err)


def test_row_fields_from_the_real_file():
    rows = {r["ref_id"]: r for r in mlperf.parse_rows(records())[0]}
    raw = next(r for r in records() if r["ID"] == "5.1-0002" and r["Model"] == "llama2-70b-99"
               and r["Scenario"] == "Offline")
    row = rows["mlperf-inference:5.1-0002/llama2-70b-99/Offline"]
    assert row["spec_id"] == "mi325x" and row["category"] == "closed" and row["precision"] == "fp8"
    assert row["accelerators"] == raw["a#"] * raw["Nodes"]
    assert row["per_accelerator"] == pytest.approx(raw["Performance_Result"] / row["accelerators"])
    assert row["per_accelerator_derived"] and "not verified by MLCommons" in row["note"]
    assert row["versions"]["rocm"] == "6.4.1" and row["versions"]["vllm"].startswith("0.9.0")
    assert row["stack"] == "rocm" and row["round"] == "5.1"
    virtual = next(r for r in rows.values() if (r["accelerator"] or "").startswith("Virtualized"))
    assert virtual["spec_id"] == "h200-sxm"
    mixed = [r for r in rows.values() if r["mixed_accelerators"]]
    assert mixed and all(r["spec_id"] is None and r["per_accelerator"] is None for r in mixed)
    multi = [r for r in rows.values() if r["nodes"] > 1 and r["per_accelerator"] is not None]
    assert multi and not any(r["per_gpu_eligible"] for r in multi)
    latency = [r for r in rows.values() if r["units"].startswith("Latency")]
    assert latency and all(r["per_accelerator"] is None and r["throughput"] is None for r in latency)


def test_divisions_and_nodes_kept_apart():
    rows = [annotate(r) for r in mlperf.parse_rows(records())[0]]

    def groups(a, b, **rules):
        result = compare_groups(rows, a, b, Rules.make(**rules))
        return [g for g in result["groups"] if (g["benchmark"], g["scenario"]) == ("llama2-70b-99", "Offline")]

    # the v5.1 MI355X results are open division only: nothing to set against closed B200 rows
    assert groups("b200", "mi355x") == []
    opened = compare_groups(rows, "b200", "mi355x", Rules.make(division="open", precision="any"))
    (mi355x,) = [u for u in opened["unpaired"] if (u["benchmark"], u["scenario"]) == ("llama2-70b-99", "Offline")]
    assert (mi355x["side"], mi355x["division"], mi355x["rows"]) == ("b", "open", 1)   # the 1-node row only
    assert groups("h200-sxm", "h100-sxm") == []          # the H100 rows are multi-node only
    (h200,) = groups("mi325x", "h200-sxm")
    eligible = [r for r in rows if r["spec_id"] == "h200-sxm" and r["model"] == "llama2-70b-99"
                and r["scenario"] == "Offline" and r["category"] == "closed" and r["per_gpu_eligible"]]
    assert h200["b"]["value"] == max(r["per_accelerator"] for r in eligible)


@pytest.mark.parametrize("text, spec_id, mixed", [
    ("AMD Instinct MI300X-NPS1-SPX-192GB-750W", "mi300x", False),
    ("Virtualized NVIDIA H200-SXM-141GB", "h200-sxm", False),
    ("NVIDIA H100-NVL-94GB", "h100-nvl", False),             # its own row: never the SXM part
    ("NVIDIA GB300", "gb300", False),
    ("NVIDIA B300-SXM-270GB", "b300", False),
    ("Nvidia B300-SXM-270GB", "b300", False),              # a vendor's spelling: the same part
    ("NVIDIA Vera Rubin", "vr200", False),
    ("NVIDIA VR200", "vr200", False),
    ("AMD Instinct MI350P", "mi350p", False),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-blackwell", False),
    ("NVIDIA RTX PRO 4500 Blackwell", "rtx-pro-4500-blackwell", False),
    ("NVIDIA GB10", "gb10", False),
    ("Intel(R) Arc(TM) Pro B70", None, False),
    ("NVIDIA H200-SXM-141GB + AMD Instinct MI350X 288GB HBM3e", None, True),
    ("AMD Instinct MI300X 192GB HBM3 (x2x8) and AMD Instinct MI355X 288GB HBM3e (x2x8)", None, True),
    ("AMD Instinct MI355X 288GB HBM3e (x2x8)", "mi355x", False),
    ("AMD Instinct MI325X 256GB HBM3E (x16), AMD Instinct MI300X 192GB HBM3 (x8)", None, True),
    ("NVIDIA B200-SXM-180GB (x8), NVIDIA B200-SXM-180GB (x8)", "b200", False),
    ("NVIDIA Blackwell GPU (B200-SXM-180GB)", "b200", False),
    ("   ", None, False),
])
def test_accelerator_names(text, spec_id, mixed):
    got = mlperf.map_accelerator(text)
    assert (got["spec_id"], got["mixed"]) == (spec_id, mixed)


@pytest.mark.parametrize("text, expected", [
    ("TensorRT 10.11, CUDA 12.9", {"tensorrt": "10.11", "cuda": "12.9"}),
    ("TensorRT-LLM 0.21.0, CUDA 12.9", {"tensorrt_llm": "0.21.0", "cuda": "12.9"}),
    ("vLLM 0.9.0.2.dev108+g71faa1880.d20250730.rocm641, Pytorch 2.7.0+gitf717b2a, ROCm 6.4.1.60401-83~22.04",
     {"vllm": "0.9.0.2.dev108", "pytorch": "2.7.0", "rocm": "6.4.1"}),
    ("vLLM 0.9.1.dev2+g790cf6584.d20250519.rocm650, Pytorch 2.8.0a0+git37f92bb",
     {"vllm": "0.9.1.dev2", "pytorch": "2.8.0a0", "rocm": "6.5.0"}),
    ("SGLang v0.4.9", {"sglang": "0.4.9"}),
    ("NGC Pytorch 25.04, cuda 12.8.1.012", {"cuda": "12.8.1"}),
    ("tflite vmaster", {}),
])
def test_software_versions(text, expected):
    assert mlperf.parse_software(text) == expected


def test_gzip_accepted_and_bombs_bounded(tmp_path, monkeypatch):
    gz = tmp_path / "summary.json.gz"
    with open(V51, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    with Store(str(tmp_path / "g.db")) as store:
        assert import_file(store, "mlperf", gz)["added"] == len(records())
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:   # 64 MiB of spaces, 64 KiB on disk
        fh.write(b"[" + b" " * (64 << 20) + b"]")
    monkeypatch.setenv("GPUPARITY_MAX_IMPORT_BYTES", str(8 << 20))
    db = str(tmp_path / "b.db")
    code, _, err = cli_inprocess("reference", "import", "mlperf", str(bomb), "--db", db)
    assert one_line_error(code, err) and "decompressed" in err and "limit" in err


def test_long_fields_are_read_in_linear_time(tmp_path):
    """A 20k-digit accelerator name once took 53 s (quadratic backtracking); now it is one bad row."""
    rec = dict(records()[0])
    rows = []
    for field in ("Accelerator", "Software", "System"):
        for filler in ("9" * 20_000, "rocm" * 5_000, " " * 20_000 + "x", "1" * 10_000 + "GB"):
            rows.append(dict(rec, ID=f"5.1-{len(rows):04d}", **{field: filler}))
    path = tmp_path / "long.json"
    path.write_text(json.dumps(rows))
    started = time.perf_counter()
    parsed, bad = mlperf.parse_rows(mlperf.load_file(path))
    assert time.perf_counter() - started < 5
    assert len(bad) == len(rows) and all("longer than" in b["reason"] for b in bad)
    # within the length limit every pattern is still linear
    started = time.perf_counter()
    for text in ("9" * 300, "(x" + "9" * 298, "9" * 296 + " W", "rocm " + "9." * 140):
        mlperf.map_accelerator(text)
        mlperf.parse_software(text * 13)
    assert time.perf_counter() - started < 2


@pytest.mark.parametrize("body, message", [
    (b"{not json", "not valid JSON"),
    (b'{"ID": "5.1-0001"}', "top level is not an array"),
    (b"\x1f\x8bnot gzip at all", "cannot read"),
    (b"[1e999, NaN]", "not a JSON number"),
    (b"[" * 5000 + b"]" * 5000, "nested"),
    (b"[]", "no readable reference rows"),
    (b"[1, 2]", "no readable reference rows (first: row 1: not an object)"),
    (b"\xff\xfe[]", "not UTF-8"),
    (b"[" + b"9" * 20_000 + b"]", "not valid JSON"),
])
def test_bad_files_one_line_and_nothing_stored(tmp_path, body, message):
    db = str(tmp_path / "s.db")
    assert cli_inprocess("reference", "import", "mlperf", str(V41), "--db", db)[0] == 0
    before = ref_rows(db)
    path = tmp_path / "bad.json"
    path.write_bytes(body)
    code, _, err = cli_inprocess("reference", "import", "mlperf", str(path), "--db", db)
    assert one_line_error(code, err) and message in err, err
    assert ref_rows(db) == before
    for args in (("missing.json",), (str(V51), "--round", "banana")):
        code, _, err = cli_inprocess("reference", "import", "mlperf", *args, "--db", db)
        assert one_line_error(code, err)
    code, _, err = cli_inprocess("reference", "import", "nosuch", str(V41), "--db", db)
    assert one_line_error(code, err) and "unknown reference format" in err
    assert ref_rows(db) == before


def test_a_failed_write_stores_nothing(tmp_path):
    """The rows go in one transaction: a row the database refuses rolls back the rows before it."""
    db = str(tmp_path / "s.db")
    rows, _ = mlperf.parse_rows(records(V41))
    rows[5]["source"] = None          # NOT NULL: the sixth insert fails
    with Store(db) as store, pytest.raises(UserError, match="refused the write"):
        store.save_references(rows)
    assert ref_rows(db) == []


def test_stored_rows_of_another_shape_never_break_listing(tmp_path):
    db = str(tmp_path / "s.db")
    assert cli_inprocess("reference", "import", "mlperf", str(V41), "--db", db)[0] == 0
    with sqlite3.connect(db) as c:
        c.executemany("INSERT INTO reference_results (ref_id, source, doc) VALUES (?, ?, ?)", [
            ("x:1", "mlperf-inference", "{not json"),
            ("x:2", "mlperf-inference", json.dumps({"ref_id": "x:2", "model": 7})),
            ("x:3", "mlperf-inference", json.dumps([1, 2])),
            ("x:4", "mlperf-inference", '{"ref_id": "x:4", "result": NaN}'),
        ])
    for args in (("list",), ("list", "--json"), ("list", "--benchmark", "llama2"), ("show", "v4.1-0001"),
                 ("compare", "mi300x", "h100")):
        code, out, err = cli_inprocess("reference", *args, "--db", db)
        assert code == 0, (args, err)
    code, out, _ = cli_inprocess("reference", "list", "--db", db)
    assert "4 stored rows are in a shape this version cannot read" in out and "v4.1-0001" in out


def test_api_errors_name_the_row():
    recs = records()[:3]
    recs[2]["Performance_Result"] = "fast"
    with pytest.raises(UserError, match=r"row 3 \(ID 5\.1-\d+\): Performance_Result: not a number \('fast'\)"):
        mlperf.parse_rows(recs, strict=True)
    rows, bad = mlperf.parse_rows(recs + [recs[0]])
    assert len(rows) == 2 and [b["row"] for b in bad] == [3, 4] and "repeats row 1" in bad[1]["reason"]


def precision_of(text: str) -> str:
    """Independently of the rules module: the formats named, 4-bit floats as one, bf16 as fp16."""
    found = {("int" if kind.endswith("int") else "fp") + bits
             for kind, bits in re.findall(r"(mxfp|nvfp|fp|bf|uint|int)(\d+)", text.lower())}
    return "+".join(sorted(found))


def test_compare_mi325x_h200_cites_only_like_for_like_rows(imported):
    """The real v5.1 summary: every row a comparison rests on is closed division, available, of one
    precision class and accelerator count per group, one row per run; B / A as `compare` reads it."""
    code, out, err = cli_inprocess("reference", "compare", "mi325x", "h200", "--db", imported[0], "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["groups"] and result["rules"].startswith("closed division, available systems, same precision")
    raw = {(r["ID"], r["Model"], r["Scenario"]): r for r in records()}
    for g in result["groups"]:
        cited = {s: raw[(g[s]["best"], g["benchmark"], g["scenario"])] for s in "ab"}
        assert all(c["Category"] == "closed" and c["Availability"] == "available" for c in cited.values())
        assert {precision_of(c["weight_data_types"]) for c in cited.values()} == {g["precision"]}
        assert g["a"]["scale"] == g["b"]["scale"] == [g["accelerators"]]
        values = {s: cited[s]["Performance_Result"] / (cited[s]["a#"] * cited[s]["Nodes"]) for s in "ab"}
        assert g["ratio"] == pytest.approx(values["b"] / values["a"])       # best per side, B / A
    rows = [annotate(r) for r in mlperf.parse_rows(records())[0]]
    for g in compare_groups(rows, "mi325x", "h200-sxm", Rules())["groups"]:
        every = g["_rows"]["a"] + g["_rows"]["b"]
        assert {(r["category"], r["availability"], r["precision_class"], r["accelerators"]) for r in every} == \
            {("closed", "available", g["precision"], g["accelerators"])}
        assert len({r["run_key"] for r in every}) == len(every) and all(r["nodes"] == 1 for r in every)
    code, out, _ = cli_inprocess("reference", "compare", "mi325x", "h200", "--db", imported[0])
    assert "rules: closed division, available systems" in out and "ratio = B / A" in out
    assert "left out by the rules: " in out and "open division" in out


def test_list_shows_rules_inferred_and_repeats(imported):
    code, out, err = cli_inprocess("reference", "list", "--db", imported[0], "--json", "-n", "100000")
    assert code == 0, err
    rows = json.loads(out)
    raw = records()
    assert len(rows) == sum(1 for r in raw if r["Category"] == "closed" and r["Availability"] == "available")
    inferred = {(r["result_id"], r["model"], r["scenario"]) for r in rows if r["inferred"]}
    assert inferred == {(r["ID"], r["Model"], r["Scenario"]) for r in raw
                        if r["inferred"] == 1 and r["Category"] == "closed" and r["Availability"] == "available"}
    assert inferred
    flagged = {(r["model"], r["scenario"], r["units"]) for r in rows if r["units_flag"]}
    assert flagged == {("llama3.1-8b", "Interactive", "Queries/s")}
    runs = {}
    for r in raw:          # independently: one submitter's system, benchmark, scenario and result
        if r["Category"] == "closed" and r["Availability"] == "available":
            key = (r["Submitter"], r["System"], r["Accelerator"], r["a#"], r["Nodes"], r["Model"], r["Scenario"],
                   r["Performance_Result"])
            runs.setdefault(key, []).append(r["ID"])
    repeats = {(i, min(ids)) for ids in runs.values() for i in ids if i != min(ids)}
    assert repeats and {(r["result_id"], r["duplicate_of"]) for r in rows if r.get("duplicate_of")} == repeats
    code, out, _ = cli_inprocess("reference", "list", "--db", imported[0], "--benchmark", "retinanet", "--scenario",
                                 "MultiStream")
    assert "shown: closed division, available systems" in out and "inferred: MLPerf derived" in out
