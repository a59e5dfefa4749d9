"""The worker process (`python -m gpuparity.execute.worker_process`): the other end of the protocol
in execute/workers.py. It builds the run's context from the job on its stdin, runs its cases one
by one with the runner's run_case and reports each on the pipe named by GPUPARITY_WORKER_FD."""

from __future__ import annotations

import json
import os
import sys
import threading

from gpuparity.execute.workers import WORKER_FD_ENV


def _emit(out, event: dict) -> None:
    out.write(json.dumps(event, default=str) + "\n")
    out.flush()


def _exit_with_parent() -> None:
    """The parent keeps our stdin open; EOF means it is gone, so stop measuring for nobody."""
    try:
        while sys.stdin.buffer.read(1 << 16):
            pass
    finally:
        os._exit(3)


def main() -> None:
    out = os.fdopen(int(os.environ[WORKER_FD_ENV]), "w", buffering=1)
    job = json.loads(sys.stdin.buffer.readline())
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    from gpuparity.execute.runner import build_context, run_case
    from gpuparity.workloads import base

    for path in job.get("workload_files") or []:
        base.load_workload_file(path)
    ctx = build_context(job["suite"], job["options"], job.get("profile_dir"), fingerprint=job["fingerprint"])
    ctx.trial = job.get("trial")
    if ctx.device != "cpu":             # the device answers before any case is started
        import torch

        torch.ones(1, device=ctx.device).add_(1)
        torch.cuda.synchronize()
    _emit(out, {"event": "ready", "pid": os.getpid()})
    for i, name, params in job["cases"]:
        _emit(out, {"event": "start", "case": i})
        ctx.progress = lambda text, i=i: _emit(out, {"event": "say", "case": i, "text": text})
        result = run_case(base.get(name), params, ctx)
        result.setdefault("info", {})["pid"] = os.getpid()
        _emit(out, {"event": "result", "case": i, "result": result})
    _emit(out, {"event": "done"})
    out.close()
    os._exit(0)      # skip interpreter teardown: a wedged device cannot hang the exit


if __name__ == "__main__":
    main()
