"""`gpuparity port` end to end: dry run, DST tree, reports, skips, bad input, --check, bench."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuparity.port import check as checking
from gpuparity.port.run import port

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = Path(__file__).parent / "data" / "cuda_samples"
COMPILED = ["vector_add_streams.cu", "warp_reduce.cu", "cublas_sgemm.cu", "curand_pi.cu", "inline_ptx.cu"]


def _all_verbs_importable() -> bool:
    from gpuparity.cli.main import VERBS

    return all(importlib.util.find_spec(f"gpuparity.cli.{v}") is not None for v in VERBS)


def port_cli(*args: str, cwd: Path | None = None, timeout: float = 600,
             env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m gpuparity port ARGS` in a subprocess, as a user runs it (env: variables changed)."""
    env = dict(os.environ, COLUMNS="200", **(env or {}))
    if _all_verbs_importable():
        cmd = [sys.executable, "-m", "gpuparity", "port", *args]
    else:  # other verbs still being written: the real main, registering only `port`
        code = ("import sys; from gpuparity.cli import main; main.VERBS[:] = ['port']; "
                "main.main(sys.argv[1:])")
        cmd = [sys.executable, "-c", code, "port", *args]
    return subprocess.run(cmd, capture_output=True, text=True, errors="surrogateescape", timeout=timeout, env=env,
                          cwd=cwd)


