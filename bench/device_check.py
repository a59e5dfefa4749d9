"""Every GPU path of gpuparity in one prepared run on a borrowed GPU, a short table last. Run by
bench/device_check.sh (which passes the interpreter it was given); on a CPU every row runs and the
GPU-only ones say SKIP with the reason.

    python bench/device_check.py [--out DIR] [--full] [--budget SECONDS] [--steps a,b,...] [--rehearse]

Each step (bench/device_steps.py) runs in its own process with its own timeout, the smaller of
its cap and what is left of the budget (about 5.5 minutes; --full adds the max-achievable GEMM
against a bare loop and the quick kernel suite in about 8.5): a step that hangs or crashes costs
its row, never the others. DIR/device_check.json is rewritten after every step (a whole file
replaces the last one), so a check stopped half-way keeps the rows it finished. With --rehearse
(REHEARSE=1) and no GPU, every step runs its own code on the CPU at small sizes (under a budget
and caps REHEARSAL_SLOWER times longer): the rows SKIP with what they measured, and a step that
crashes FAILs here, before a borrowed GPU's minutes are spent on it.

Rows: event timing, graphs, rotation, copy (device, h2d, d2h), cache flush, energy vs integrated
power, throttle reading, fp8 (tensor / row scales, fast accumulation), MXFP4 probe, TF32 proof,
MoE, attention, conv, profiler trace, LLM decode, a training step, collectives through torchrun
(world size = the GPUs here), serving with gpus= against the demo server, contention grading.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

BUDGET_S = {False: 330.0, True: 510.0}     # within 6 (FULL: 9) minutes with the state readings around it
MIN_STEP_S = 10.0                          # a step is not started with less left than this
REHEARSAL_SLOWER = 3.0                     # a CPU rehearsal's caps and budget: a busy 2-core CPU is slower


def write_atomic(path: str, doc: dict) -> None:
    """The whole document to a temporary file, then one rename over the last one."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump(doc, fh, indent=1, default=str)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def run_step(name: str, out: str, timeout: float) -> tuple[list[dict], str]:
    """The step in its own process group (this interpreter); its rows, or a FAIL row saying why
    not. At the timeout the whole group goes (a server or co-tenant it started too)."""
    cmd = [sys.executable, os.path.join(HERE, "device_steps.py"), name, "--out", out]
    t0 = time.perf_counter()
    with open(os.path.join(out, "steps.log"), "a") as log:
        log.write(f"\n=== {name} (timeout {timeout:.0f} s)\n")
        log.flush()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
        try:
            stdout, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            stdout, _ = p.communicate()
            log.write(stdout or "")
            return [{"row": name, "figure": "-", "target": "-", "verdict": "FAIL",
                     "reason": f"timed out after {timeout:.0f} s"}], f"{time.perf_counter() - t0:.1f}"
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)     # anything the step left running
            except ProcessLookupError:
                pass
        log.write(stdout)
    rows = [json.loads(line[5:]) for line in stdout.splitlines() if line.startswith("ROWS ")]
    if not rows:
        tail = stdout.strip().splitlines()[-1:] or [""]
        return [{"row": name, "figure": "-", "target": "-", "verdict": "FAIL",
                 "reason": f"exit {p.returncode} without rows (see steps.log) {tail[0][:160]}"}], \
            f"{time.perf_counter() - t0:.1f}"
    return rows[-1], f"{time.perf_counter() - t0:.1f}"


PROBE = ("import json, torch\n"
         "n = torch.cuda.device_count() if torch.cuda.is_available() else 0\n"
         "print(json.dumps({'gpus': n, 'torch': torch.__version__, 'hip': getattr(torch.version, 'hip', None),"
         " 'name': torch.cuda.get_device_name(0) if n else None}))")


def probe_gpus() -> tuple[dict, str]:
    """What torch sees here, once, in its own process: ({"gpus", "torch", "hip", "name"}, the reason
    GPU-only steps skip, "" where there is a GPU)."""
    try:
        p = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=180)
        seen = json.loads(p.stdout.strip().splitlines()[-1])
    except Exception as exc:  # noqa: BLE001 - no torch, a hung driver: every GPU step says so
        return {}, f"torch could not be probed: {type(exc).__name__}: {str(exc)[:200]}"
    return seen, "" if seen.get("gpus") else f"no GPU: torch {seen.get('torch')} sees none"


def table(rows: list[dict]) -> str:
    width = max([len(r["row"]) for r in rows] + [3])
    lines = [f"{'row':{width}s}  {'verdict':7s}  {'target':24s}  figure / reason"]
    for r in rows:
        text = r["figure"] if r["verdict"] != "SKIP" or r["figure"] != "-" else ""
        if r.get("reason"):
            text = f"{text}  ({r['reason']})" if text and text != "-" else r["reason"]
        lines.append(f"{r['row']:{width}s}  {r['verdict']:7s}  {r['target'][:24]:24s}  {text}")
    return "\n".join(lines)


def main() -> int:
    from device_steps import STEPS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/gpuparity-device"))
    ap.add_argument("--full", action="store_true", default=os.environ.get("FULL") == "1")
    ap.add_argument("--budget", type=float, default=None, help="seconds for every step together")
    ap.add_argument("--steps", default=os.environ.get("STEPS"), help="only these rows (comma list)")
    ap.add_argument("--rehearse", action="store_true", default=os.environ.get("REHEARSE") == "1",
                    help="no GPU here: run every step's code on the CPU at small sizes (a crash FAILs)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    budget = args.budget or BUDGET_S[args.full]
    wanted = {s.strip() for s in args.steps.split(",")} if args.steps else None
    steps = [s for s in STEPS if (args.full or not s.full_only) and (wanted is None or s.name in wanted)]
    path = os.path.join(args.out, "device_check.json")
    t0 = time.perf_counter()
    seen, no_gpu = probe_gpus()
    os.environ["DEVICE_CHECK_NO_GPU"] = no_gpu
    rehearse = bool(no_gpu) and args.rehearse
    slower = REHEARSAL_SLOWER if rehearse else 1.0
    if rehearse:
        os.environ["DEVICE_CHECK_REHEARSE"] = "1"
        budget *= 1.0 if args.budget else slower
    print(f"device: {seen}" + (f" ({no_gpu}: " + ("every step rehearsed on the CPU)" if rehearse else
                                                   "GPU-only rows SKIP)") if no_gpu else ""), flush=True)
    doc = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "python": sys.executable, "full": args.full,
           "rehearsal": rehearse, "budget_s": budget, "device": seen, "planned": [s.name for s in steps],
           "rows": [], "finished": False}
    write_atomic(path, doc)
    for step in steps:
        left = budget - (time.perf_counter() - t0)
        if left < MIN_STEP_S:
            rows, took = [{"row": step.name, "figure": "-", "target": "-", "verdict": "SKIP",
                           "reason": f"the check's {budget:.0f} s budget is spent"}], "0"
        else:
            rows, took = run_step(step.name, args.out, min(step.cap_s * slower, left))
        for r in rows:
            r["seconds"] = float(took)
            print(f"-- {r['row']}: {r['verdict']} {r['figure']} {r.get('reason') or ''}", flush=True)
        doc["rows"] += rows
        doc["elapsed_s"] = round(time.perf_counter() - t0, 1)
        write_atomic(path, doc)
    doc["finished"] = True
    write_atomic(path, doc)
    print("\n" + table(doc["rows"]))
    print(f"total {time.perf_counter() - t0:.0f} s; {path}")
    return 1 if any(r["verdict"] == "FAIL" for r in doc["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
