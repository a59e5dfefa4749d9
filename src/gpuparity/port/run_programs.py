"""`port --run`: build each program of a HIP tree against HIP-CPU with g++ and run it.

A program is a compile unit that defines main(), built with the other units of its folder that
do not. Everything happens in a private temporary folder: the build copy (hip_cpu_adapt's
adaptations; the port's output and the source tree are only read), the binaries, and each
run's working folder (empty; the arguments after `--` are passed as given). A program that does
not finish within the timeout is killed with its process group and reported; one that crashes
is reported; the others go on. Builds and runs go in parallel (jobs).

A program's verdict is what it prints: a line with FAIL fails it, PASS passes it (with exit
status 0), or the user's --expect pattern decides. With compare_to (a human port), the program
of the same path (any suffix) is built and run too, and the two outputs are compared
(output_compare: numbers within tolerance).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gpuparity.errors import UserError
from gpuparity.port import hip_cpu
from gpuparity.port.check import first_error, run_compiler
from gpuparity.port.hip_cpu_adapt import for_hip_cpu, not_runnable
from gpuparity.port.output_compare import difference
from gpuparity.port.translate import COMPILE_SUFFIXES, SOURCE_SUFFIXES
from gpuparity.port.walk import decode_source
from gpuparity.validate import terminal_safe

SUFFIXES = SOURCE_SUFFIXES + (".hip",)
UNITS = COMPILE_SUFFIXES + (".hip",)
BUILD_TIMEOUT_S = 600
OUTPUT_LIMIT = 4 * 1024 * 1024     # bytes of a program's output read for its verdict
PASS, FAIL, NO_VERDICT, TIMED_OUT, CRASHED, BUILD_FAILED, NOT_RUNNABLE = (
    "pass", "fail", "no verdict", "timed out", "crashed", "build failed", "not runnable")
FAILURES = (FAIL, TIMED_OUT, CRASHED, BUILD_FAILED)
_MAIN = re.compile(r"^[ \t]*(?:int|auto)[ \t]+main[ \t]*\(", re.M)
_FAIL = re.compile(r"\bFAIL(?:ED|URE|S)?\b")
_PASS = re.compile(r"\bPASS(?:ED)?\b")


@dataclass
class ProgramRun:
    program: str                      # its path in the tree
    status: str
    detail: str = ""
    built: bool = False
    ran: bool = False
    exit_status: int | None = None
    verdict: str = ""                 # PASS, FAIL, or the --expect pattern matched / not matched
    build_seconds: float = 0.0
    run_seconds: float = 0.0
    output: str = ""                  # the last lines printed
    compare: dict | None = None       # with --compare-to: the other side and the outcome


@dataclass
class RunReport:
    hip_cpu: str
    args: list[str]
    timeout_s: float
    expect: str | None = None
    compare_to: str | None = None
    programs: list[ProgramRun] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.programs:
            out[p.status] = out.get(p.status, 0) + 1
        return out

    @property
    def failed(self) -> bool:
        return any(p.status in FAILURES for p in self.programs) or any(
            p.compare and p.compare["outcome"] not in ("equal", "no counterpart") for p in self.programs)

    def as_dict(self) -> dict:
        return {**{k: v for k, v in asdict(self).items() if k != "programs"}, "counts": self.counts(),
                "programs": [asdict(p) for p in self.programs]}


def _sources(root: Path) -> dict[str, str]:
    """rel -> text of the C/C++/HIP sources under root (or root itself); symlinks are not followed."""
    if root.is_file():
        return {root.name: decode_source(root.read_bytes())}
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(files):
            path = Path(folder) / name
            if name.lower().endswith(SUFFIXES) and path.is_file() and not path.is_symlink():
                out[path.relative_to(root).as_posix()] = decode_source(path.read_bytes())
    return out


def programs_of(sources: dict[str, str]) -> dict[str, list[str]]:
    """program (the unit defining main) -> its units: it and its folder's units without main."""
    units = {rel: text for rel, text in sources.items() if rel.lower().endswith(UNITS)}
    mains = [rel for rel, text in units.items() if _MAIN.search(text)]
    folder = os.path.dirname
    return {m: [m] + [u for u in units if u not in mains and folder(u) == folder(m)] for m in mains}


def _stage(sources: dict[str, str], into: Path) -> None:
    for rel, text in sources.items():
        path = into / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(for_hip_cpu(text), encoding="utf-8", errors="surrogateescape")


def _verdict(output: str, exit_status: int, expect: re.Pattern | None) -> tuple[str, str]:
    if expect is not None:
        hit = expect.search(output) is not None
        return ("matched" if hit else "not matched"), (PASS if hit and exit_status == 0 else FAIL)
    if _FAIL.search(output):
        return "FAIL", FAIL
    if _PASS.search(output):
        return "PASS", PASS if exit_status == 0 else FAIL
    return "", NO_VERDICT if exit_status == 0 else FAIL


