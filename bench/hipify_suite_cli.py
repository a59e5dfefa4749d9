"""HIPIFY's own unit tests through the command line alone: each test translated by
`gpuparity port TEST --out FILE` with the CLI options its RUN line asks for, then scored as
bench/port_vs_hipify.py scores the in-process translation (FileCheck on the output with its `//`
comments removed; CHECK lines found), per category, beside hipify-perl's.

    python bench/hipify_suite_cli.py [--tests DIR] [--perl FILE] [--show-commands]

The figure must equal port_vs_hipify.py's: the CLI options reach everything the scorer's
internal options do. Exits 1 when a category is below hipify-perl or the CLI's figure differs
from the in-process one.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import port_vs_hipify as pvh  # noqa: E402  (the same test folder, hipify-perl run and table)


def run_cli(cases, show: bool) -> dict[str, str]:
    from gpuparity.port import hipify_suite as hs

    outputs = {}
    with tempfile.TemporaryDirectory(prefix="gpuparity-suite-cli-") as tmp:
        for k, case in enumerate(cases):
            out = Path(tmp) / f"{k}.hip"
            cmd = [sys.executable, "-m", "gpuparity", "port", str(case.path), "--out", str(out),
                   *hs.cli_args(case)]
            if show:
                print("gpuparity port " + shlex.join(cmd[4:]))
            proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
            if proc.returncode != 0:
                print(f"{case.rel}: port exited {proc.returncode}: {proc.stderr.strip()[-300:]}", file=sys.stderr)
            outputs[case.rel] = out.read_text(encoding="utf-8", errors="surrogateescape") if out.exists() else ""
    return outputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=Path, help="HIPIFY's tests/unit_tests folder")
    parser.add_argument("--perl", type=Path, default=pvh.DEFAULT_PERL, help="hipify-perl script")
    parser.add_argument("--show-commands", action="store_true", help="print each `gpuparity port` command")
    args = parser.parse_args(argv)

    from gpuparity.port import hipify_suite as hs

    tests = args.tests or next((p for p in pvh.DEFAULT_TESTS if p.is_dir()), None)
    filecheck = hs.find_filecheck()
    if tests is None or filecheck is None:
        print("need HIPIFY's unit tests (--tests DIR) and FileCheck (apt-get install llvm-15-tools)", file=sys.stderr)
        return 2
    cases = hs.cases(tests)
    cli = hs.by_category([hs.score(c, out, filecheck) for c, out in zip(cases, run_cli(cases, args.show_commands).values(),
                                                                       strict=True)])
    inproc = hs.by_category([hs.score(c, hs.translate(c), filecheck) for c in cases])
    perl = {}
    if args.perl.is_file():
        theirs, _ = pvh.run_perl(cases, hs, args.perl)
        perl = hs.by_category([hs.score(c, theirs[c.rel], filecheck) for c in cases])

    def cell(row) -> str:
        return f"{row[0]}/{row[1]} files, {row[2]}/{row[3]} lines ({100 * row[2] / row[3] if row[3] else 0:.1f}%)"

    print(f"{'category':<21} {'gpuparity port (CLI)':<38} {'hipify-perl':<38}")
    bad = []
    for category, row in cli.items():
        other = perl.get(category)
        print(f"{category:<21} {cell(row):<38} {cell(other) if other else '-':<38}")
        if other and (row[0] < other[0] or row[2] < other[2]):
            bad.append(f"{category} below hipify-perl")
        if row != inproc[category]:
            bad.append(f"{category}: CLI {row} != in-process {inproc[category]}")
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
