"""Serving compared like for like, with real demo servers on loopback (SmolLM2): an fp32 server
started here, a bf16 one launched by gpuparity (--serve-cmd), and one that answers wrongly launched
from a recipe file and killed in the middle of its sweep. Each run records its server's identity
and the accuracy eval beside its speed; compare states both identities, refuses a verdict between
different configurations unless --cross-config, never calls different servers A/A, and says the
wrong server answers differently before any speed verdict."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import httpx
import pytest
from conftest import run_cli
from serving_fixtures import SERVER_ENV, free_port, start_own, stop

SWEEP = ["--set", "num_prompts=4", "--set", "input_len=16", "--set", "output_len=8", "--set", "warmup=1"]
DEMO = f"{sys.executable} -m gpuparity.demo.serving_server"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three stored runs: fp32 (a URL), bf16 (--serve-cmd), wrong answers (--serve-recipe, killed mid-sweep)."""
    from gpuparity.models import gguf

    gguf.prepare(gguf.smollm2_gguf())
    tmp = tmp_path_factory.mktemp("servers")
    env = {"GPUPARITY_DB": str(tmp / "s.db"), "GPUPARITY_SPOOL": str(tmp / "spool"), **SERVER_ENV}
    out = {"env": env, "tmp": tmp}
    t0 = time.monotonic()
    proc, url = start_own(tmp, "fp32", "--dtype", "fp32")
    try:
        p = run_cli("run", "serving", "--set", f"url={url}", "--set", "concurrency=1,2", *SWEEP,
                    "-f", "json", "-o", str(tmp / "fp32.json"), env=env)
        assert p.returncode == 0, p.stderr
    finally:
        stop(proc)
    port = free_port()
    p = run_cli("run", "serving", "--serve-cmd", f"{DEMO} --port {port} --dtype bf16", "--set", "concurrency=1,2",
                *SWEEP, "-f", "json", "-o", str(tmp / "bf16.json"), env=env)
    assert p.returncode == 0, p.stderr
    out["bf16_stderr"], out["bf16_port"] = p.stderr, port
    port = free_port()
    (tmp / "wrong.yaml").write_text(f"command: {DEMO} --port {port} --wrong-answers\n"
                                    "env: {OMP_NUM_THREADS: '1', HF_TOKEN: hf_not_kept}\nstop_grace_s: 10\n")
    killer = threading.Thread(target=_kill_mid_sweep, args=(f"http://127.0.0.1:{port}/health", 16 + 1 + 4 + 1 + 1),
                              daemon=True)
    killer.start()
    p = run_cli("run", "serving", "--serve-recipe", str(tmp / "wrong.yaml"), "--set", "concurrency=1,2,4", *SWEEP,
                "--in-order",                  # c=1 measured whole, the server killed during c=2, c=4 never sent
                "-f", "json", "-o", str(tmp / "wrong.json"), env=env)
    killer.join(timeout=5)
    out["wrong_rc"], out["wrong_stderr"] = p.returncode, p.stderr
    out.update({name: json.loads((tmp / f"{name}.json").read_text()) for name in ("fp32", "bf16", "wrong")})
    print(f"three runs in {time.monotonic() - t0:.0f} s:", {n: out[n]["duration_s"] for n in ("fp32", "bf16", "wrong")})
    return out


