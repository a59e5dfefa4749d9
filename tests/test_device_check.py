"""bench/device_check.sh on this CPU machine: every row runs (the GPU-only ones SKIP with the
reason) under the interpreter it was given, device_check.json is rewritten after every step and
keeps the finished rows when the check is killed half-way; and the cases the steps plan fit their
caps and the check's budget by the project's own planner on an H100 and an H200; and the CPU
rehearsal runs every step's own code (small sizes), so a step that would crash on a borrowed GPU
fails here first."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import device_check  # noqa: E402
from device_steps import STEPS, rehearsed, row  # noqa: E402


def start(out, **env):
    return subprocess.Popen(["bash", os.path.join(ROOT, "bench", "device_check.sh")], cwd=ROOT,
                            env=dict(os.environ, OUT=str(out), PYTHON=sys.executable, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def test_every_row_runs_on_a_cpu(tmp_path):
    p = start(tmp_path)
    log, _ = p.communicate(timeout=300)
    assert p.returncode == 0, log[-3000:]
    doc = json.loads((tmp_path / "device_check.json").read_text())
    names = [s.name for s in STEPS if not s.full_only]
    assert doc["finished"] is True and doc["python"] == sys.executable     # the interpreter it was given
    assert [r["row"] for r in doc["rows"]] == names == doc["planned"]
    assert all(r["verdict"] == "SKIP" and "no GPU" in r["reason"] for r in doc["rows"])
    lines = log.splitlines()
    head = max(i for i, line in enumerate(lines) if line.startswith("row ") and "verdict" in line)
    table = lines[head + 1:head + 1 + len(names)]                    # a short table last: row, verdict, target
    assert [line.split("  ")[0].strip() for line in table] == names and all(" SKIP " in line for line in table)


def test_killed_half_way_the_json_keeps_the_finished_rows(tmp_path):
    p = start(tmp_path)
    path = tmp_path / "device_check.json"
    deadline = time.monotonic() + 120
    rows = []
    while time.monotonic() < deadline and len(rows) < 3:
        try:
            rows = json.loads(path.read_text())["rows"]      # always a whole file: never a torn write
        except (OSError, ValueError):
            pass
        time.sleep(0.01)
    os.killpg(p.pid, signal.SIGKILL)
    p.communicate(timeout=30)
    doc = json.loads(path.read_text())
    assert doc["finished"] is False and 3 <= len(doc["rows"]) < len(doc["planned"])
    assert all(r["verdict"] in ("PASS", "FAIL", "SKIP") and r["row"] for r in doc["rows"])
    assert [r["row"] for r in doc["rows"]] == doc["planned"][:len(doc["rows"])]


@pytest.mark.parametrize("spec_id", ["h100-sxm", "h200-sxm"])
def test_the_planned_cases_fit_by_the_projects_planner(spec_id):
    from gpuparity.execute.plan import spec_context

    ctx = spec_context(spec_id, "quick")
    total = {False: 0.0, True: 0.0}
    for step in STEPS:
        planned = step.planned(ctx) if step.planned else []
        most = sum(w_most for _, w_most in (_estimate(name, params, ctx) for name, params in planned))
        need = most + step.extra_s
        assert need <= step.cap_s, f"{step.name}: {need:.0f} s planned > its {step.cap_s:.0f} s cap"
        for full in (False, True):
            if full or not step.full_only:
                total[full] += need
    assert total[False] <= device_check.BUDGET_S[False] <= 345          # 6 minutes with the state readings
    assert total[True] <= device_check.BUDGET_S[True] <= 525            # FULL: 9 minutes


def _estimate(name, params, ctx):
    from gpuparity.workloads.base import get

    return get(name).expected_s(params, ctx)


def test_a_step_past_its_timeout_costs_its_row_only(tmp_path):
    rows, _ = device_check.run_step("fp8", str(tmp_path), 0.05)      # no interpreter starts in 50 ms
    assert rows == [{"row": "fp8", "figure": "-", "target": "-", "verdict": "FAIL", "reason": "timed out after 0 s"}]
    assert "=== fp8" in (tmp_path / "steps.log").read_text()


def test_the_rehearsal_runs_every_steps_own_code_on_the_cpu(tmp_path):
    p = start(tmp_path, REHEARSE="1")
    log, _ = p.communicate(timeout=900)
    doc = json.loads((tmp_path / "device_check.json").read_text())
    assert doc["rehearsal"] is True and doc["finished"] is True, log[-3000:]
    failed = [r for r in doc["rows"] if r["verdict"] != "SKIP"]
    assert not failed and p.returncode == 0, failed
    steps = [s.name for s in STEPS if not s.full_only]
    assert {r["row"].split(" ")[0] for r in doc["rows"]} >= {n.split(" ")[0] for n in steps}
    assert all("rehearsed on the CPU" in r["reason"] for r in doc["rows"])
    ran = {r["row"]: r["figure"] for r in doc["rows"]}
    # the paths really ran: a figure where a CPU can give one
    for name in ("event timing", "graphs", "cache flush", "moe", "profiler trace", "llm decode", "training step",
                 "collectives", "serving gpus=", "contention grading"):
        assert ran[name] != "-", (name, ran[name])
    assert ran["collectives"].startswith("world 2") and "contended=True" in ran["contention grading"]


def test_a_rehearsed_step_that_could_not_run_its_path_fails():
    rows = rehearsed([row("llm decode", "-", "ok", "FAIL", "exit 1: Traceback"),
                      row("graphs", "1 TFLOP/s", "graph >= queue", "FAIL")], "no GPU")
    assert [r["verdict"] for r in rows] == ["FAIL", "SKIP"]
    assert "rehearsal on the CPU failed: exit 1" in rows[0]["reason"] and "rehearsed on the CPU" in rows[1]["reason"]
