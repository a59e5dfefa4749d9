"""Score a translator on HIPIFY's own unit tests, the way HIPIFY scores hipify-clang.

Each test is a CUDA source whose first lines hold a `RUN:` line (the hipify options the test
expects) and `// CHECK:` lines (text the translation must contain, in order). A test passes when
LLVM's FileCheck, given the source as its check file, accepts the translation with its `//`
comments removed (else the CHECK comments, copied untouched, would match themselves). The finer
figure is the share of positive CHECK / CHECK-NEXT lines whose text is found in that output.

Used by tests/test_port_hipify_suite.py (the suite in CI) and bench/port_vs_hipify.py (side by
side with hipify-perl); the package never reads the tests at run time.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gpuparity.port.translate import Options

FILECHECK_PATHS = ("FileCheck", "FileCheck-15", "/usr/lib/llvm-15/bin/FileCheck")
_RUN = re.compile(r"^//\s*RUN:\s*%run_test\s+hipify\s+\S+\s+\S+\s+%hipify_args\s+(.*?)\s*%clang_args(.*)$", re.M)
# Positive checks, as HIPIFY counts them (CHECK-NOT lines say what must be absent).
_CHECK = re.compile(r"//\s*CHECK(?:-NEXT)?:(.*)$", re.M)
_COMMENT = re.compile(r"//.*")
_SUFFIXES = (".cu",)


@dataclass
class Case:
    path: Path
    rel: str  # path under the suite's root
    category: str  # its first folder (synthetic/libraries counts as synthetic)
    hipify_args: list[str] = field(default_factory=list)  # the RUN line's hipify options
    clang_args: list[str] = field(default_factory=list)


def run_line(text: str) -> tuple[list[str], list[str]] | None:
    """(hipify options, clang options) of a test's RUN line; None when it has none."""
    m = _RUN.search(text)
    if not m:
        return None
    args = shlex.split(m.group(1))
    if args and args[0].isdigit():  # the option count run_test is given first
        args = args[1:]
    return args, shlex.split(m.group(2))


def cases(root: Path) -> list[Case]:
    """Every test file under root (the .cu files with a RUN line), in path order."""
    out = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix not in _SUFFIXES:
            continue
        parsed = run_line(path.read_text(encoding="utf-8", errors="surrogateescape"))
        if parsed is None:
            continue
        rel = path.relative_to(root).as_posix()
        out.append(Case(path, rel, rel.split("/")[0], *parsed))
    return out


def options(case: Case) -> Options:
    """Our translator's options for what the RUN line asks of hipify-clang."""
    from gpuparity.port.hipify_options import hipify_options

    args = {a.lstrip("-") for a in case.hipify_args}
    return Options(launch="ggl" if "hip-kernel-execution-syntax" in args else "chevron", roc="roc" in args,
                   **hipify_options(experimental="experimental" in args, dnn="miopen" if "miopen" in args else "hipdnn",
                                    defines=[a[2:] for a in case.clang_args if a.startswith("-D")],
                                    skip_excluded="skip-excluded-preprocessor-conditional-blocks" in args,
                                    amap="amap" in args, hip_data_types="use-hip-data-types" in args))


def cli_args(case: Case) -> list[str]:
    """`gpuparity port` options for what the RUN line asks (the same translation as options(case),
    through the command line: bench/hipify_suite_cli.py)."""
    args = {a.lstrip("-") for a in case.hipify_args}
    out = ["--hip-version", "7.0", "--headers", "hipify", "-q",
           "--experimental" if "experimental" in args else "--no-experimental",
           "--dnn", "miopen" if "miopen" in args else "hipdnn"]
    out += ["--launch", "ggl"] if "hip-kernel-execution-syntax" in args else []
    out += ["--roc"] if "roc" in args else []
    out += ["--skip-excluded"] if "skip-excluded-preprocessor-conditional-blocks" in args else []
    out += ["--amap"] if "amap" in args else []
    out += ["--hip-data-types"] if "use-hip-data-types" in args else []
    return out + [x for a in case.clang_args if a.startswith("-D") for x in ("-D", a[2:])]


