"""`gpuparity port` with hostile trees: hard links into the sources, unreadable entries, file
names that are not UTF-8 or carry terminal escapes, and fuzzed bytes and trees."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_port_cli import SAMPLES, port_cli

from gpuparity.port.run import port
from gpuparity.port.translate import translate_source
from gpuparity.port.walk import SourceFile, decode_source, find_sources, read_source, shown

FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def digest_tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- hard links

def test_hard_linked_destination_leaves_sources_byte_identical(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    shutil.copytree(SAMPLES, src)
    subprocess.run(["cp", "-al", str(src), str(dst)], check=True)
    assert os.stat(src / "vector_add_streams.cu").st_ino == os.stat(dst / "vector_add_streams.cu").st_ino
    before = digest_tree(src)
    proc = port_cli(str(src), "--out", str(dst), "-q")
    assert proc.returncode == 0, proc.stderr
    assert digest_tree(src) == before  # not one source byte changed
    assert "hipMalloc" in (dst / "vector_add_streams.cu").read_text()
    assert os.stat(src / "vector_add_streams.cu").st_ino != os.stat(dst / "vector_add_streams.cu").st_ino
    assert "cudaMalloc(" in (src / "vector_add_streams.cu").read_text()
    assert not [p for p in dst.rglob("*.tmp")]  # no temporary file left behind


def test_written_files_get_normal_permissions(tmp_path):
    out = tmp_path / "hip"
    port(SAMPLES / "vector_add_streams.cu", out / "v.cu")
    mode = stat.S_IMODE((out / "v.cu").stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


# ---------------------------------------------------------------- unreadable entries

def _without_root_powers(args: list[str]) -> list[str]:
    """Root reads anything: drop the capabilities that let it, so permissions really apply."""
    if os.geteuid() != 0:
        return args
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permissions cannot be tested")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--", *args]


def _port_cli_args(*args: str) -> list[str]:
    import sys
    return [sys.executable, "-c", "import sys; from gpuparity.cli import main; main.VERBS[:] = ['port']; "
            "main.main(sys.argv[1:])", "port", *args]


@pytest.fixture
def locked_tree(tmp_path):
    src = tmp_path / "src"
    (src / "open").mkdir(parents=True)
    (src / "open" / "ok.cu").write_text("cudaStream_t s;\n")
    (src / "locked_dir").mkdir()
    (src / "locked_dir" / "hidden.cu").write_text("cudaStream_t s;\n")
    (src / "locked.cu").write_text("cudaStream_t s;\n")
    (src / "locked_dir").chmod(0)
    (src / "locked.cu").chmod(0)
    yield src
    (src / "locked_dir").chmod(0o755)
    (src / "locked.cu").chmod(0o644)


def test_unreadable_entries_are_listed_with_the_reason(locked_tree, tmp_path):
    js = tmp_path / "r.json"
    cmd = _without_root_powers(_port_cli_args(str(locked_tree), "--out", str(tmp_path / "dst"), "--json", str(js)))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    skipped = {s["path"]: s["reason"] for s in json.loads(js.read_text())["skipped"]}
    assert skipped["locked_dir/"] == "unreadable folder: Permission denied"
    assert skipped["locked.cu"] == "unreadable: Permission denied"
    assert "skipped locked_dir/: unreadable folder: Permission denied" in proc.stdout
    assert (tmp_path / "dst" / "open" / "ok.cu").read_text() == "#include <hip/hip_runtime.h>\nhipStream_t s;\n"


def test_permission_errors_are_one_line_not_a_traceback(locked_tree, tmp_path):
    inside = locked_tree / "locked_dir" / "hidden.cu"  # SRC under a folder we may not enter
    cmd = _without_root_powers(_port_cli_args(str(inside)))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Permission denied" in lines[0], proc.stderr
    readonly = tmp_path / "ro"
    readonly.mkdir()
    readonly.chmod(0o555)
    try:
        cmd = _without_root_powers(_port_cli_args(str(locked_tree / "open"), "--out", str(readonly / "sub")))
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        readonly.chmod(0o755)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("error: cannot create DST")


# ---------------------------------------------------------------- file names

def test_file_names_that_are_not_utf8_or_carry_escapes(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    latin1 = os.fsdecode(b"caf\xe9.cu")
    evil = "evil\x1b[31m\nname.cu"
    (src / latin1).write_text("cudaStream_t s;\n")
    (src / evil).write_text("__global__ void k(int* o) { o[threadIdx.x & 31] = 1; }\n")
    js, page = tmp_path / "r.json", tmp_path / "r.html"
    proc = port_cli(str(src), "--out", str(dst), "--json", str(js), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "caf\\xe9.cu" in proc.stdout
    assert "evil\\x1b[31m\\nname.cu" in proc.stdout  # escaped, on one line
    report = json.loads(js.read_text(encoding="utf-8"))
    assert {f["path"] for f in report["files"]} == {"caf\\xe9.cu", "evil\x1b[31m\nname.cu"}
    html = page.read_text(encoding="utf-8")
    assert "caf\\xe9.cu" in html and "\x1b" not in html.replace("\\x1b", "")
    assert os.path.exists(os.path.join(os.fsencode(dst), b"caf\xe9.cu"))  # written under its real name
    assert (dst / evil).read_text().startswith("#include <hip/hip_runtime.h>")


def test_shown_keeps_text_and_escapes_undecodable_bytes():
    assert shown("plain.cu") == "plain.cu"
    assert shown("größe.cu") == "größe.cu"
    assert shown(os.fsdecode(b"caf\xe9.cu")) == "caf\\xe9.cu"


# ---------------------------------------------------------------- fuzz: decoding, reading, walking

@FUZZ
@given(st.binary(max_size=600))
def test_any_bytes_decode_translate_and_keep_their_lines(data):
    text = decode_source(data)
    assert text.encode("utf-8", "surrogateescape") == data
    out = translate_source(text).text
    out.encode("utf-8", "surrogateescape")  # writable back as bytes
    added = out.count("#include <hip/hip_runtime.h>") - text.count("#include <hip/hip_runtime.h>")
    assert out.count("\n") == text.count("\n") + max(0, added)


_C_PIECES = st.sampled_from([
    "cudaMalloc(&p, 4);", "k<<<g, b>>>(x);", "#define L k<<<1, 1>>>()\n", "\n", " ", "/* c */", "// x\n",
    '"s"', "'c'", "::cub::", "cub::X", "template<int N>", "<", ">", ">>>", "<<<", "(", ")", ",", "\\\n",
    "#if 0\n", "#endif\n", "__shfl_sync(0xffffffff, v, 1)", "cusparseSpMV(h, a)", "\xe9", "\udce9",
])


@FUZZ
@given(st.lists(_C_PIECES, max_size=40), st.booleans(), st.booleans())
def test_translation_never_fails_on_cuda_like_text(pieces, ggl, roc):
    from gpuparity.port.translate import Options

    text = "".join(pieces)
    out = translate_source(text, Options(launch="ggl" if ggl else "chevron", roc=roc)).text
    assert isinstance(out, str)


@FUZZ
@given(st.binary(max_size=300), st.sampled_from(["a.cu", "b.cpp", "CMakeLists.txt", "n.md", "x.h"]))
def test_read_source_gives_a_file_or_a_reason(tmp_path, data, name):
    path = tmp_path / name
    path.write_bytes(data)
    got = read_source(path, name, str(tmp_path))
    if isinstance(got, SourceFile):
        assert got.text.encode("utf-8", "surrogateescape") == data
    else:
        assert got.reason


_NAME = st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\0" not in b)


@FUZZ
@given(st.lists(st.tuples(st.booleans(), _NAME, st.binary(max_size=80)), max_size=8, unique_by=lambda e: e[1]))
def test_walking_any_tree_lists_every_entry(tmp_path_factory, entries):
    """Names of any bytes (folders end in .d, files in .cu, so they never collide): every
    file is ported or skipped with a reason, and the reports can name it."""
    root = tmp_path_factory.mktemp("tree")
    expected = set()
    for is_dir, raw, data in entries:
        if is_dir:
            folder = os.path.join(os.fsencode(root), raw + b".d")
            os.mkdir(folder)
            path, rel = os.path.join(folder, b"in.cu"), raw + b".d/in.cu"
        else:
            path, rel = os.path.join(os.fsencode(root), raw + b".cu"), raw + b".cu"
        with open(path, "wb") as fh:
            fh.write(data)
        expected.add(os.fsdecode(rel))
    files, skips = find_sources(root)
    assert {f.rel for f in files} | {s.rel for s in skips} == expected
    report = port(root, tmp_path_factory.mktemp("out") / "dst")
    assert len(report.files) == len(files)
    from gpuparity.port import report as reporting

    json.dumps(reporting.to_dict(report)).encode("utf-8")
    reporting.to_html(report).encode("utf-8")


# ---------------------------------------------------------------- --check: names are never run

_HOSTILE = ("$(touch PWNED).cu", ";touch X;.cu", "`touch BT`.cu", "sub dir/$(touch NESTED)/k.cu",
            # run from any folder (a private one since removed too), these still leave a mark where the test looks
            "$(touch ${GP_MARK}1).cu", ";touch ${GP_MARK}2;.cu", "`touch ${GP_MARK}3`.cu")
_UNIT = ('#include <cuda_runtime.h>\n#include "common.cuh"\n__global__ void k(float* p) { p[0] = ONE; }\n'
         "int main() { float* d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); return cudaDeviceSynchronize() != 0; }\n")


def test_check_runs_nothing_named_in_file_names_and_leaves_the_tree_byte_identical(tmp_path, monkeypatch):
    """hipcc and nvcc pass their arguments through a shell: --check compiles copies under generated
    names in a private folder (the compilers' working folder too), so these names create nothing."""
    src, out, cwd = tmp_path / "src", tmp_path / "out", tmp_path / "cwd"
    for name in _HOSTILE:
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_UNIT)
        (path.parent / "common.cuh").write_text("#pragma once\n#define ONE 1.0f\n")  # found beside the unit
    cwd.mkdir()
    mark = tmp_path / "mark"
    mark.mkdir()

    def tree() -> tuple:         # every entry (folders too), its mode and the bytes of each file
        return (digest_tree(src), sorted((p.relative_to(src).as_posix(), p.lstat().st_mode) for p in src.rglob("*")))

    before = tree()
    report = tmp_path / "r.json"
    monkeypatch.setenv("GP_MARK", str(mark / "RAN"))
    proc = port_cli(str(src), "--out", str(out), "--check", "--json", str(report), "-q", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    created = [p for p in tmp_path.rglob("*") if p.name in ("PWNED", "X", "BT", "NESTED")]
    assert created == [] and tree() == before and list(mark.iterdir()) == []
    files = {f["path"]: f for f in json.loads(report.read_text())["files"]}
    units = [n for n in _HOSTILE]
    assert set(units) <= set(files)
    if shutil.which("hipcc"):  # compiled for real, and named in the report as the tree names them
        assert all(files[n]["check"]["status"] == "pass" for n in units), files
    if shutil.which("nvcc"):
        assert all(files[n]["check"]["original"] == "pass" for n in units)
    if shutil.which("hipcc"):  # a failure's message names the tree's file, not the generated copy
        (src / "bad $(touch BAD).cu").write_text("__global__ void k() { undefined_call(); }\n")
        proc = port_cli(str(src), "--out", str(tmp_path / "out2"), "--check", "--json", str(report), "-q", cwd=cwd)
        bad = next(f for f in json.loads(report.read_text())["files"] if f["path"] == "bad $(touch BAD).cu")
        assert bad["check"]["status"] != "pass" and "bad $(touch BAD).cu" in bad["check"]["error"]
        assert "unit.hip" not in bad["check"]["error"] and not list(tmp_path.rglob("BAD"))
