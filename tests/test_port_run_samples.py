"""`port --run`: the project's CUDA samples (tests/data/port_samples) translated, built against
HIP-CPU with g++ and run on the CPU; human ports compared; planted translation errors, a hang, a
crash and what HIP-CPU cannot run reported; the source trees never written.

HIP-CPU: the packaged copy when it is complete, else tests/data/hip_cpu_standin (a stand-in for
its interface: the reference copy lacks src/include/hip/detail; see that folder's README).
Each tree is built once per session (one `port --run` each, builds in parallel)."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_port_cli import port_cli

from gpuparity.port import hip_cpu
from gpuparity.port.hip_cpu_adapt import for_hip_cpu, not_runnable
from gpuparity.port.output_compare import difference

DATA = Path(__file__).parent / "data"
SAMPLES, HUMAN, PLANTED, FAULTY = (DATA / n for n in ("port_samples", "port_samples_hip",
                                                       "port_samples_mistranslated", "port_samples_faulty"))
STANDIN = DATA / "hip_cpu_standin"
TIMEOUT = 5.0

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed (scripts/system-deps.sh)")


def _hip_cpu_args() -> list[str]:
    return [] if hip_cpu.missing_header(hip_cpu.packaged()) is None else ["--hip-cpu", str(STANDIN)]


def _tree_hash(*roots: Path) -> str:
    h = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*")):
            h.update(str(path.relative_to(root)).encode())
            if path.is_file():
                h.update(path.read_bytes())
    return h.hexdigest()


def _run(src: Path, out: Path, *extra: str) -> tuple[int, dict, float, str]:
    started = time.perf_counter()
    proc = port_cli(str(src), "--out", str(out / "hip"), "--run", *_hip_cpu_args(), "-f", "json", "-o",
                    str(out / "report.json"), *extra)
    took = time.perf_counter() - started
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    return proc.returncode, report, took, proc.stdout + proc.stderr


@pytest.fixture(scope="session")
def samples_run(tmp_path_factory):
    """The samples, compared with the human ports; the two trees hashed before and after."""
    out = tmp_path_factory.mktemp("samples")
    before = _tree_hash(SAMPLES, HUMAN)
    rc, report, _, text = _run(SAMPLES, out, "--compare-to", str(HUMAN))
    return rc, report, before, _tree_hash(SAMPLES, HUMAN), out, text


def _by_program(report: dict) -> dict[str, dict]:
    return {p["program"]: p for p in report["run"]["programs"]}


def test_every_sample_builds_runs_and_prints_pass(samples_run):
    rc, report, before, after, out, text = samples_run
    programs = _by_program(report)
    assert len(programs) == len(list(SAMPLES.glob("*.cu"))) >= 10
    failing = {k: (p["status"], p["detail"], p["output"][-200:]) for k, p in programs.items() if p["status"] != "pass"}
    assert not failing, failing
    assert all(p["built"] and p["ran"] and p["exit_status"] == 0 and p["verdict"] == "PASS" for p in programs.values())
    assert rc == 0, text
    assert before == after  # neither source tree written
    # the adaptations went to the build copy only: the port's output keeps <<<>>> and extern __shared__
    assert "<<<" in (out / "hip" / "vector_add.cu").read_text()
    assert "extern __shared__ float partial[];" in (out / "hip" / "dynamic_shared.cu").read_text()


def test_compare_to_a_human_port_finds_equal_outputs(samples_run):
    programs = _by_program(samples_run[1])
    human = {p.stem for p in HUMAN.glob("*.hip")}
    assert len(human) >= 5
    for name, p in programs.items():
        outcome = p["compare"]["outcome"]
        if Path(name).stem in human:
            assert (outcome, p["compare"]["status"]) == ("equal", "pass"), (name, p["compare"])
        else:
            assert outcome == "no counterpart", name


def test_planted_translation_errors_are_reported_as_fail(tmp_path):
    """A width-16 shuffle and an index one off: each program's own check prints FAIL, and its
    output differs from the correct human port's."""
    before = _tree_hash(PLANTED, HUMAN)
    rc, report, _, text = _run(PLANTED, tmp_path, "--compare-to", str(HUMAN))
    programs = _by_program(report)
    assert set(programs) == {"warp_reduce.cpp", "shared_reverse.cpp"}
    for p in programs.values():
        assert (p["built"], p["ran"], p["verdict"], p["status"]) == (True, True, "FAIL", "fail"), p
    assert programs["warp_reduce.cpp"]["compare"]["outcome"] == "differ"
    assert rc == 1
    assert _tree_hash(PLANTED, HUMAN) == before


def test_a_hang_a_crash_and_what_hip_cpu_lacks_are_reported_and_the_rest_go_on(tmp_path):
    rc, report, took, text = _run(FAULTY, tmp_path, "--timeout", str(TIMEOUT), "--", "one", "two words")
    programs = _by_program(report)
    hang = programs["hang.cu"]
    assert (hang["status"], hang["built"], hang["exit_status"]) == ("timed out", True, None)
    assert TIMEOUT <= hang["run_seconds"] < TIMEOUT + 5          # killed at its timeout, not later
    assert programs["crash.cu"]["status"] == "crashed" and "SIGSEGV" in programs["crash.cu"]["detail"]
    assert programs["passes.cu"]["status"] == "pass"
    echo = programs["args_echo.cu"]
    assert echo["status"] == "pass" and "arg2=two words" in echo["output"]
    assert programs["texture_fetch.cu"]["status"] == "not runnable"
    assert programs["texture_fetch.cu"]["detail"].startswith("not runnable on HIP-CPU: textures")
    assert programs["prefetch.cu"]["status"] == "not runnable"   # from the compiler's error
    assert "hipMemPrefetchAsync is not in HIP-CPU" in programs["prefetch.cu"]["detail"]
    assert rc == 1
    assert "timed out" in text or report  # the table or the report says it


