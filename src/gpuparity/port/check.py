"""--check: compile translated files with hipcc and the originals with nvcc (where installed).

Comparing the two tells errors the code already had (fail-original) from errors the
translation made (fail-translation). A missing library header (Debian ships no hipBLAS, a
bare nvcc has no cuBLAS) is neither: the file is reported as 'headers unavailable' and is
left out of the compile pass rate, which counts only files a compiler could try.

No name from the tree reaches a command line: hipcc and nvcc are drivers that pass their
arguments through a shell (a file named `$(touch X).cu` would run). Each unit is compiled as
a copy under a generated name in a private temporary folder, which is also the compilers'
working folder; the folders its includes live in are reached through links with generated
names. Compiler messages name the file as the tree does, for the report (which escapes it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gpuparity.port.mappings import LIBRARY_OF_HEADER, parse_version
from gpuparity.port.translate import COMPILE_SUFFIXES

OFFLOAD_ARCH = "gfx90a"
NVCC_ARCH = "sm_75"
COMPILE_TIMEOUT_S = 300

PASS = "pass"
FAIL_TRANSLATION = "fail-translation"
FAIL_ORIGINAL = "fail-original"
HEADERS_UNAVAILABLE = "headers unavailable"
SKIPPED = "skipped"
STATUSES = (PASS, FAIL_TRANSLATION, FAIL_ORIGINAL, HEADERS_UNAVAILABLE, SKIPPED)

_MISSING_HEADER = [
    re.compile(r"fatal error: '([^']+)' file not found"),  # clang / hipcc
    re.compile(r"fatal error: ([^\s:]+): No such file or directory"),  # gcc / nvcc
    re.compile(r'catastrophic error: cannot open source file "([^"]+)"'),  # nvcc front end
]
_ERROR_LINE = re.compile(r"^.*\b(error|Error)\b.*$", re.M)


@dataclass
class Toolchain:
    hipcc: str | None = None
    hip_version: tuple[int, ...] | None = None
    nvcc: str | None = None
    nvcc_version: str = ""  # CUDA release, e.g. '13.0'

    def describe(self) -> str:
        hip = (f"hipcc {'.'.join(map(str, self.hip_version or ()))} --offload-arch={OFFLOAD_ARCH}"
               if self.hipcc else "no hipcc")
        nvcc = f"nvcc {self.nvcc_version or '?'} -arch={NVCC_ARCH}" if self.nvcc else "no nvcc"
        return f"{hip}, {nvcc}"


ORIGINAL_PASS, ORIGINAL_FAIL = "pass", "fail"


@dataclass
class CheckResult:
    status: str
    detail: str = ""
    error: str = ""  # first compiler error line, for the report
    original: str = ""  # nvcc on the original: pass | fail | headers unavailable | '' (not compiled)
    original_error: str = ""


@dataclass
class CompileRate:
    """The measured figure: of the files a compiler could try (their headers installed), how
    many compile. translated: hipcc on the translations; original: nvcc on the sources."""
    tried: int = 0
    passed: int = 0
    headers_unavailable: int = 0
    original_tried: int = 0
    original_passed: int = 0
    toolchain: str = ""

    @property
    def rate(self) -> float | None:
        return self.passed / self.tried if self.tried else None

    @property
    def original_rate(self) -> float | None:
        return self.original_passed / self.original_tried if self.original_tried else None

    def text(self) -> str:
        """One line for the terminal and the reports."""
        if not self.tried:
            out = "no translated file could be compiled"
        else:
            out = (f"{self.passed}/{self.tried} translated file(s) compile ({100 * self.rate:.0f}%)")
        if self.original_tried:
            out += f"; originals: {self.original_passed}/{self.original_tried} compile with nvcc"
        if self.headers_unavailable:
            out += f"; {self.headers_unavailable} not compiled here (library headers unavailable)"
        return out + (f" [{self.toolchain}]" if self.toolchain else "")

    def as_dict(self) -> dict:
        return {"tried": self.tried, "passed": self.passed, "rate": self.rate,
                "headers_unavailable": self.headers_unavailable, "original_tried": self.original_tried,
                "original_passed": self.original_passed, "original_rate": self.original_rate,
                "toolchain": self.toolchain, "offload_arch": OFFLOAD_ARCH, "nvcc_arch": NVCC_ARCH}


def compile_rate(results: list[CheckResult], toolchain: str = "") -> CompileRate:
    rate = CompileRate(toolchain=toolchain)
    for r in results:
        if r.status in (PASS, FAIL_TRANSLATION, FAIL_ORIGINAL):
            rate.tried += 1
            rate.passed += r.status == PASS
        elif r.status == HEADERS_UNAVAILABLE:
            rate.headers_unavailable += 1
        if r.original in (ORIGINAL_PASS, ORIGINAL_FAIL):
            rate.original_tried += 1
            rate.original_passed += r.original == ORIGINAL_PASS
    return rate


def _hip_env() -> dict[str, str]:
    env = dict(os.environ)
    env["HIP_PLATFORM"] = "amd"  # compile for AMD even on a machine that also has nvcc
    return env


def hipcc_version(hipcc: str) -> tuple[int, ...] | None:
    """HIP version from `hipcc --version` ('HIP version: 5.2.21153-0')."""
    try:
        proc = subprocess.run([hipcc, "--version"], capture_output=True, text=True, timeout=60,
                              env=_hip_env(), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    # The third field is a build number (5.2.21153), not a patch level.
    m = re.search(r"HIP version:\s*(\d+\.\d+)", proc.stdout + proc.stderr)
    return parse_version(m.group(1)) if m else None


def nvcc_version(nvcc: str) -> str:
    """CUDA release from `nvcc --version` ('Cuda compilation tools, release 13.0, V13.0.48')."""
    try:
        proc = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"release (\d+\.\d+)", proc.stdout + proc.stderr)
    return m.group(1) if m else ""


def detect(nvcc: bool = True) -> Toolchain:
    """The installed hipcc (and its HIP version) and, unless nvcc=False, nvcc."""
    hipcc = shutil.which("hipcc")
    cuda = shutil.which("nvcc") if nvcc else None
    return Toolchain(hipcc, hipcc_version(hipcc) if hipcc else None, cuda, nvcc_version(cuda) if cuda else "")


def _missing_header(output: str) -> str | None:
    for pattern in _MISSING_HEADER:
        m = pattern.search(output)
        if m:
            return m.group(1)
    return None


def first_error(output: str) -> str:
    """The first line of a compiler's output that names an error (else its last line), cut to 300."""
    m = _ERROR_LINE.search(output)
    return (m.group(0) if m else output.strip().splitlines()[-1] if output.strip() else "")[:300]