def _kill_mid_sweep(health: str, after: int) -> None:
    """SIGKILL the launched server (by the pid its /health reports) once it has finished `after`
    generations: its 16-problem eval, a warm-up, the first point and one request into the next."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            state = httpx.get(health, timeout=5).json()
            if state["completed"] >= after:
                os.kill(state["pid"], signal.SIGKILL)
                return
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        time.sleep(0.1)


def compare(runs, a: str, b: str, *extra: str):
    tmp = runs["tmp"]
    p = run_cli("compare", str(tmp / f"{a}.json"), str(tmp / f"{b}.json"), *extra, env=runs["env"])
    assert p.returncode == 0, p.stderr
    js = run_cli("compare", str(tmp / f"{a}.json"), str(tmp / f"{b}.json"), *extra, "--format", "json", env=runs["env"])
    return p.stdout, json.loads(js.stdout)


def test_each_run_records_its_servers_identity_and_accuracy(runs):
    fp32, bf16 = runs["fp32"]["results"], runs["bf16"]["results"]
    for results, dtype in ((fp32, "float32"), (bf16, "bfloat16")):
        for r in results:
            assert r["status"] == "ok", r["reason"]
            ident, acc = r["info"]["server_identity"], r["info"]["accuracy"]
            assert ident["engine"] == "gpuparity-demo" and ident["dtype"] == dtype
            assert ident["sources"]["dtype"] == "/metrics"
            assert os.path.basename(ident["model"]).startswith("SmolLM2-135M-Instruct")   # the folder it loaded
            assert acc["eval"] == "gpuparity-basic" and acc["answered"] == 16 and acc["correct"] > 0   # SmolLM2: ~9/16
    assert fp32[0]["info"]["server_identity"]["launch"] is None
    launch = bf16[0]["info"]["server_identity"]["launch"]
    assert launch["source"] == "--serve-cmd" and launch["command"][-2:] == ["--dtype", "bf16"] and launch["ready_s"] > 0
    assert bf16[0]["info"]["server_identity"]["machine"]["known"] is True
    assert "launching the server" in runs["bf16_stderr"] and "server stopped by SIGTERM (code 0)" in runs["bf16_stderr"]
    with pytest.raises(httpx.HTTPError):                     # stopped: nothing listens there any more
        httpx.get(f"http://127.0.0.1:{runs['bf16_port']}/health", timeout=2)


def test_fp32_against_bf16_states_both_and_gives_no_verdict_without_cross_config(runs):
    text, doc = compare(runs, "fp32", "bf16")
    assert "A/A" not in text and not doc["aa"]["identical"]
    assert doc["servers"]["accuracy"]["differs"] is False            # fp32 and bf16 answer alike within noise
    assert "server A: gpuparity-demo" in text and "precision float32" in text and "precision bfloat16" in text
    assert doc["servers"]["differ"] == ["dtype", "kv_cache_dtype"] and doc["servers"]["held"]
    assert text.index("the servers differ in precision (A fp32, B bf16)") < text.index("B is ")   # before the verdict
    assert all(r["verdict"] == "inconclusive" and r["held"].startswith("servers differ in precision")
               for r in doc["rows"])
    assert all(e.get("held") for e in doc["serving"] if e.get("ratio"))
    text, doc = compare(runs, "fp32", "bf16", "--cross-config")
    assert "cross-configuration comparison (--cross-config): the servers differ in precision" in text
    assert doc["servers"]["cross_config"] and not doc["servers"]["held"]
    assert not any((r["held"] or "").startswith("servers differ") for r in doc["rows"])
    assert not any(e.get("held") for e in doc["serving"])
    md = run_cli("compare", str(runs["tmp"] / "fp32.json"), str(runs["tmp"] / "bf16.json"), "--format", "markdown",
                 env=runs["env"]).stdout
    assert md.index("- server A: gpuparity-demo") < md.index("**B is")
    html = runs["tmp"] / "report.html"
    p = run_cli("report", str(runs["tmp"] / "fp32.json"), str(runs["tmp"] / "bf16.json"), "-o", str(html), env=runs["env"])
    assert p.returncode == 0, p.stderr
    page = html.read_text()
    assert page.index('<ul id="servers"><li>server A: gpuparity-demo') < page.index('id="headline"')
    assert "precision bfloat16" in page and "the servers differ in precision (A fp32, B bf16)" in page


def test_a_server_answering_wrongly_is_caught_before_its_speed_is_compared(runs):
    asked = [r for r in runs["wrong"]["results"] if "accuracy" in r["info"]]    # the points it served
    acc, ident = asked[0]["info"]["accuracy"], asked[0]["info"]["server_identity"]
    assert acc["answered"] == 16 and acc["correct"] == 0                       # the runner-up token every time
    assert ident["dtype"] == "float32"                                         # its identity does not show it
    assert ident["launch"]["env"] == {"OMP_NUM_THREADS": "1", "HF_TOKEN": "***"}
    text, doc = compare(runs, "fp32", "wrong")
    check = doc["servers"]["accuracy"]
    assert check["differs"] and check["p_value"] < 0.01 and doc["servers"]["differ"] == []
    line = "the sides answer differently beyond the eval's noise"
    assert line in text and text.index(line) < text.index("B is ") and "A/A" not in text, text
    assert doc["rows"] and all(r["verdict"] == "inconclusive" and r["held"] == "answers differ (accuracy eval)"
                               for r in doc["rows"])


def test_a_launched_server_that_dies_mid_sweep_is_reported_and_nothing_measured_is_lost(runs):
    wrong = runs["wrong"]["results"]
    assert runs["wrong_rc"] == 1 and len(wrong) == 3                    # every point is in the run
    ok = [r for r in wrong if r["status"] == "ok"]
    failed = [r for r in wrong if r["status"] == "failed"]
    assert [r["params"]["concurrency"] for r in ok][:1] == [1] and failed, [(r["status"], r.get("reason")) for r in wrong]
    assert all("the server gpuparity launched exited (code -9)" in r["reason"] for r in failed)
    assert all(r["info"]["server_exit"]["exit_code"] == -9 for r in failed)
    assert "had exited (code -9)" in runs["wrong_stderr"]
    shown = run_cli("show", runs["wrong"]["run_id"], env=runs["env"])
    assert shown.returncode == 0
    assert "server: gpuparity-demo" in shown.stdout and "accuracy: 0/16 correct (0%" in shown.stdout
