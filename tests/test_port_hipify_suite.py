"""HIPIFY's own unit tests (tests/data/hipify-unit-tests, MIT, ROCm/HIPIFY commit 014177b), scored as
HIPIFY scores hipify-clang: translate with the RUN line's options, drop `//` comments, FileCheck
(llvm-15-tools, scripts/system-deps.sh) with the test as its check file.

bench/port_vs_hipify.py prints the same figures per category beside hipify-perl's."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpuparity.port import hipify_suite as hs

SUITE = Path(__file__).parent / "data" / "hipify-unit-tests"
_ROOT = Path(__file__).resolve().parents[1]
PERL = next((p for p in (r / "shared" / "reference" / "hipify-perl" / "hipify-perl" for r in (_ROOT.parent, _ROOT.parent.parent))
             if p.is_file()), Path("hipify-perl"))
FILES_TARGET, LINES_TARGET = 110, 0.985  # the floor: files passing whole, share of CHECK lines


@pytest.fixture(scope="module")
def filecheck() -> str:
    binary = hs.find_filecheck()
    if binary is None:
        pytest.skip("FileCheck not installed (apt-get install llvm-15-tools; scripts/system-deps.sh)")
    return binary


@pytest.fixture(scope="module")
def ours(filecheck) -> list[hs.Score]:
    cases = hs.cases(SUITE)
    return [hs.score(c, hs.translate(c), filecheck) for c in cases]


def test_the_suite_is_the_125_cu_tests():
    cases = hs.cases(SUITE)
    assert len(cases) == 125
    assert sum(len(hs.check_patterns(c.path.read_text(errors="replace"))) for c in cases) == 9107
    assert "Permission is hereby granted, free of charge" in (SUITE / "LICENSE.txt").read_text()  # MIT


def test_hipify_unit_tests_pass_whole_files_and_check_lines(ours):
    files = sum(s.passed for s in ours)
    found, total = sum(s.found for s in ours), sum(s.checks for s in ours)
    failing = [f"{s.case.rel}: {s.complaint[:100]}" for s in ours if not s.passed]
    assert files >= FILES_TARGET, f"{files}/{len(ours)} pass; failing:\n" + "\n".join(failing)
    assert found / total >= LINES_TARGET, f"{found}/{total} CHECK lines found"


def test_every_category_at_or_above_hipify_perl(ours, filecheck, tmp_path):
    """Where hipify-perl is at hand (the shared reference folder), the same files through it."""
    if not PERL.is_file() or shutil.which("perl") is None:
        pytest.skip(f"hipify-perl not at {PERL}")
    theirs = []
    for k, s in enumerate(ours):
        out = tmp_path / f"{k}.hip"
        subprocess.run(["perl", str(PERL), "-quiet-warnings", *hs.perl_args(s.case), str(s.case.path),
                        "-o", str(out)], capture_output=True, check=False, stdin=subprocess.DEVNULL)
        theirs.append(hs.score(s.case, out.read_text(errors="surrogateescape") if out.exists() else "", filecheck))
    a, b = hs.by_category(ours), hs.by_category(theirs)
    behind = {k: (a[k], b[k]) for k in a if a[k][0] < b[k][0] or a[k][2] < b[k][2]}
    assert not behind, f"(files passing, files, lines found, lines) gpuparity vs hipify-perl: {behind}"


# ---------------------------------------------------------------- the scorer itself

def test_run_line_options_map_to_ours():
    case = hs.Case(Path("x.cu"), "x.cu", "x", ["--skip-excluded-preprocessor-conditional-blocks", "--experimental",
                                                 "--roc", "--use-hip-data-types", "--hip-kernel-execution-syntax"],
                   ["-D__CUDA_API_VERSION_INTERNAL", "-ferror-limit=500"])
    opts = hs.options(case)
    assert (opts.roc, opts.experimental, opts.hip_data_types, opts.skip_excluded, opts.launch, opts.dnn) == \
        (True, True, True, True, "ggl", "hipdnn")
    amap = hs.Case(Path("x.cu"), "x.cu", "x", ["--amap", "--skip-excluded-preprocessor-conditional-blocks", "--miopen"])
    assert (hs.options(amap).skip_excluded, hs.options(amap).dnn) == (False, "miopen")
    assert opts.defines == ("__CUDA_API_VERSION_INTERNAL",)
    assert hs.perl_args(case) == ["-experimental", "-roc", "-hip-kernel-execution-syntax"]
    text = '// RUN: %run_test hipify "%s" "%t" %hipify_args 2 --roc --experimental %clang_args -DX=1\n'
    assert hs.run_line(text) == (["--roc", "--experimental"], ["-DX=1"])
    assert hs.run_line("// no run line\n") is None


def test_scorer_fails_what_filecheck_fails(filecheck, tmp_path):
    check = tmp_path / "t.cu"
    check.write_text("// CHECK: hipMalloc(&p, {{[0-9]+}});\ncudaMalloc(&p, 4);\n// CHECK-NEXT: hipFree(p);\ncudaFree(p);\n")
    good = hs.score(hs.Case(check, "t.cu", "t"), "// CHECK: x\nhipMalloc(&p, 4);\nhipFree(p);\n", filecheck)
    assert (good.passed, good.found, good.checks) == (True, 2, 2)
    # the CHECK text only in a comment (as a translator that changes nothing leaves it) is not found
    bad = hs.score(hs.Case(check, "t.cu", "t"), "// hipMalloc(&p, 4);\ncudaMalloc(&p, 4);\nhipFree(p);\n",
                   filecheck)
    assert (bad.passed, bad.found) == (False, 1) and "expected string not found" in bad.complaint


# ---------------------------------------------------------------- the same translation through the CLI

# Tests whose translation each HIPIFY option changes (--skip-excluded with -D, --amap, --dnn both ways,
# --no-experimental, --hip-data-types, --roc, --launch ggl).
CLI_CASES = ["pp/pp_if_else_conditionals.cu", "synthetic/driver_enums.cu", "synthetic/libraries/cudnn2miopen_before_9000.cu",
             "libraries/cuDNN/cudnn_softmax.cu", "synthetic/runtime_functions.cu",
             "synthetic/libraries/cusparse2rocsparse_10010.cu"]


def test_the_cli_options_give_the_scorers_translation(tmp_path):
    """`gpuparity port FILE --out F` with hs.cli_args(case) writes what hs.translate(case) gives; the
    README's CLI-only suite command (bench/hipify_suite_cli.py) relies on it."""
    from test_port_cli import port_cli

    by_rel = {c.rel: c for c in hs.cases(SUITE)}
    for k, rel in enumerate(CLI_CASES):
        case = by_rel[rel]
        out = tmp_path / f"{k}.hip"
        proc = port_cli(str(case.path), "--out", str(out), *hs.cli_args(case))
        assert proc.returncode == 0, proc.stderr
        assert out.read_text(errors="surrogateescape") == hs.translate(case), rel
    swap = {"--experimental": "--no-experimental", "--no-experimental": "--experimental"}
    flipped = [swap.get(a, a) for a in hs.cli_args(by_rel[CLI_CASES[4]])]
    proc = port_cli(str(by_rel[CLI_CASES[4]].path), "--out", str(tmp_path / "x.hip"), *flipped)
    assert (tmp_path / "x.hip").read_text() != hs.translate(by_rel[CLI_CASES[4]])  # the option is not ignored


def test_bad_hipify_options_are_one_line_errors(tmp_path):
    from test_port_cli import port_cli

    src = tmp_path / "a.cu"
    src.write_text("__global__ void k() {}\n")
    for bad in (["-D", "1X"], ["-D", "A B"], ["--dnn", "cudnn"]):
        proc = port_cli(str(src), "--out", str(tmp_path / "o.hip"), *bad)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert not (tmp_path / "o.hip").exists()