def run_compiler(cmd: list[str], cwd: Path, env: dict | None = None,
                 timeout: float = COMPILE_TIMEOUT_S) -> tuple[int, str]:
    """(exit status, stdout + stderr) of a compile; -1 and why where it timed out or could not start."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env=env, stdin=subprocess.DEVNULL, errors="replace")
    except subprocess.TimeoutExpired:
        return -1, f"compile did not finish within {timeout:g} s"
    except OSError as exc:
        return -1, f"could not run {cmd[0]}: {exc}"
    return proc.returncode, proc.stdout + proc.stderr


def compile_hip(hipcc: str, unit: Path, includes: list[Path], obj: Path) -> tuple[int, str]:
    """hipcc on a unit copy; every path here is one this module generated (_Sandbox)."""
    cmd = [hipcc, f"--offload-arch={OFFLOAD_ARCH}", "-w", *include_flags(includes), "-x", "hip", "-c", str(unit),
           "-o", str(obj)]
    return run_compiler(cmd, unit.parent, _hip_env())


def compile_cuda(nvcc: str, unit: Path, includes: list[Path], obj: Path) -> tuple[int, str]:
    cmd = [nvcc, f"-arch={NVCC_ARCH}", "-w", *include_flags(includes), "-x", "cu", "-c", str(unit), "-o", str(obj)]
    return run_compiler(cmd, unit.parent)


def include_flags(includes: list[Path]) -> list[str]:
    return [flag for folder in includes for flag in ("-I", str(folder))]


class _Sandbox:
    """Generated names for everything a compile command names: the unit's copy, and links to
    the folders its #includes are looked up in (its own folder, then the tree's root)."""

    def __init__(self, work: Path):
        self.work = work
        self.links: dict[Path, Path] = {}

    def link(self, folder: Path) -> Path:
        if folder not in self.links:
            link = self.work / f"dir{len(self.links)}"
            link.symlink_to(folder, target_is_directory=True)
            self.links[folder] = link
        return self.links[folder]

    def unit(self, source: Path, root: Path, name: str) -> tuple[Path, list[Path]]:
        """Copy of source as NAME in the sandbox, and the include folders that make its
        `#include "..."` lines resolve as they would beside the original."""
        copy = self.work / name
        shutil.copyfile(source, copy)
        return copy, [self.link(source.parent), self.link(root)]


