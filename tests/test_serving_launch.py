"""Launching the server from a recipe (workloads/serving/launch.py) with real processes: readiness,
a server that exits before it is ready, one that ignores SIGTERM (killed after the grace), the
record (secrets hidden), recipe files refused in one line; and where its power is charged
(workloads/serving/power.py)."""

from __future__ import annotations

import os
import sys
import textwrap
import time

import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from serving_fixtures import free_port

from gpuparity.errors import UserError
from gpuparity.workloads.serving import launch as ln
from gpuparity.workloads.serving.power import server_devices, server_sampler

# a server that answers /health and ignores SIGTERM (a stubborn engine): only SIGKILL ends it
STUBBORN = textwrap.dedent("""
    import signal, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def do_GET(self):
            self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
    print("listening", flush=True)
    HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace_and_its_exit_is_read(tmp_path):
    script = tmp_path / "stubborn.py"
    script.write_text(STUBBORN)
    port = free_port()
    recipe = ln.Recipe(command=[sys.executable, str(script), str(port)], env={"HF_TOKEN": "hf_secret", "X": "1"},
                       stop_grace_s=1.0, gpus=2)
    said = []
    with ln.launched(recipe, f"http://127.0.0.1:{port}/v1", say=said.append) as server:
        rec = server.record()
        assert rec["env"] == {"HF_TOKEN": "***", "X": "1"} and rec["gpus"] == 2 and rec["ready_s"] >= 0
        assert ln.server_status(rec) is None                  # running
        pid = server.proc.pid
    assert said[-1] == "server killed (SIGKILL) after 1 s of SIGTERM"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    status_dir = os.path.dirname(rec["status_file"])
    assert not os.path.exists(status_dir)                     # its files are removed with it


def test_a_server_that_dies_before_it_is_ready_is_a_one_line_error_with_its_log(tmp_path):
    p = run_cli("run", "serving", "--serve-cmd", f"{sys.executable} -c \"print('no GPU found'); raise SystemExit(3)\"",
                "--set", "url=http://127.0.0.1:9/v1", "--no-store", env={"GPUPARITY_DB": str(tmp_path / "s.db")})
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "the server exited with code 3 before it was ready; its log ends: no GPU found" in p.stderr


def test_the_watcher_reads_a_server_that_exits_on_its_own(tmp_path):
    port = free_port()
    script = tmp_path / "brief.py"
    script.write_text(STUBBORN.replace("serve_forever()", "handle_request()"))   # answers once, then exits
    recipe = ln.Recipe(command=[sys.executable, str(script), str(port)], ready_url=f"http://127.0.0.1:{port}/health")
    with ln.launched(recipe, f"http://127.0.0.1:{port}/v1", say=lambda _: None) as server:
        deadline = time.monotonic() + 30
        while ln.server_status(server.record()) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        gone = ln.server_status(server.record())
        assert gone["exit_code"] == 0 and gone["stopped_by_gpuparity"] is False and "listening" in gone["log_tail"]


def test_recipe_files_and_options_are_checked_first(tmp_path):
    good = tmp_path / "r.yaml"
    good.write_text("command: vllm serve org/M --port 8123 --api-key sk-123\nenv: {CUDA_VISIBLE_DEVICES: '2,3'}\n"
                    "gpus: 2\nstop_grace_s: 5\n")
    r = ln.recipe_from_file(str(good))
    assert r.command[:3] == ["vllm", "serve", "org/M"] and r.gpus == 2 and r.stop_grace_s == 5
    assert ln.settle_url(r, None) == "http://127.0.0.1:8123/v1"
    assert ln._shown_command(r.command)[-1] == "***"
    assert ln.visible_devices(r.env) == {"CUDA_VISIBLE_DEVICES": "2,3", **{k: os.environ[k] for k in
                                                                           ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
                                                                           if k in os.environ}}
    for text, expect in (("command: ''\n", "command"), ("command: x\nport: 3\n", "port"), ("gpus: 2\n", "command"),
                         ("command: x\ngpus: 0\n", "gpus"), ("command: [a, 3]\n", "command"),
                         ("command: 'a \"b'\n", "cannot split")):
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        with pytest.raises(UserError) as err:
            ln.recipe_from_file(str(bad))
        assert expect in str(err.value) and "\n" not in str(err.value), text
    with pytest.raises(UserError, match="where will the server listen"):
        ln.settle_url(ln.recipe_from_command("python -m x"), None)
    env = {"GPUPARITY_DB": str(tmp_path / "s.db")}
    for args, expect in (([], "--serve-cmd and --serve-recipe exclude each other"),
                         (["--set", "concurrency=1,x"], "concurrency")):
        p = run_cli("run", "serving", "--serve-cmd", "sleep 100", "--serve-recipe", str(good), *args, "--no-store", env=env) \
            if not args else run_cli("run", "serving", "--serve-cmd", "sleep 100 --port 8", *args, "--no-store", env=env)
        assert p.returncode == 2 and expect in p.stderr and "launching" not in p.stderr, p.stderr


@settings(max_examples=40, deadline=3000)
@given(st.dictionaries(st.sampled_from(["command", "env", "url", "gpus", "timeout_s", "stop_grace_s", "other"]),
                       st.one_of(st.none(), st.integers(-5, 10**6), st.text(max_size=20), st.lists(st.text(max_size=5)),
                                 st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2))))
def test_any_recipe_is_a_recipe_or_a_one_line_refusal(tmp_path_factory, data):
    import yaml

    path = tmp_path_factory.mktemp("recipe") / "r.yaml"
    path.write_text(yaml.safe_dump(data))
    try:
        r = ln.recipe_from_file(str(path))
    except UserError as exc:
        assert "\n" not in str(exc)
    else:
        assert r.command and all(isinstance(a, str) for a in r.command)


def test_power_is_charged_to_the_servers_gpus_only_where_they_are_here(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6")
    far = server_devices("http://10.1.2.3:8000/v1", None, 8, "cuda")
    assert far[0] is None and "not this machine" in far[1] and "no per-watt figure" in far[1]
    assert server_devices("http://127.0.0.1:8000/v1", None, None, "cuda")[0] is None       # how many: unknown
    assert server_devices("http://127.0.0.1:8000/v1", None, 2, "cuda")[0] == [4, 5]        # the first 2 shown here
    launched = {"visible_devices": {"CUDA_VISIBLE_DEVICES": "2,3"}, "gpus": 2}
    assert server_devices("http://10.1.2.3:8000/v1", launched, 2, "cuda") == (
        [2, 3], "the server's GPUs 2,3 (launched by gpuparity)")
    uuids = {"visible_devices": {"CUDA_VISIBLE_DEVICES": "GPU-8a1b,GPU-77cd"}}
    assert "not integers" in server_devices("http://h/v1", uuids, 2, "cuda")[1]
    # a remote server on a GPU machine: nothing charged, the reason is the telemetry's
    sampler, why = server_sampler("http://10.1.2.3:8000/v1", None, 8, {"backend": "cuda"}, run_sampler="run's")
    assert sampler.stop()["energy"].startswith("unavailable: the server at 10.1.2.3 is not this machine")
    # here, with its GPUs known: the vendor library is asked for exactly those (no NVML on this machine)
    sampler, why = server_sampler("http://127.0.0.1:8000/v1", None, 2, {"backend": "cuda"}, run_sampler="run's")
    assert why.startswith("the server's GPUs 4,5") and sampler.method in ("nvml", "none")
    # a CPU machine whose server runs here: the run's own sampler (the package both share)
    assert server_sampler("http://localhost:8000/v1", None, None, {"backend": "cpu"}, run_sampler="run's")[0] == "run's"


def test_a_rocm_server_s_gpus_are_the_visibility_lists_composed(monkeypatch):
    """ROCR_VISIBLE_DEVICES picks physical GPUs, HIP_VISIBLE_DEVICES indexes into them (as the
    runtime composes them, measure.device_map): HIP 2,3 under ROCR 4..7 are GPUs 6 and 7."""
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "4,5,6,7")
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "2,3")
    assert server_devices("http://127.0.0.1:8000/v1", None, 2, "rocm")[0] == [6, 7]
    launched = {"visible_devices": {"ROCR_VISIBLE_DEVICES": "0,1", "HIP_VISIBLE_DEVICES": "1"}, "gpus": 1}
    assert server_devices("http://127.0.0.1:8000/v1", launched, 1, "rocm")[0] == [1]
