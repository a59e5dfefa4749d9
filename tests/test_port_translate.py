"""CUDA -> HIP translation: tokens, names, headers, argument rewrites, launches, CMake, score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuparity.port import mappings
from gpuparity.port.build_tables import parse_table
from gpuparity.port.cmake import translate_cmake
from gpuparity.port.lexer import _lex_columns, lex, lex_file, lex_python
from gpuparity.port.score import score_uses
from gpuparity.port.tokens import tokenize, tree_sitter_available
from gpuparity.port.translate import Options, translate_source

SAMPLES = Path(__file__).parent / "data" / "cuda_samples"
COMPILED_SAMPLES = ["vector_add_streams.cu", "warp_reduce.cu", "cublas_sgemm.cu", "curand_pi.cu",
                    "inline_ptx.cu"]


ADDED_INCLUDE = "#include <hip/hip_runtime.h>\n"


def tr(text: str, hip: str = "7.0", **kw) -> str:
    """The translation of a fragment, without the runtime #include added to fragments that
    have none (test_runtime_include_is_added_where_needed checks that line)."""
    out = translate_source(text, Options(hip_version=mappings.parse_version(hip), **kw)).text
    if "#include" not in text and out.startswith(ADDED_INCLUDE.rstrip("\n")):
        out = out.split("\n", 1)[1]
    return out


# ---------------------------------------------------------------- mapping data

def test_packaged_table_is_compact_and_attributed():
    data_dir = Path(mappings.__file__).parent / "data"
    size = (data_dir / "hipify_map.json").stat().st_size
    assert 200_000 < size < 3_000_000
    assert "Permission is hereby granted" in (data_dir / "HIPIFY_LICENSE.txt").read_text()
    apis = mappings.load_table()["apis"]
    assert apis["cudaMalloc"]["hip"] == "hipMalloc" and apis["cudaMalloc"]["added"]
    assert apis["cublasSgemm_v2"]["hip"] == "hipblasSgemm"
    assert apis["cudnnCreate"]["hip"] == "miopenCreate"  # cuDNN -> MIOpen column
    assert mappings.load_table()["headers"]["curand_kernel.h"] == "hiprand/hiprand_kernel.h"


def test_build_tables_parses_markdown_rows(tmp_path):
    md = tmp_path / "T.md"
    md.write_text(
        "# T\n\n|**CUDA**|**A**|**D**|**C**|**R**|**HIP**|**A**|**D**|**C**|**R**|**E**|\n"
        "|:--|:-:|:-:|:-:|:-:|:--|:-:|:-:|:-:|:-:|:-:|\n"
        "|`cudaFoo`| | | | |`hipFoo`|1.6.0| | | | |\n"
        "|`cudaBar`|11.0| | | | | | | | | |\n"
        "|`cudaOld`| |10.0| |12.0|`hipOld`|1.6.0|3.0.0| |6.0.0| |\n"
        "|`cudaNew`|12.3| | | |`hipNew`| | | | | |\n")
    rows = parse_table(md, "runtime", "HIP")
    assert rows["cudaFoo"] == {"family": "runtime", "hip": "hipFoo", "added": "1.6.0"}
    assert rows["cudaBar"]["unsupported"] and "hip" not in rows["cudaBar"]
    assert rows["cudaOld"]["removed"] == "6.0.0" and rows["cudaOld"]["cuda_removed"] == "12.0"
    assert rows["cudaNew"]["unsupported"]  # named by HIPIFY, in no released HIP yet


def test_version_gating():
    v52, v70 = mappings.parse_version("5.2"), mappings.parse_version("7.0")
    assert mappings.resolve("cudaMallocAsync", mappings.parse_version("5.1")).supported is False
    assert mappings.resolve("cudaMallocAsync", v52).supported is True
    old = mappings.resolve("__shfl_down_sync", v52)
    assert old.supported and old.legacy == "__shfl_down"
    assert mappings.resolve("__shfl_down_sync", v70).legacy is None
    assert mappings.resolve("__syncwarp", v52).supported is False
    assert mappings.resolve("cudaLaunchKernelEx", v70).supported is False
    with pytest.raises(Exception, match="not a HIP version"):
        mappings.parse_version("latest")


# ---------------------------------------------------------------- tokens

@pytest.mark.skipif(not tree_sitter_available(), reason="tree-sitter-cuda not installed")
@pytest.mark.parametrize("name", COMPILED_SAMPLES + ["common/cuda_check.cuh", "hazards/clean.cu"])
def test_tree_sitter_and_lexer_agree(name):
    text = (SAMPLES / name).read_text()
    ts, engine = tokenize(text, "tree-sitter")
    lx, _ = tokenize(text, "lexer")
    assert engine == "tree-sitter"
    assert ts == lx


# Pieces where lexing is easy to get wrong: directives (with blanks, comments, continuations,
# a header name the code lexer would split), literals with prefixes, raw strings, digit
# separators, launches and template closers, unterminated literals.
_TRICKY = ['#include <cuda.h>', '#include "a.h"', '# define X 1', '#', '##', '<<<', '>>>', '>>', "'", '"', 'u8"x"',
           "L'a'", 'R"(a)"', 'R"x(y)x"', 'uR"(z)"', '/*', '*/', '//', '\\\n', '\n', ' ', '\t', '\f', 'a', 'cudaMalloc',
           "1'000", '.5', '...', '..', '0x1fu', '$x', 'x$', '->*', '::', '<=>', '/=', '#if', '#  include<x.h>',
           '#include<<<a>', '\r\n', 'x"y"', "'\\\n'", '#define$', '#\fdefine', '\u00e9', '(', ')', ',', ';', '{', '}',
           '#import "q"', '#include /*c*/ <a>', '#include <a/*b>', '/*\n#x\n*/', 'a<b<c<int>>> x;', 'k<<<1, 2>>>(p);']


def test_the_whole_file_lexers_give_the_per_token_lexers_tokens():
    """The Python whole-file lexer (run where the compiled one was not built) and lex (compiled
    where built) give lex_python's tokens."""
    import random

    rng = random.Random(7)
    decided = 0
    for _ in range(3000):
        text = "".join(rng.choice(_TRICKY) for _ in range(rng.randint(1, 30)))
        reference = lex_python(text)
        assert lex(text) == reference, repr(text)
        assert lex_file(text) == reference, repr(text)
        fast = _lex_columns(text)
        if fast is not None:  # None: it defers to lex
            decided += 1
            assert fast[0] == reference, repr(text)
    assert decided > 2000
    for name in COMPILED_SAMPLES + ["common/cuda_check.cuh", "hazards/clean.cu"]:
        text = (SAMPLES / name).read_text()
        assert lex_file(text) == lex_python(text) == _lex_columns(text)[0]