def test_port_loads_without_torch():
    code = ("import sys\n"
            "import typer\n"
            "from gpuparity.cli import port\n"
            "app = typer.Typer()\n"
            "port.register(app)\n"
            "import gpuparity.port.run, gpuparity.port.report, gpuparity.port.check\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr     # start-up time itself is measured by bench/startup.py
    helped = port_cli("--help")
    assert helped.returncode == 0
    for option in ("--out", "--check", "--json", "--html", "--hip-version", "--launch"):
        assert option in helped.stdout


def test_dry_run_prints_a_unified_diff_and_writes_nothing(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(SAMPLES, src)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    proc = port_cli(str(src), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("--- a/")
    assert "+#include <hip/hip_runtime.h>" in proc.stdout
    assert "-    CUDA_CHECK(cudaMalloc(&d_a, bytes));" in proc.stdout
    assert "+    CUDA_CHECK(hipMalloc(&d_a, bytes));" in proc.stdout
    assert "portability score:" in proc.stderr  # the summary stays off the diff
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    if shutil.which("patch"):  # the diff is a real patch: applied, it gives the --out tree
        patched = tmp_path / "patched"
        shutil.copytree(src, patched)
        subprocess.run(["patch", "-p1", "-s", "-d", str(patched)], input=proc.stdout.encode("utf-8", "surrogateescape"),
                       check=True)
        out = tmp_path / "out"
        assert port_cli(str(src), "--out", str(out), "-q").returncode == 0
        for f in out.rglob("*"):
            if f.is_file():  # bytes: the Latin-1 sample goes through the diff as it is
                assert f.read_bytes() == (patched / f.relative_to(out)).read_bytes(), f


def test_out_writes_tree_and_reports(tmp_path):
    dst, js, page = tmp_path / "hip", tmp_path / "r.json", tmp_path / "r.html"
    proc = port_cli(str(SAMPLES), "--out", str(dst), "--json", str(js), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    assert "portability score:" in proc.stdout
    assert "hipblasSgemm(handle, HIPBLAS_OP_N" in (dst / "cublas_sgemm.cu").read_text()
    assert "#include <hip/hip_runtime.h>" in (dst / "common" / "cuda_check.cuh").read_text()
    assert "enable_language(HIP)" in (dst / "CMakeLists.txt").read_text()

    report = json.loads(js.read_text())
    # no --hip-version: the installed hipcc's HIP (said in the notes), else the newest
    hipcc = shutil.which("hipcc")
    installed = checking.hipcc_version(hipcc) if hipcc else None
    assert report["dry_run"] is False
    if installed:
        v = ".".join(map(str, installed[:2]))
        assert report["hip_version"] == v and any(f"target HIP {v}: the installed hipcc" in n for n in report["notes"])
        assert "#include <hipblas/hipblas.h>" in (dst / "cublas_sgemm.cu").read_text()  # its header layout
    else:
        assert report["hip_version"] == "7.0"
    summary = report["summary"]
    assert summary["uses"] > 100 and 0.9 < summary["score"] < 1.0
    files = {f["path"]: f for f in report["files"]}
    assert files["vector_add_streams.cu"]["score"] == 1.0
    assert files["warp_reduce.cu"]["hazards"] == [
        {"kind": "lane_mask_32", "line": 9, "severity": "wrong results",
         "detail": files["warp_reduce.cu"]["hazards"][0]["detail"]}]
    hazard = next(h for h in report["hazards"] if h["file"] == "warp_reduce.cu")
    assert hazard["why"] and hazard["fix"] and "__shfl_down_sync" in hazard["code"]
    unsupported = {(u["file"], u["name"]) for u in report["unsupported"]}
    assert ("hazards/planted.cu", "cudaLaunchKernelEx") in unsupported
    assert all(u["line"] > 0 and u["reason"] for u in report["unsupported"])

    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "http" not in html.split("<body>")[0]
    assert f"{100 * summary['score']:.1f}%" in html
    assert "lane_mask_32" in html and "warp_reduce.cu:9" in html and "cudaLaunchKernelEx" in html


def test_html_escapes_file_supplied_strings(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "x<b>&.cu").write_text(
        "__global__ void k(int* o) {\n"
        "  int lane = threadIdx.x & 31; // <script>alert(1)</script>\n"
        "  o[lane] = 1;\n"
        "}\n")
    page = tmp_path / "r.html"
    proc = port_cli(str(src), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    html = page.read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "x&lt;b&gt;&amp;.cu:2" in html


def test_unsafe_and_unreadable_files_are_skipped_and_named(tmp_path):
    src, dst, outside = tmp_path / "src", tmp_path / "dst", tmp_path / "outside"
    src.mkdir()
    outside.mkdir()
    (outside / "secret.cu").write_text("cudaMalloc(0, 0);\n")
    (src / "good.cu").write_text("void f() { cudaDeviceSynchronize(); }\n")
    (src / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02cudaMalloc\x00" * 64)
    (src / "latin1.cu").write_bytes(b"// caf\xe9 cudaMalloc\nint x; cudaStream_t s;\n")
    (src / "huge.cu").write_bytes(b" " * (10 * 1024 * 1024 + 1))
    (src / "notes.md").write_text("cudaMalloc in prose\n")
    os.symlink(outside / "secret.cu", src / "escape.cu")
    os.symlink(outside, src / "linked_dir")
    os.symlink(src / "good.cu", src / "alias.cu")  # stays inside SRC: ported
    os.mkfifo(src / "pipe.cu")
    js = tmp_path / "r.json"
    proc = port_cli(str(src), "--out", str(dst), "--json", str(js), timeout=120)
    assert proc.returncode == 0, proc.stderr
    skipped = {s["path"]: s["reason"] for s in json.loads(js.read_text())["skipped"]}
    assert skipped["blob.bin"] == "binary file"
    assert skipped["huge.cu"].startswith("larger than 10 MB")
    assert skipped["escape.cu"] == "symlink leads outside SRC (not followed)"
    assert skipped["linked_dir/"] == "symlink leads outside SRC (not followed)"
    assert skipped["pipe.cu"] == "not a regular file"
    assert skipped["notes.md"].startswith("not a C/C++")
    for name in skipped:
        assert f"skipped {name}" in proc.stdout
    assert "latin1.cu" not in skipped  # a Latin-1 byte in a comment: ported, the byte kept
    assert (dst / "latin1.cu").read_bytes() == (b"#include <hip/hip_runtime.h>\n"
                                               b"// caf\xe9 cudaMalloc\nint x; hipStream_t s;\n")
    assert sorted(p.name for p in dst.iterdir()) == ["alias.cu", "good.cu", "latin1.cu"]
    assert "hipDeviceSynchronize" in (dst / "alias.cu").read_text()
    assert not (dst / "alias.cu").is_symlink()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.cu"]


@pytest.mark.parametrize("case", ["missing", "inside", "same", "version", "launch"])
def test_bad_input_is_one_line_and_exit_2(tmp_path, case):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.cu").write_text("cudaFree(0);\n")
    args = {
        "missing": [str(tmp_path / "nope")],
        "inside": [str(src), "--out", str(src / "hip")],
        "same": [str(src), "--out", str(src)],
        "version": [str(src), "--hip-version", "latest"],
        "launch": [str(src), "--launch", "macro"],
    }[case]
    proc = port_cli(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert not (src / "hip").exists()


def test_single_file_with_hip_launch_kernel_ggl(tmp_path):
    out = tmp_path / "out" / "vector_add.hip.cpp"
    proc = port_cli(str(SAMPLES / "vector_add_streams.cu"), "--out", str(out), "--launch", "ggl")
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert ("hipLaunchKernelGGL(vector_add, dim3(blocks), dim3(threads), 0, streams[s], "
            "d_a + off, d_b + off, d_c + off, chunk);") in text


def test_check_without_hipcc_compiles_nothing(tmp_path):
    report = port(SAMPLES / "vector_add_streams.cu", tmp_path / "v.cu", check=True,
                  toolchain=checking.Toolchain(None, None, None))
    assert report.files[0].check.status == checking.SKIPPED
    assert any("hipcc not found" in n for n in report.notes)


# ---------------------------------------------------------------- --check with real compilers

_UNGUARDED_PTX = """#include <cuda_runtime.h>
__global__ void lane(unsigned* out) {
    unsigned l;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
    out[threadIdx.x] = l;
}
"""
_BROKEN = """#include <cuda_runtime.h>
__global__ void k(float* p) { p[threadIdx.x] = undeclared_name; }
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    if shutil.which("hipcc") is None:
        pytest.skip("hipcc not installed (apt-get install hipcc libhiprand-dev librocrand-dev)")
    base = tmp_path_factory.mktemp("check")
    src = base / "src"
    src.mkdir()
    for name in COMPILED:
        shutil.copy(SAMPLES / name, src / name)
    shutil.copy(SAMPLES / "roc" / "cusparse_spmv.cu", src / "cusparse_spmv.cu")  # hipSPARSE, status stand-in
    shutil.copytree(SAMPLES / "common", src / "common")
    (src / "ptx_unguarded.cu").write_text(_UNGUARDED_PTX)
    (src / "broken.cu").write_text(_BROKEN)
    js = base / "r.json"
    proc = port_cli(str(src), "--out", str(base / "hip"), "--check", "--json", str(js))
    return proc, json.loads(js.read_text())


def test_check_compiles_translated_samples_with_hipcc(checked):
    proc, report = checked
    status = {f["path"]: f["check"]["status"] for f in report["files"]}
    for name in ("vector_add_streams.cu", "warp_reduce.cu", "curand_pi.cu", "inline_ptx.cu", "cusparse_spmv.cu"):
        assert status[name] == "pass", (name, report)
    assert status["common/cuda_check.cuh"] == "skipped"
    # the sample targets the installed hipcc: HIP 5.2 on Debian has no *_sync intrinsics
    hip = checking.hipcc_version(shutil.which("hipcc"))
    assert report["hip_version"] == ".".join(map(str, hip[:2]))
    assert proc.returncode == 1  # a fail-translation (unguarded PTX) is in the tree


def test_check_says_headers_unavailable_for_missing_libraries(checked):
    _, report = checked
    cublas = next(f for f in report["files"] if f["path"] == "cublas_sgemm.cu")
    if Path("/usr/include/hipblas/hipblas.h").exists() or Path("/opt/rocm/include/hipblas/hipblas.h").exists():
        assert cublas["check"]["status"] == "pass"
    else:
        assert cublas["check"]["status"] == "headers unavailable"
        assert "hipblas/hipblas.h" in cublas["check"]["detail"]


def test_check_tells_translation_errors_from_original_errors(checked):
    _, report = checked
    files = {f["path"]: f["check"] for f in report["files"]}
    assert files["ptx_unguarded.cu"]["status"] == "fail-translation"
    if shutil.which("nvcc"):
        assert files["ptx_unguarded.cu"]["detail"] == "hipcc failed but nvcc compiles the original"
        assert files["broken.cu"]["status"] == "fail-original"
        assert "undeclared_name" in files["broken.cu"]["detail"]
    else:
        assert "nvcc not found" in files["broken.cu"]["detail"]


def _checked(tmp_path_factory, name: str, folder: str, *flags: str) -> tuple[dict, Path]:
    if shutil.which("hipcc") is None:
        pytest.skip("hipcc not installed (scripts/system-deps.sh)")
    base = tmp_path_factory.mktemp(name)
    js = base / "r.json"
    proc = port_cli(str(SAMPLES / folder), "--out", str(base / "hip"), "--check", "--json", str(js), *flags)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(js.read_text())
    return {f["path"]: f["check"] for f in report["files"]}, base / "hip"


def test_roc_ports_of_cusparse_and_curand_compile_with_hipcc(tmp_path_factory):
    """--roc output against Debian's rocSPARSE and rocRAND headers (librocsparse-dev,
    librocrand-dev), for the installed hipcc's HIP version."""
    checks, out = _checked(tmp_path_factory, "roc", "roc", "--roc")
    assert checks["cusparse_spmv.cu"]["status"] == "pass", checks["cusparse_spmv.cu"]
    assert checks["curand_host_device.cu"]["status"] == "pass", checks["curand_host_device.cu"]
    # Philox / MRG32k3a device states, MTGP32 set-up without kernel parameters, host generators
    assert checks["curand_generators.cu"]["status"] == "pass", checks["curand_generators.cu"]
    assert "rocrand_make_state_mtgp32(states, mtgp32dc_params_fast_11213, 64, 1234ULL)" in \
        (out / "curand_generators.cu").read_text()
    assert "rocsparse_spmv(" in (out / "cusparse_spmv.cu").read_text()
    assert "rocrand_init(" in (out / "curand_host_device.cu").read_text()
    # Debian has no rocBLAS / rocSOLVER: that file is checked by text (test_port_fidelity.py)
    if not Path("/usr/include/rocblas/rocblas.h").exists():
        assert checks["cublas_cusolver.cu"]["status"] == "headers unavailable"
        assert "rocblas/rocblas.h" in checks["cublas_cusolver.cu"]["detail"]


def test_ggl_launches_and_fidelity_samples_compile_with_hipcc(tmp_path_factory):
    checks, out = _checked(tmp_path_factory, "ggl", "fidelity", "--launch", "ggl")
    # half2_warp.cu: half / half2 shuffles, which HIP before 5.6 (Debian's 5.2) has no overloads for
    for name in ("template_launch.cu", "latin1_no_runtime_include.cu", "symbols_and_branches.cu", "half2_warp.cu"):
        assert checks[name]["status"] == "pass", (name, checks[name])
    assert b"Ren\xe9" in (out / "latin1_no_runtime_include.cu").read_bytes()
    assert "HIP_KERNEL_NAME(scale<float, 2>)" in (out / "template_launch.cu").read_text()


def test_compile_pass_rate_on_a_tree_with_one_file_that_compiles_and_one_that_does_not(tmp_path):
    """The measured figure beside the converted share: hipcc on the translations, nvcc on the
    originals (where installed), in the terminal, JSON and HTML reports."""
    if shutil.which("hipcc") is None:
        pytest.skip("hipcc not installed (scripts/system-deps.sh)")
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(SAMPLES / "vector_add_streams.cu", src / "compiles.cu")
    shutil.copytree(SAMPLES / "common", src / "common")
    (src / "fails.cu").write_text(_UNGUARDED_PTX)  # valid CUDA, inline PTX: the AMD build fails
    js, page = tmp_path / "r.json", tmp_path / "r.html"
    proc = port_cli(str(src), "--out", str(tmp_path / "hip"), "--check", "--json", str(js), "--html", str(page))
    assert proc.returncode == 1, proc.stderr  # a translation failed to compile
    report = json.loads(js.read_text())
    rate = report["summary"]["compile"]
    assert (rate["tried"], rate["passed"], rate["rate"]) == (2, 1, 0.5)
    assert rate["offload_arch"] == "gfx90a" and rate["nvcc_arch"] == "sm_75"
    files = {f["path"]: f["check"] for f in report["files"]}
    assert files["compiles.cu"]["status"] == "pass" and files["fails.cu"]["status"] == "fail-translation"
    hip = checking.hipcc_version(shutil.which("hipcc"))
    assert f"hipcc {'.'.join(map(str, hip))} --offload-arch=gfx90a" in rate["toolchain"]
    if shutil.which("nvcc"):  # the originals both compile with nvcc
        assert (rate["original_tried"], rate["original_passed"]) == (2, 2)
        assert files["fails.cu"]["original"] == "pass" and "-arch=sm_75" in rate["toolchain"]
        assert "originals: 2/2 compile with nvcc" in report["summary"]["compile_text"]
    else:
        assert rate["original_tried"] == 0 and files["fails.cu"]["original"] is None
    lines = proc.stdout.splitlines()
    assert lines[1].startswith("portability score: ")  # the converted share, then the measured rate beside it
    assert lines[2].startswith("compile pass rate: 1/2 translated file(s) compile (50%)")
    html = page.read_text()
    assert "<p class='score' id='compile'>50% compile</p>" in html
    assert "not whether the result is right" in html


def test_compile_rate_counts_only_files_a_compiler_could_try():
    results = [checking.CheckResult(checking.PASS, original="pass"),
               checking.CheckResult(checking.FAIL_ORIGINAL, original="fail"),
               checking.CheckResult(checking.HEADERS_UNAVAILABLE, original="headers unavailable"),
               checking.CheckResult(checking.SKIPPED)]
    rate = checking.compile_rate(results, "hipcc 5.2")
    assert (rate.tried, rate.passed, rate.headers_unavailable) == (2, 1, 1)
    assert (rate.original_tried, rate.original_passed) == (2, 1)
    assert rate.text() == ("1/2 translated file(s) compile (50%); originals: 1/2 compile with nvcc; 1 not compiled "
                           "here (library headers unavailable) [hipcc 5.2]")
    assert checking.compile_rate([]).rate is None and "no translated file" in checking.compile_rate([]).text()


# ---------------------------------------------------------------- bench

def test_port_speed_bench_prints_rate_and_ratio_last(tmp_path):
    """The rates, then (with hipify-perl at hand) the peer's, as it ships and on the same CPUs,
    and the ratios, last."""
    bench = [sys.executable, str(ROOT / "bench" / "port_speed.py"), "--files", "2", "--lines", "200", "--jobs", "2"]
    rates = r"\d+ lines/s \(\d+\.\d\d s\), \d+ lines per CPU-second \(\d+\.\d\d CPU-s\)"
    alone = subprocess.run([*bench, "--perl", str(tmp_path / "none")], capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0, alone.stderr
    assert re.fullmatch(r"port \(2 process\(es\)\): " + rates, alone.stdout.strip().splitlines()[-1])
    proc = subprocess.run(bench, capture_output=True, text=True, timeout=300)
    lines = proc.stdout.strip().splitlines()
    if any(line.startswith("hipify-perl") for line in lines):
        assert re.fullmatch(r"port \(2 process\(es\)\): " + rates, lines[-4])
        assert re.fullmatch(r"hipify-perl \(-quiet-warnings, 1 process\(es\)\): " + rates, lines[-3])
        assert re.fullmatch(r"hipify-perl \(-quiet-warnings, 2 process\(es\)\): " + rates, lines[-2])
        assert re.fullmatch(r"ratio: \d+\.\dx hipify-perl per CPU-second; wall-clock \d+\.\dx hipify-perl as it "
                            r"ships \(one process\), \d+\.\dx on the same 2 CPU\(s\) \(target >= 10x\)", lines[-1])


def test_the_diff_applies_at_its_edges(tmp_path):
    """Hunks that merge and split, no newline at the end on either side, CRLF lines: each diff,
    applied by git, gives the translated text."""
    import random

    from gpuparity.port.run import unified_diff

    rng = random.Random(11)
    cases = [("a\nb", "a\nB"), ("a\nb\n", "a\nb"), ("a\nb", "a\nb\n"), ("x\r\ny\r\n", "X\r\ny\r\n")]
    for _ in range(60):
        old = [f"line {k}" for k in range(rng.randint(1, 30))]
        new = [s + " changed" if rng.random() < 0.2 else s for s in old]
        end_old, end_new = rng.choice(["\n", ""]), rng.choice(["\n", ""])
        cases.append(("\n".join(old) + end_old, "\n".join(new) + end_new))
    for k, (before, after) in enumerate(cases):
        diff = unified_diff("f.cu", before, after)
        if before == after:
            assert diff == ""
            continue
        work = tmp_path / str(k)
        work.mkdir()
        (work / "f.cu").write_bytes(before.encode())
        subprocess.run(["git", "apply", "--unidiff-zero", "-"], cwd=work, input=diff.encode(), check=True)
        assert (work / "f.cu").read_bytes() == after.encode(), (before, after, diff)