def _execute(exe: Path, args: list[str], timeout: float, work: Path) -> tuple[int | None, str, float, bool]:
    """(exit status, output, seconds, timed out): a fresh working folder, output to a file."""
    work.mkdir()
    log = work.parent / f"{work.name}.out"
    started = time.perf_counter()
    with open(log, "wb") as fh:
        proc = subprocess.Popen([str(exe), *args], cwd=work, stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc, timed_out = proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc, timed_out = proc.wait(), True
    with open(log, "rb") as fh:
        output = decode_source(fh.read(OUTPUT_LIMIT))
    return (None if timed_out else rc), output, time.perf_counter() - started, timed_out


def _one(hc: hip_cpu.HipCpu, stage: Path, prelude: Path, program: str, units: list[str], args: list[str],
         timeout: float, expect: re.Pattern | None, sources: dict[str, str], tag: str) -> ProgramRun:
    reason = next((r for r in map(not_runnable, (sources[u] for u in units)) if r), None)
    if reason:
        return ProgramRun(program, NOT_RUNNABLE, f"not runnable on HIP-CPU: {reason}")
    exe = stage.parent / f"{tag}.bin"
    cmd = hip_cpu.build_command(hc, [stage / u for u in units], exe, [stage / os.path.dirname(program), stage],
                                prelude)
    started = time.perf_counter()
    rc, log = run_compiler(cmd, stage, timeout=BUILD_TIMEOUT_S)
    log = log.replace(str(stage) + os.sep, "")
    build_s = time.perf_counter() - started
    if rc != 0:
        gap = hip_cpu.runtime_gap(log)
        if gap:
            return ProgramRun(program, NOT_RUNNABLE, f"not runnable on HIP-CPU: {gap}", build_seconds=build_s)
        return ProgramRun(program, BUILD_FAILED, first_error(log), build_seconds=build_s)
    exit_status, output, run_s, timed_out = _execute(exe, args, timeout, stage.parent / f"{tag}.run")
    tail = "\n".join(output.splitlines()[-20:])
    common = dict(built=True, ran=True, build_seconds=build_s, run_seconds=run_s)
    if timed_out:
        return ProgramRun(program, TIMED_OUT, f"killed after {timeout:g} s", output=tail, **common)
    if exit_status < 0:
        name = signal.Signals(-exit_status).name if -exit_status in signal.Signals._value2member_map_ else ""
        return ProgramRun(program, CRASHED, f"signal {-exit_status} {name}".strip(), exit_status=exit_status,
                          output=tail, **common)
    verdict, status = _verdict(output, exit_status, expect)
    return ProgramRun(program, status, "" if status == PASS else f"exit status {exit_status}",
                      exit_status=exit_status, verdict=verdict, output=output, **common)


def _run_tree(hc: hip_cpu.HipCpu, root: Path, work: Path, args: list[str], timeout: float,
              expect: re.Pattern | None, jobs: int, only: set[str] | None = None) -> list[ProgramRun]:
    sources = _sources(root)
    stage = work / "tree"
    stage.mkdir(parents=True)
    _stage(sources, stage)
    prelude = work / "hip_cpu_prelude.h"
    prelude.write_text(hip_cpu.PRELUDE, encoding="utf-8")
    progs = {p: u for p, u in programs_of(sources).items() if only is None or p in only}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda item: _one(hc, stage, prelude, item[1][0], item[1][1], args, timeout, expect,
                                               sources, f"p{item[0]}"), enumerate(progs.items())))


def _stem(rel: str) -> str:
    return os.path.splitext(rel)[0]


def validate(timeout: float, expect: str | None, compare_to: Path | None, jobs: int | None) -> re.Pattern | None:
    """The --run options, before any work; the compiled --expect pattern."""
    if not timeout > 0:
        raise UserError(f"--timeout must be > 0 seconds, not {timeout:g}")
    if jobs is not None and jobs < 1:
        raise UserError(f"--jobs must be >= 1, not {jobs}")
    if compare_to is not None and not compare_to.exists():
        raise UserError(f"--compare-to {terminal_safe(str(compare_to))}: no such file or folder")
    try:
        return re.compile(expect) if expect is not None else None
    except re.error as exc:
        raise UserError(f"--expect {terminal_safe(expect)!r} is not a regular expression: {exc}") from exc


def run_tree(hc: hip_cpu.HipCpu, root: Path, args: list[str] | None = None, *, timeout: float = 60.0,
             expect: str | None = None, compare_to: Path | None = None, jobs: int | None = None,
             rtol: float = 1e-5, atol: float = 1e-8) -> RunReport:
    """Build and run every program of the HIP tree (or file) root; with compare_to, its
    counterparts in that tree too, and compare each pair's output."""
    pattern = validate(timeout, expect, compare_to, jobs)
    args, jobs = list(args or []), jobs or os.cpu_count() or 1
    report = RunReport(hc.describe(), args, timeout, expect, str(compare_to) if compare_to else None)
    with tempfile.TemporaryDirectory(prefix="gpuparity-run-") as tmp:
        report.programs = _run_tree(hc, root, Path(tmp) / "ours", args, timeout, pattern, jobs)
        if compare_to is None:
            return report
        theirs_by_stem = {_stem(p): p for p in programs_of(_sources(compare_to))}
        wanted = {theirs_by_stem[_stem(p.program)] for p in report.programs if _stem(p.program) in theirs_by_stem}
        theirs = {_stem(p.program): p for p in _run_tree(hc, compare_to, Path(tmp) / "theirs", args, timeout,
                                                         pattern, jobs, wanted)}
    for p in report.programs:
        other = theirs.get(_stem(p.program))
        if other is None:
            p.compare = {"outcome": "no counterpart"}
            continue
        if not (p.ran and other.ran) or p.status in (TIMED_OUT, CRASHED) or other.status in (TIMED_OUT, CRASHED):
            outcome, detail = "not compared", f"ours: {p.status}, theirs: {other.status}"
        else:
            diff = difference(p.output, other.output, rtol, atol)
            outcome, detail = ("equal", "") if diff is None else ("differ", diff)
        p.compare = {"outcome": outcome, "detail": detail, "program": other.program, "status": other.status,
                     "verdict": other.verdict, "detail_other": other.detail}
    for p in report.programs:  # the whole output was kept for the comparison; the report keeps its end
        p.output = "\n".join(p.output.splitlines()[-20:])
    return report