def test_auto_asks_tree_sitter_only_where_the_lexer_guessed():
    from gpuparity.port.tokens import _guessed

    def guessed(text: str) -> bool:
        toks = lex(text)
        return _guessed([t.kind for t in toks], [t.text for t in toks])

    closed = 'const char* s = "a\\"b"; char c = \'\\\'\'; /* c */ auto r = R"(x")"; // end\n'
    assert not guessed(closed)
    for cut in ('const char* s = "a\\";\n', "char c = 'x;\n", "int x; /* never closed\n"):
        assert guessed(cut), cut
    assert tokenize(closed)[1] == "lexer"


def test_broken_code_falls_back_to_lexer():
    text = "__global__ void __cluster_dims__(2, 1, 1) k(float* p) { cudaMalloc(&p, 4); }\n"
    _, engine = tokenize(text)
    assert engine == "lexer"
    assert "hipMalloc(&p, 4)" in tr(text)


# ---------------------------------------------------------------- names, comments, strings

def test_comments_raw_strings_and_partial_names_are_untouched():
    src = ('// cudaMalloc in a comment\n'
           '/* cudaFree(p); */\n'
           'const char* s = "cudaMalloc(&p, n) failed: mycudaMalloc cudaNoSuchCall";\n'
           "char c = 'x';\n"
           'auto r = R"(cudaStream_t in a raw string)";\n'
           'void mycudaMalloc(); int cudaMallocCount = 0;\n'
           'cudaStream_t s2; cudaStreamCreate(&s2);\n'
           '#pragma message("cudaMalloc stays")\n')
    out = tr(src)
    lines, before = out.splitlines(), src.splitlines()
    assert lines[:2] == before[:2] and lines[3:5] == before[3:5] and lines[-1] == before[-1]
    # API names in a string are the HIP call's (HIPIFY's messages); other words stay
    assert lines[2] == 'const char* s = "hipMalloc(&p, n) failed: mycudaMalloc cudaNoSuchCall";'
    assert "mycudaMalloc(); int cudaMallocCount" in out
    assert "hipStream_t s2; hipStreamCreate(&s2);" in out


def test_members_namespaces_and_user_macros_are_not_renamed():
    src = ("struct P { int cudaMalloc; };\n"
           "void f(P p, P* q) { p.cudaMalloc = 1; q->cudaMalloc = 2; mylib::cudaFree(0); ::cudaFree(0); }\n"
           "#define cudaDeviceReset my_reset\n"
           "void g() { cudaDeviceReset(); }\n")
    out = tr(src)
    assert "p.cudaMalloc = 1; q->cudaMalloc = 2; mylib::cudaFree(0); ::hipFree(0);" in out
    assert "#define cudaDeviceReset my_reset" in out
    assert "void g() { cudaDeviceReset(); }" in out


