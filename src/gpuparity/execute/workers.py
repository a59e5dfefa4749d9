"""Worker processes: a trial (or, with --isolate, one case) measured in a fresh process.

Why: pyperf's lesson, trials in fresh processes vary the process-level state (allocator layout,
library autotuning, JIT caches) between trials as it varies between runs, so the trials' spread is
the run-to-run spread; and a crash in native code (a segfault in a kernel library, a GPU memory
fault aborting the process, the OOM killer) costs one case, not the run.

Protocol. The parent (this module) starts `python -m gpuparity.execute.worker_process` (the
worker's side) in its own session (terminal signals go to the parent, which stops the workers),
writes one JSON line (the job) on its stdin and keeps stdin open: EOF there means the parent is
gone and the worker exits. The worker writes JSON lines
on the pipe named by GPUPARITY_WORKER_FD (stdout and stderr stay free for libraries):
  {"event": "ready", "pid": ..}                      context built, device answered
  {"event": "start", "case": i}                      a case begins
  {"event": "say", "case": i, "text": ..}            live status
  {"event": "result", "case": i, "result": {..}}     a case ended (any status)
  {"event": "done"}
The parent's watchdog kills a worker whose case outlives its deadline (the case fails as
"hung"), or that does not get ready (the device does not answer): the remaining cases of that
worker then fail with the reason instead of waiting forever.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

WORKER_FD_ENV = "GPUPARITY_WORKER_FD"
READY_TIMEOUT_S = 180.0


# -- parent side --------------------------------------------------------------------------
def run_in_workers(pairs: list[tuple], orders: list[list[int]], ctx, isolate: bool, case_timeout, started,
                   finished) -> None:
    """Run each trial's cases (in its order) in a fresh worker, or each case alone with isolate;
    case_timeout(workload, ctx): a case's watchdog deadline (the runner's)."""
    job = {"suite": ctx.suite, "options": ctx.options, "profile_dir": ctx.profile_dir,
           "fingerprint": {k: v for k, v in ctx.fingerprint.items() if k != "telemetry"},
           "workload_files": ctx.options.get("workload_files") or []}
    for t, order in enumerate(orders):
        items = [(position, i) for position, i in enumerate(order)]
        groups = [[item] for item in items] if isolate else [items]
        for group in groups:
            _run_group(pairs, group, t, job, ctx, case_timeout, started, finished)


def _run_group(pairs, items, t, job, ctx, case_timeout, started, finished) -> None:
    """Run `items` [(position, case)] in workers until each has a result (respawning after a crash)."""
    remaining = list(items)
    while remaining:
        worker = Worker(dict(job, trial=t + 1, cases=[[i, pairs[i][0].name, pairs[i][1]] for _, i in remaining]))
        try:
            outcome = worker.follow(pairs, remaining, t, ctx, case_timeout, started, finished)
        finally:
            worker.stop()
        if outcome == "gave up":
            return


class Worker:
    def __init__(self, job: dict):
        read_fd, write_fd = os.pipe()
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ, **{WORKER_FD_ENV: str(write_fd)})
        env.pop("WORLD_SIZE", None)     # a worker is one process, never a torchrun rank
        self.proc = subprocess.Popen([sys.executable, "-m", "gpuparity.execute.worker_process"], stdin=subprocess.PIPE,
                                     stdout=self.log, stderr=self.log, env=env, pass_fds=(write_fd,),
                                     start_new_session=True)
        os.close(write_fd)
        self.fd, self.buf = read_fd, b""
        self.proc.stdin.write((json.dumps(job) + "\n").encode())
        self.proc.stdin.flush()

    def events(self, deadline: float):
        """The next event, or None at the deadline, or {"event": "eof"} when the worker is gone."""
        while b"\n" not in self.buf:
            wait = deadline - time.monotonic()
            if wait <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], min(wait, 1.0))
            if not ready:
                continue
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return {"event": "eof"}
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            return {"event": "garbled"}

    def follow(self, pairs, remaining, t, ctx, case_timeout, started, finished) -> str:
        """Drive one worker; returns 'done', 'respawn' (a case died or hung) or 'gave up'."""
        from gpuparity.results.schema import mark, new_result

        def fail(position: int, i: int, reason: str) -> None:
            w, params = pairs[i]
            finished(i, t, position, mark(new_result(w.name, w.category, params, params.get("dtype")), "failed", reason))

        ready, current, deadline = False, None, time.monotonic() + READY_TIMEOUT_S
        while True:
            ev = self.events(deadline)
            if ev is None:                       # a deadline passed
                self.kill()
                if not ready:
                    for position, i in remaining:
                        fail(position, i, f"the device did not answer within {READY_TIMEOUT_S:g} s in a fresh "
                                          f"worker{' after an earlier hang' if t or current else ''}")
                    remaining.clear()
                    return "gave up"
                position, i = current
                fail(position, i, f"hung: no result after {case_timeout(pairs[i][0], ctx):g} s (watchdog); "
                                  "the worker was killed")
                remaining.remove(current)
                return "respawn"
            kind = ev.get("event")
            if kind == "ready":
                ready, deadline = True, time.monotonic() + 3600 * 24
            elif kind == "start":
                current = next(item for item in remaining if item[1] == ev["case"])
                started(current[1], t)
                deadline = time.monotonic() + case_timeout(pairs[current[1]][0], ctx)
            elif kind == "say" and ctx.progress is not None:
                ctx.progress(str(ev.get("text", ""))[:200])
            elif kind == "result" and current is not None:
                result = ev.get("result")
                if isinstance(result, dict):
                    finished(current[1], t, current[0], result)
                remaining.remove(current)
                current, deadline = None, time.monotonic() + 3600 * 24
            elif kind == "done":
                return "done"
            elif kind in ("eof", "garbled"):
                why = self.death()
                if not ready or current is None:
                    for position, i in remaining:
                        fail(position, i, f"worker failed {'to start' if not ready else 'between cases'}: {why}")
                    remaining.clear()
                    return "gave up"
                fail(current[0], current[1], f"the worker process died during this case: {why}")
                remaining.remove(current)
                return "respawn"

    def death(self) -> str:
        """Why the worker ended: its signal or exit status and the last line it printed."""
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.wait()
        if rc < 0:
            try:
                what = signal.Signals(-rc).name
            except ValueError:
                what = f"signal {-rc}"
        else:
            what = f"exit status {rc}"
        self.log.seek(0)
        tail = [ln for ln in self.log.read().decode(errors="replace").splitlines() if ln.strip()]
        return what + (f" ({tail[-1].strip()[:200]})" if tail else "")

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        """End the worker (gently, then by force) and release its pipe and log."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
        os.close(self.fd)
        self.log.close()