def test_expect_decides_the_verdict(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(FAULTY / "passes.cu", src)
    rc, report, _, _ = _run(src, tmp_path, "--expect", r"c\[999\]=-?\d+")
    assert (rc, _by_program(report)["passes.cu"]["verdict"]) == (0, "matched")
    (tmp_path / "x").mkdir()
    rc, report, _, _ = _run(src, tmp_path / "x", "--expect", "never printed")
    assert (rc, _by_program(report)["passes.cu"]["status"]) == (1, "fail")


def test_run_refusals_are_one_line(tmp_path):
    src = FAULTY / "passes.cu"
    cases = [(["--run"], "--out"), (["--out", str(tmp_path / "o"), "--run", "--expect", "("], "regular expression"),
             (["--out", str(tmp_path / "o"), "--hip-cpu", str(STANDIN)], "goes with --run"),
             (["--out", str(tmp_path / "o"), "--run", "--hip-cpu", str(tmp_path)], "include/hip"),
             (["--out", str(tmp_path / "o"), "--run", "--timeout", "0"], "--timeout")]
    for args, says in cases:
        proc = port_cli(str(src), *args)
        assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)
    incomplete = tmp_path / "hc"
    shutil.copytree(hip_cpu.packaged() / "include", incomplete / "include")   # the public headers alone
    proc = port_cli(str(src), "--out", str(tmp_path / "o"), "--run", "--hip-cpu", str(incomplete))
    assert proc.returncode == 2 and "src/include/hip/detail/" in proc.stderr
    proc = port_cli(str(src), "--out", str(tmp_path / "o"), "--run", "--hip-cpu", str(STANDIN),
                    env={"PATH": str(tmp_path)})    # no g++ on it (python runs by its full path)
    assert proc.returncode == 2 and "apt-get install g++" in proc.stderr, proc.stderr


# ---------------------------------------------------------------- the pieces, without a build

def test_build_copy_adaptations():
    hip = ("// a<<<1, 2>>>(x) in a comment stays\n__global__ void k(int* x) {\n"
           "    extern __shared__ __align__(16) float smem[];\n    x[0] = 1;\n}\n"
           "extern __shared__ int at_file_scope[];\nvoid run(int* x) { k<<<dim3(2), 64, 128, 0>>>(x); }\n")
    out = for_hip_cpu(hip)
    assert "hipLaunchKernelGGL(k, dim3(2), dim3(64), 128, 0, x);" in out
    assert "HIP_DYNAMIC_SHARED(float, smem)" in out and "extern __shared__ int at_file_scope[];" in out
    assert "// a<<<1, 2>>>(x) in a comment stays\n" in out
    assert for_hip_cpu("int main() { return 0; }\n") == "int main() { return 0; }\n"


@pytest.mark.parametrize(("text", "reason"), [
    ("#include <hipblas/hipblas.h>\n", "library calls (hipblas)"),
    ("#include <hip/hip_cooperative_groups.h>\n", "cooperative groups"),
    ("__global__ void k() { asm volatile(\"s_nop 0\"); }\n", "inline assembly"),
    ("__global__ void k(unsigned* o) { o[0] = __ballot_sync(~0u, 1); }\n", "warp vote"),
    ("__global__ void k(int* o) { o[0] = __builtin_amdgcn_readfirstlane(1); }\n", "AMD GPU builtins"),
])
def test_what_hip_cpu_cannot_run_is_found_in_the_source(text, reason):
    assert reason in (not_runnable(text) or "")


def test_a_name_in_a_comment_or_string_is_not_a_reason():
    assert not_runnable('// tex2D, asm\nconst char* s = "__ballot_sync";\nint main() {}\n') is None


def test_compiler_errors_that_name_a_missing_hip_api():
    assert hip_cpu.runtime_gap("x.cu:9:5: error: \u2018hipMemAdvise\u2019 was not declared in this scope") == \
        "hipMemAdvise is not in HIP-CPU"
    assert hip_cpu.runtime_gap("x.cu:9:5: error: 'my_helper' was not declared in this scope") is None


def test_outputs_compare_by_words_and_numbers_within_tolerance():
    assert difference("sum=1.0000001 n=3\n", "sum=1.0 n=3\n") is None
    assert difference("sum=1.01\n", "sum=1.0\n") == "line 1: 1.01 vs 1.0"
    assert difference("sum=1\n", "total=1\n").startswith("line 1:")
    assert difference("a\nb\n", "a\n") == "2 lines vs 1"
    assert difference("x=nan\n", "x=nan\n") is None and difference("x=nan\n", "x=1\n") is not None


@settings(max_examples=60, deadline=2000)
@given(st.text(max_size=200), st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), max_size=8))
def test_output_comparison_fuzz(text, numbers):
    assert difference(text, text) is None
    line = " ".join(f"v={x!r}" for x in numbers)
    nudged = " ".join(f"v={x * (1 + 1e-9)!r}" for x in numbers)
    assert difference(line, nudged) is None