def test_preprocessor_lines():
    src = ("#include <cuda_runtime.h>\n"
           '#include "cublas_v2.h"\n'
           "#include <curand_kernel.h>\n"
           "#include <cub/cub.cuh>\n"
           "#include <thrust/device_vector.h>\n"
           '#include "my_kernels.cuh"\n'
           "#pragma message(\"cudaMalloc stays\")\n"
           "#error cudaMalloc stays too\n"
           "#ifdef __CUDACC__\n"
           "#define ALLOC(p, n) cudaMalloc(p, n) /* cudaMalloc */\n"
           "#endif\n")
    out = tr(src).splitlines()
    assert out[0] == "#include <hip/hip_runtime.h>"
    assert out[1] == '#include "hipblas.h"'  # HIPIFY's name (the folder layout: test_port_fidelity)
    assert out[2] == "#include <hiprand/hiprand_kernel.h>"
    assert out[3] == "#include <hipcub/hipcub.hpp>"
    assert out[4] == "#include <thrust/device_vector.h>"
    assert out[5] == '#include "my_kernels.cuh"'
    assert out[6:8] == ['#pragma message("cudaMalloc stays")', "#error cudaMalloc stays too"]
    assert out[8] == "#ifdef __HIPCC__"
    assert out[9] == "#define ALLOC(p, n) hipMalloc(p, n) /* cudaMalloc */"


def test_macro_continuation_columns_are_kept():
    text = (SAMPLES / "common" / "cuda_check.cuh").read_text()
    out = tr(text)
    cols = {line.rindex("\\") for line in out.splitlines() if line.endswith("\\")}
    assert len(cols) == 1
    assert '"CUDA error %s at %s:%d (see hipGetLastError)\\n"' in out  # the message names the HIP call


def test_crlf_and_non_ascii_survive():
    src = "// µs timing — cudaEvent_t\r\ncudaEvent_t e; /* größe */ cudaEventCreate(&e);\r\n"
    out = tr(src)
    assert out == "// µs timing — cudaEvent_t\r\nhipEvent_t e; /* größe */ hipEventCreate(&e);\r\n"


# ---------------------------------------------------------------- argument rewrites

def test_host_malloc_symbol_and_function_arguments():
    src = ("__constant__ float c[4];\n"
           "__global__ void k(float*);\n"
           "void f(float* h) {\n"
           "  cudaMallocHost(&h, 64);\n"
           "  cudaMallocHost((void**)&h, 64 * sizeof(float));\n"
           "  cudaMemcpyToSymbol(c, h, 16);\n"
           "  cudaMemcpyFromSymbol(h, c, 16);\n"
           "  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 4096);\n"
           "}\n")
    out = tr(src)
    assert "hipHostMalloc(&h, 64, hipHostMallocDefault);" in out
    assert "hipHostMalloc((void**)&h, 64 * sizeof(float), hipHostMallocDefault);" in out
    assert "hipMemcpyToSymbol(HIP_SYMBOL(c), h, 16);" in out
    assert "hipMemcpyFromSymbol(h, HIP_SYMBOL(c), 16);" in out
    assert ("hipFuncSetAttribute(reinterpret_cast<const void*>(k), "
            "hipFuncAttributeMaxDynamicSharedMemorySize, 4096);") in out


def test_warp_sync_intrinsics_follow_the_target_version():
    src = ("__device__ float f(float v, int p) {\n"
           "  v += __shfl_down_sync(0xffffffff, v, 1);\n"
           "  v += __shfl_sync(0xffffffffu, v, 0, 16);\n"
           "  unsigned long long b = __ballot_sync(__activemask(), p);\n"
           "  return v + __any_sync(0xffffffff, p) + __all_sync(0xffffffff, p) + b;\n"
           "}\n")
    old = tr(src, "5.2")
    assert "v += __shfl_down(v, 1);" in old
    assert "v += __shfl(v, 0, 16);" in old
    assert "b = __ballot(p);" in old
    assert "__any(p) + __all(p)" in old
    new = tr(src, "7.0")
    assert "__shfl_down_sync(0xffffffffffffffffull, v, 1)" in new
    assert "__shfl_sync(0xffffffffffffffffull, v, 0, 16)" in new
    assert "__ballot_sync(__activemask(), p)" in new
    assert tr("unsigned m = __activemask();", "6.1") == "unsigned m = __ballot(1);"


def test_namespaces_cub_and_thrust():
    src = ("cub::DeviceReduce::Sum(tmp, bytes, in, out, n);\n"
           "thrust::sort(thrust::cuda::par.on(s), v.begin(), v.end());\n"
           "thrust::device_vector<int> v;\n")
    out = tr(src)
    assert "hipcub::DeviceReduce::Sum(tmp, bytes, in, out, n);" in out
    assert "thrust::sort(thrust::hip::par.on(s), v.begin(), v.end());" in out
    assert "thrust::device_vector<int> v;" in out


