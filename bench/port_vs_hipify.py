"""gpuparity port beside hipify-perl on HIPIFY's own unit tests, scored as HIPIFY scores them.

    python bench/port_vs_hipify.py [--tests DIR] [--perl FILE] [--failures]

Both translators get the same files with the options each test's RUN line gives (hipify-perl
only those it has), the output's `//` comments are removed, and LLVM's FileCheck runs with the
test as its check file. Printed per category, side by side: files passing whole, CHECK lines
found, seconds. Seconds: gpuparity translating in this process; hipify-perl in its fastest mode
(`-quiet-warnings -inplace` over all of a category's files with the same options in one process).
FileCheck is llvm-15-tools' (scripts/system-deps.sh). Exits 1 when gpuparity is below hipify-perl
in any category, on either figure.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_TESTS = [Path(__file__).resolve().parents[1] / "tests" / "data" / "hipify-unit-tests",
                 Path("/work/shared/reference/hipify-unit-tests")]
DEFAULT_PERL = Path("/work/shared/reference/hipify-perl/hipify-perl")


def run_gpuparity(cases, hs) -> tuple[dict[str, str], dict[str, float]]:
    from gpuparity.port.translate import translate_source
    from gpuparity.port.walk import decode_source

    translate_source("cudaStream_t s;\n")  # load the tables before the clock starts
    outputs, seconds = {}, {}
    for case in cases:
        text = decode_source(case.path.read_bytes())
        started = time.perf_counter()
        outputs[case.rel] = translate_source(text, hs.options(case), cuda_source=True).text
        seconds[case.category] = seconds.get(case.category, 0.0) + time.perf_counter() - started
    return outputs, seconds


def run_perl(cases, hs, perl: Path) -> tuple[dict[str, str], dict[str, float]]:
    """One hipify-perl process per (category, options): its fastest mode, on copies of the files
    under generated names (the originals are never written)."""
    groups: dict[tuple[str, tuple[str, ...]], list] = {}
    for case in cases:
        groups.setdefault((case.category, tuple(hs.perl_args(case))), []).append(case)
    outputs, seconds = {}, {}
    with tempfile.TemporaryDirectory(prefix="gpuparity-vs-perl-") as tmp:
        for g, ((category, args), members) in enumerate(groups.items()):
            folder = Path(tmp) / str(g)
            folder.mkdir()
            copies = []
            for k, case in enumerate(members):
                copy = folder / f"t{k}.cu"
                shutil.copyfile(case.path, copy)
                copies.append(copy)
            started = time.perf_counter()
            subprocess.run(["perl", str(perl), "-quiet-warnings", "-inplace", *args, *map(str, copies)],
                           capture_output=True, stdin=subprocess.DEVNULL, check=False)
            seconds[category] = seconds.get(category, 0.0) + time.perf_counter() - started
            for case, copy in zip(members, copies, strict=True):
                outputs[case.rel] = copy.read_text(encoding="utf-8", errors="surrogateescape")
    return outputs, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=Path, help="HIPIFY's tests/unit_tests folder")
    parser.add_argument("--perl", type=Path, default=DEFAULT_PERL, help="hipify-perl script")
    parser.add_argument("--failures", action="store_true", help="list the files gpuparity fails, with the "
                        "first FileCheck complaint")
    args = parser.parse_args(argv)

    from gpuparity.port import hipify_suite as hs

    tests = args.tests or next((p for p in DEFAULT_TESTS if p.is_dir()), None)
    if tests is None or not tests.is_dir():
        print("no HIPIFY unit tests found (give --tests DIR)", file=sys.stderr)
        return 2
    filecheck = hs.find_filecheck()
    if filecheck is None:
        print("FileCheck not found (apt-get install llvm-15-tools)", file=sys.stderr)
        return 2
    cases = hs.cases(tests)
    ours, our_s = run_gpuparity(cases, hs)
    ours_scores = [hs.score(c, ours[c.rel], filecheck) for c in cases]
    have_perl = args.perl.is_file() and shutil.which("perl") is not None
    if have_perl:
        theirs, their_s = run_perl(cases, hs, args.perl)
        their_scores = [hs.score(c, theirs[c.rel], filecheck) for c in cases]
    else:
        print(f"hipify-perl not found at {args.perl}: gpuparity alone", file=sys.stderr)
        their_scores, their_s = [], {}
    a, b = hs.by_category(ours_scores), hs.by_category(their_scores)
    our_s["all"], their_s["all"] = sum(our_s.values()), sum(their_s.values())

    def pct(row) -> str:
        return f"{row[2]:>5}/{row[3]:<5} {100 * row[2] / row[3] if row[3] else 0:5.1f}%"

    print(f"{'category':<21} {'files passing':>21}   {'CHECK lines found':>37}   {'seconds':>15}")
    print(f"{'':<21} {'gpuparity':>10} {'perl':>10}   {'gpuparity':>18} {'perl':>18}   {'gpuparity':>7} {'perl':>7}")
    behind = []
    for category, row in a.items():
        other = b.get(category)
        p_files = f"{other[0]}/{other[1]}" if other else "-"
        p_lines = pct(other) if other else "-"
        p_sec = f"{their_s.get(category, 0):.2f}" if other else "-"
        print(f"{category:<21} {f'{row[0]}/{row[1]}':>10} {p_files:>10}   {pct(row):>18} {p_lines:>18}   "
              f"{our_s.get(category, 0):7.2f} {p_sec:>7}")
        if other and (row[0] < other[0] or row[2] < other[2]):
            behind.append(category)
    if args.failures:
        for s in ours_scores:
            if not s.passed:
                print(f"FAIL {s.case.rel}: {s.found}/{s.checks} lines; {s.complaint[:160]}")
    if behind:
        print(f"gpuparity behind hipify-perl in: {', '.join(behind)}")
    return 1 if behind else 0


if __name__ == "__main__":
    raise SystemExit(main())