def _named(output: str, sandbox_paths: list[tuple[Path, str]]) -> str:
    """Compiler output with the generated names put back to the tree's names."""
    for path, rel in sandbox_paths:
        output = output.replace(str(path), rel)
    return output


def _library(header: str) -> str:
    top = header.split("/")[0]
    return LIBRARY_OF_HEADER.get(top, top)


def check_one(tc: Toolchain, original: Path, translated: Path, src_root: Path, dst_root: Path,
              work: Path, rel: str = "") -> CheckResult:
    """Compile the translation (hipcc) and the original (nvcc), each as a copy in work (a
    private folder of generated names; rel: the file's name in the tree, for messages)."""
    if not translated.name.lower().endswith(COMPILE_SUFFIXES):
        return CheckResult(SKIPPED, "not a compile unit (headers are checked through their includers)")
    if tc.hipcc is None:
        return CheckResult(SKIPPED, "hipcc not found")
    rel = rel or translated.name
    hip_dir, cuda_dir = work / "hip", work / "cuda"
    hip_dir.mkdir()
    cuda_dir.mkdir()
    unit, includes = _Sandbox(hip_dir).unit(translated, dst_root, "unit.hip")
    rc, out = compile_hip(tc.hipcc, unit, includes, hip_dir / "unit.o")
    out = _named(out, [(unit, rel)])
    orig_status, orig_error, missing0 = "", "", None
    if tc.nvcc is not None:  # always, for the originals' pass rate beside the translations'
        unit0, includes0 = _Sandbox(cuda_dir).unit(original, src_root, "unit.cu")
        rc0, out0 = compile_cuda(tc.nvcc, unit0, includes0, cuda_dir / "unit.o")
        out0 = _named(out0, [(unit0, rel)])
        missing0 = None if rc0 == 0 else _missing_header(out0)
        orig_status = ORIGINAL_PASS if rc0 == 0 else HEADERS_UNAVAILABLE if missing0 else ORIGINAL_FAIL
        orig_error = "" if rc0 == 0 else first_error(out0)

    def result(status: str, detail: str, error: str = "") -> CheckResult:
        return CheckResult(status, detail, error, orig_status, orig_error)

    if rc == 0:
        return result(PASS, "hipcc compiled the translation")
    missing = _missing_header(out)
    error = first_error(out)
    if missing:
        return result(HEADERS_UNAVAILABLE, f"{missing} ({_library(missing)}) not installed for hipcc", error)
    if tc.nvcc is None:
        return result(FAIL_TRANSLATION, "hipcc failed; original not compiled (nvcc not found)", error)
    if orig_status == ORIGINAL_PASS:
        return result(FAIL_TRANSLATION, "hipcc failed but nvcc compiles the original", error)
    if missing0:
        return result(FAIL_TRANSLATION, f"hipcc failed; original not comparable ({missing0} not installed for nvcc)",
                      error)
    return result(FAIL_ORIGINAL, "the original fails with nvcc too: " + orig_error, error)


def check_files(tc: Toolchain, pairs: list[tuple[str, Path, Path]], src_root: Path, dst_root: Path,
                jobs: int | None = None) -> dict[str, CheckResult]:
    """pairs: (relative path, original file, translated file). Compiles in parallel."""
    jobs = jobs or max(1, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="gpuparity-check-") as tmp:
        work = Path(tmp)
        results: dict[str, CheckResult] = {}

        def one(item: tuple[int, tuple[str, Path, Path]]) -> tuple[str, CheckResult]:
            idx, (rel, orig, trans) = item
            sub = work / str(idx)
            sub.mkdir()
            return rel, check_one(tc, orig, trans, src_root, dst_root, sub, rel)

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for rel, res in pool.map(one, enumerate(pairs)):
                results[rel] = res
    return results