# ---------------------------------------------------------------- kernel launches

def test_launches_keep_chevrons_by_default():
    src = "void f(float* p, cudaStream_t s) { k<<<g, b, 0, s>>>(p); }\n"
    assert tr(src) == "void f(float* p, hipStream_t s) { k<<<g, b, 0, s>>>(p); }\n"


def test_launches_to_hip_launch_kernel_ggl():
    src = ("void f(float* p, int n, cudaStream_t s) {\n"
           "  k<<<(n + 255) / 256, 256>>>(p, n);\n"
           "  tk<float, 4><<<dim3(2, 2), dim3(16, 16), 1024, s>>>(p);\n"
           "  ns::noargs<<<1, 1>>>();\n"
           "  std::vector<std::vector<int>> not_a_launch;\n"
           "}\n")
    out = tr(src, launch="ggl")
    assert "hipLaunchKernelGGL(k, dim3((n + 255) / 256), dim3(256), 0, 0, p, n);" in out
    assert "hipLaunchKernelGGL(HIP_KERNEL_NAME(tk<float, 4>), dim3(2, 2), dim3(16, 16), 1024, s, p);" in out
    assert "hipLaunchKernelGGL(ns::noargs, dim3(1), dim3(1), 0, 0);" in out
    assert "std::vector<std::vector<int>> not_a_launch;" in out


# ---------------------------------------------------------------- samples and score

@pytest.mark.parametrize("name", COMPILED_SAMPLES)
def test_samples_translate_fully(name):
    text = (SAMPLES / name).read_text()
    result = translate_source(text, Options(hip_version=mappings.parse_version("5.2")))
    code = [t.text for t in tokenize(result.text)[0] if t.kind == "id"]
    leftovers = [c for c in code if mappings.lookup(c) and not mappings.lookup(c).get("hip") == c]
    assert leftovers == []
    assert "#include <hip/hip_runtime.h>" in result.text
    score = score_uses(result.uses)
    assert score.uses > 5 and score.value == 1.0


def test_score_counts_occurrences_and_lists_unsupported():
    src = ("void f() {\n"
           "  cudaMalloc(0, 0); cudaMalloc(0, 0); cudaMalloc(0, 0);\n"
           "  cudaDeviceFlushGPUDirectRDMAWrites(0, 0);\n"  # no HIP equivalent in the tables
           "  float x = sinf(1.0f);\n"  # a C math name: not counted
           "}\n")
    result = translate_source(src)
    score = score_uses(result.uses)
    assert (score.uses, score.supported) == (4, 3)
    assert score.value == pytest.approx(0.75)
    bad = [u for u in result.uses if not u.supported]
    assert [(u.name, u.line, u.reason) for u in bad] == [
        ("cudaDeviceFlushGPUDirectRDMAWrites", 3, "no HIP equivalent")]


def test_cmake_translation():
    out = translate_cmake((SAMPLES / "CMakeLists.txt").read_text())
    text = out.text
    assert "project(cuda_samples LANGUAGES CXX HIP)" in text
    assert "enable_language(HIP)" in text and "enable_language(CUDA)" not in text
    assert "find_package(hip REQUIRED)" in text and "find_package(hipblas REQUIRED)" in text
    assert "CUDA::" not in text
    assert "roc::hipblas" in text and "hip::host" in text and "hip::hiprand" in text
    assert "set(CMAKE_HIP_ARCHITECTURES gfx90a;gfx942)" in text
    assert "set_source_files_properties(vector_add_streams.cu PROPERTIES LANGUAGE HIP)" in text
    assert "set_source_files_properties(warp_reduce.cu inline_ptx.cu PROPERTIES LANGUAGE HIP)" in text
    # comments and string text stay; ${VAR} references inside strings are code
    assert '# Builds the CUDA samples. "CUDA" inside this string and comment stays as written.' in text
    assert 'message(STATUS "CUDA samples configured with ${CMAKE_HIP_FLAGS}")' in text
    assert score_uses(out.uses).value == 1.0


def test_cmake_unsupported_parts_are_counted():
    out = translate_cmake("find_package(CUDA)\nset_target_properties(t PROPERTIES CUDA_SEPARABLE_COMPILATION ON)\n"
                          "target_link_libraries(t CUDA::cupti cublas)\n")
    assert "find_package(hip)" in out.text and "roc::hipblas" in out.text
    bad = sorted(u.name for u in out.uses if not u.supported)
    assert bad == ["CUDA::cupti", "CUDA_SEPARABLE_COMPILATION"]


def test_json_table_round_trip_is_valid():
    raw = (Path(mappings.__file__).parent / "data" / "hipify_map.json").read_text()
    data = json.loads(raw)
    assert set(data) >= {"apis", "headers", "about"}
