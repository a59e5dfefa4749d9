"""One unit per column: a per-GPU serving point (the server's GPUs given, here `import --gpus 1`)
against a per-server one (the same aiperf file imported without them): no ratio and no verdict,
with the reason, in every view (compare's table, markdown and JSON, the HTML report) and in the
equal-interactivity table; the same file declared alike on both sides still compares."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

AIPERF = Path(__file__).parent / "data" / "peers" / "aiperf_c3" / "profile_export.jsonl"
REASON = "per-GPU and per-server figures never share a ratio"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("units")
    env = {"GPUPARITY_DB": str(tmp / "s.db"), "COLUMNS": "220"}
    for args in ([str(AIPERF)], ["--gpus", "1", "--label", "one-gpu", str(AIPERF)],
                 ["--gpus", "1", "--label", "again", str(AIPERF)]):
        p = run_cli("import", *args, env=env)
        assert p.returncode == 0, p.stderr
    runs = {r["label"]: r["run_id"] for r in json.loads(run_cli("list", "--json", env=env).stdout)}
    return env, tmp, runs[None], runs["one-gpu"], runs["again"]


def test_per_gpu_against_per_server_has_no_ratio_in_any_view(store):
    env, tmp, per_server, per_gpu, _ = store
    js = run_cli("compare", per_gpu, per_server, "-f", "json", env=env)
    assert js.returncode == 0, js.stderr
    doc = json.loads(js.stdout)
    assert doc["rows"] == [] and not doc["geomean"]
    left = [r for r in doc["not_compared"] if r["status"] == "units differ"]
    assert {r["side"] for r in left} == {"A", "B"} and all(REASON in r["reason"] for r in left)
    assert any("not compared" in n for n in doc["notes"])
    (equal,) = doc["serving"]
    assert equal["ratio"] is None and equal["verdict"] is None and REASON in equal["note"]

    table = run_cli("compare", per_gpu, per_server, env=env)
    assert table.returncode == 0 and " x " not in table.stdout.split("not compared", 1)[0].split("B / A")[-1]
    text = " ".join(table.stdout.split())
    assert REASON in text and "A's figure is per GPU (tokens/s/GPU), B's per server (tokens/s)" in text
    assert "faster" not in text and "slower" not in text and "parity " not in text.replace("parity band", "")

    md = run_cli("compare", per_gpu, per_server, "-f", "markdown", env=env)
    assert md.returncode == 0 and REASON in md.stdout and "per GPU (tokens/s/GPU)" in md.stdout
    per_result = md.stdout.split("### Per result", 1)[-1].split("###", 1)[0]
    assert "| serving |" not in per_result                  # no row with a ratio

    html = tmp / "r.html"
    rep = run_cli("report", per_gpu, per_server, "-o", str(html), env=env)
    assert rep.returncode == 0, rep.stderr
    page = html.read_text()
    assert REASON in page and "units differ" in page


def test_the_same_declaration_on_both_sides_compares(store):
    env, _, _, per_gpu, again = store
    doc = json.loads(run_cli("compare", per_gpu, again, "-f", "json", env=env).stdout)
    (row,) = doc["rows"]
    assert row["unit"] == "tokens/s/GPU" and row["ratio"] == pytest.approx(1.0)
    assert not [r for r in doc["not_compared"] if r["status"] == "units differ"]