def translate(case: Case) -> str:
    """gpuparity's translation of one test, with its RUN line's options."""
    from gpuparity.port.translate import translate_source
    from gpuparity.port.walk import decode_source

    return translate_source(decode_source(case.path.read_bytes()), options(case), cuda_source=True).text


def perl_args(case: Case) -> list[str]:
    """hipify-perl's options for the RUN line (the ones it has; it rejects the rest)."""
    known = {"roc", "experimental", "hip-kernel-execution-syntax", "cuda-kernel-execution-syntax"}
    return [f"-{a.lstrip('-')}" for a in case.hipify_args if a.lstrip("-") in known]


def strip_comments(text: str) -> str:
    """The output as HIPIFY's run_test hands it to FileCheck: every `//` to the end of its line gone."""
    return _COMMENT.sub("", text)


def check_patterns(text: str) -> list[str]:
    return [m.group(1).strip() for m in _CHECK.finditer(text)]


def _pattern_regex(pattern: str) -> re.Pattern:
    """A FileCheck pattern as a regex: {{...}} is a regex, [[...]] a variable, blanks any blanks."""
    parts, pos = [], 0
    for m in re.finditer(r"\{\{(.*?)\}\}|\[\[(?:[^\]:]*:)?(.*?)\]\]", pattern):
        parts.append(_literal(pattern[pos:m.start()]))
        parts.append(f"(?:{m.group(1)})" if m.group(1) is not None else f"(?:{m.group(2) or '.*?'})")
        pos = m.end()
    parts.append(_literal(pattern[pos:]))
    try:
        return re.compile("".join(parts))
    except re.error:
        return re.compile(_literal(pattern))


def _literal(text: str) -> str:
    return r"[ \t]+".join(re.escape(word) for word in re.split(r"[ \t]+", text)) if text.strip() else \
        (r"[ \t]*" if text else "")


def lines_found(patterns: list[str], output: str) -> int:
    """How many of the CHECK patterns occur somewhere in output (order aside)."""
    lines = output.splitlines()
    found = 0
    for pattern in patterns:
        rx = _pattern_regex(pattern)
        found += any(rx.search(line) for line in lines)
    return found


def find_filecheck() -> str | None:
    for name in FILECHECK_PATHS:
        path = shutil.which(name) or (name if os.access(name, os.X_OK) else None)
        if path:
            return path
    return None


def filecheck(binary: str, check_file: Path, output: str) -> tuple[bool, str]:
    """(passed, FileCheck's first complaint) for one translation, comments removed."""
    with tempfile.NamedTemporaryFile("w", suffix=".hip", encoding="utf-8", errors="surrogateescape",
                                     delete=False) as fh:
        fh.write(strip_comments(output))
    try:
        proc = subprocess.run([binary, str(check_file), f"--input-file={fh.name}"], capture_output=True,
                              text=True, errors="replace", timeout=120, stdin=subprocess.DEVNULL)
    finally:
        os.unlink(fh.name)
    first = next((line for line in proc.stderr.splitlines() if "error:" in line), "")
    return proc.returncode == 0, first.split("error:", 1)[-1].strip()


@dataclass
class Score:
    """One translator on one test file."""
    case: Case
    passed: bool
    found: int
    checks: int
    complaint: str = ""


def score(case: Case, output: str, binary: str) -> Score:
    text = case.path.read_text(encoding="utf-8", errors="surrogateescape")
    patterns = check_patterns(text)
    passed, complaint = filecheck(binary, case.path, output)
    return Score(case, passed, lines_found(patterns, strip_comments(output)), len(patterns), complaint)


def by_category(scores: list[Score]) -> dict[str, tuple[int, int, int, int]]:
    """category -> (files passing, files, CHECK lines found, CHECK lines), with 'all' last."""
    out: dict[str, list[int]] = {}
    for s in scores:
        for key in (s.case.category, "all"):
            row = out.setdefault(key, [0, 0, 0, 0])
            row[0] += s.passed
            row[1] += 1
            row[2] += s.found
            row[3] += s.checks
    total = out.pop("all", [0, 0, 0, 0])
    return {**{k: tuple(v) for k, v in sorted(out.items())}, "all": tuple(total)}
