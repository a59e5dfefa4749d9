"""Whole-file fidelity and the --roc path, on this project's own CUDA files (text checks; the
compile checks with Debian's hipcc are in test_port_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuparity.port import mappings
from gpuparity.port.status_strings import status_string_lambda
from gpuparity.port.tokens import tokenize, tree_sitter_available
from gpuparity.port.translate import Options, translate_source
from gpuparity.port.walk import decode_source

SAMPLES = Path(__file__).parent / "data" / "cuda_samples"
V52, V70 = mappings.parse_version("5.2"), mappings.parse_version("7.0")


def port_text(name: str, hip=V70, **kw):
    text = decode_source((SAMPLES / name).read_bytes())
    return translate_source(text, Options(hip_version=hip, **kw))


def unsupported(result) -> dict[str, str]:
    return {u.name: u.reason for u in result.uses if not u.supported}


# ---------------------------------------------------------------- launches (--launch ggl)

def test_template_kernels_and_launch_shapes_with_ggl():
    result = port_text("fidelity/template_launch.cu", launch="ggl")
    out = result.text
    assert ("hipLaunchKernelGGL(HIP_KERNEL_NAME(scale<float, 2>), dim3((n + 255) / 256, 1, 1), dim3(256), 0, "
            "stream, d, n);") in out
    assert "hipLaunchKernelGGL(::touch, dim3(1), dim3(32), 0, 0, d);" in out  # not ::hipLaunchKernelGGL
    assert "hipLaunchKernelGGL(kernels::fill, dim3(4), dim3(256), 0, stream, d, 1.0f, n);" in out
    assert "dim3(dim3" not in out  # sizes already dim3(...) are not wrapped again
    # launches inside macros, one-line and continued
    assert ("#define LAUNCH_FILL(ptr, n) hipLaunchKernelGGL(kernels::fill, dim3(((n) + 255) / 256), dim3(256), "
            "0, 0, ptr, 2.0f, n)") in out
    assert "    hipLaunchKernelGGL(HIP_KERNEL_NAME(scale<float, 3>), dim3(((n) + 127) / 128), dim3(128), 0, 0, ptr, n)" \
        in out
    assert "<<<" not in out
    assert len([w for w in result.rewrites if "hipLaunchKernelGGL" in w.what]) == 5


def test_chevron_launches_in_macros_count_as_launches():
    result = port_text("fidelity/template_launch.cu")
    assert sum(u.family == "launch" for u in result.uses) == 5
    assert "kernels::fill<<<((n) + 255) / 256, 256>>>(ptr, 2.0f, n)" in result.text


# ---------------------------------------------------------------- includes and bytes

def test_runtime_include_is_added_where_needed_and_latin1_bytes_survive():
    raw = (SAMPLES / "fidelity" / "latin1_no_runtime_include.cu").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")  # the sample really is not UTF-8
    result = port_text("fidelity/latin1_no_runtime_include.cu", launch="ggl")
    out = result.text.encode("utf-8", "surrogateescape")
    assert out.startswith(raw.split(b"\n")[0] + b"\n" + raw.split(b"\n")[1] + b"\n#include <hip/hip_runtime.h>\n"
                          b"#include <cstdio>\n")
    assert b"Ren\xe9 Fran\xe7ois" in out  # the Latin-1 bytes, as they were
    assert b"hipError_t err = hipMalloc(&d, n * sizeof(float));" in out
    assert b"hipLaunchKernelGGL(scale, dim3(1), dim3(n), 0, 0, d, 2.0f, n);" in out
    assert any("added #include <hip/hip_runtime.h>" in w.what for w in result.rewrites)


@pytest.mark.skipif(not tree_sitter_available(), reason="tree-sitter-cuda not installed")
def test_non_utf8_text_keeps_the_tree_sitter_engine_and_offsets():
    text = decode_source(b"// \xff\xfe caf\xe9\ncudaStream_t s; /* \xe9 */ cudaStreamCreate(&s);\n")
    tokens, engine = tokenize(text, "tree-sitter")
    assert engine == "tree-sitter"
    assert tokens == tokenize(text, "lexer")[0] == tokenize(text)[0]
    assert translate_source(text).text.endswith("hipStream_t s; /* \udce9 */ hipStreamCreate(&s);\n")


def test_no_runtime_include_where_the_runtime_is_already_there_or_nothing_changes():
    assert translate_source("#include <cuda_runtime.h>\ncudaStream_t s;\n").text.count("hip_runtime.h") == 1
    assert translate_source('#include "hip/hip_runtime.h"\ncudaStream_t s;\n').text.count("hip_runtime.h") == 1
    assert translate_source("int plain(int x) { return x + 1; }\n").text == "int plain(int x) { return x + 1; }\n"
    c_file = translate_source("cudaStream_t s;\n", c_only=True)  # C compilers cannot take hip_runtime.h
    assert c_file.text == "hipStream_t s;\n"
    pragma = translate_source("#pragma once\ncudaStream_t s;\n").text
    assert pragma == "#pragma once\n#include <hip/hip_runtime.h>\nhipStream_t s;\n"


def test_headers_in_both_layouts_math_constants_and_version():
    src = ('#include "cublas_v2.h"\n#include <cusparse.h>\n#include <cusolverDn.h>\n#include <curand.h>\n'
           "#include <math_constants.h>\nfloat x = CUDART_PI_F;\n")
    out = translate_source(src).text  # HIPIFY's names
    assert '"hipblas.h"' in out and "<hipsparse.h>" in out and "<hipsolver.h>" in out and "<hiprand/hiprand.h>" in out
    assert "<hip/hip_math_constants.h>" in out and "HIP_PI_F" in out
    folder = translate_source(src, Options(headers="folder")).text  # the libraries' own folders
    assert '"hipblas/hipblas.h"' in folder and "<hipsparse/hipsparse.h>" in folder
    assert "<hipsolver/hipsolver.h>" in folder and "<hiprand/hiprand.h>" in folder
    roc = translate_source(src, Options(roc=True)).text
    assert '"rocblas.h"' in roc and "<rocsparse.h>" in roc and "<rocsolver/rocsolver.h>" in roc
    old = translate_source("#include <math_constants.h>\n#include <cusparse.h>\n",
                           Options(hip_version=mappings.parse_version("5.1")))
    assert "<hipsparse.h>" in old.text  # before ROCm 5.2's per-library folders
    assert unsupported(old)["<math_constants.h>"] == "hip/hip_math_constants.h needs HIP 5.3 (target 5.1)"


# ---------------------------------------------------------------- symbols, branches, namespaces, legacy

def test_symbols_are_wrapped_in_copy_and_graph_calls():
    out = port_text("fidelity/symbols_and_branches.cu").text
    assert "hipMemcpyToSymbol(HIP_SYMBOL(table), host, sizeof(float) * 16);" in out
    assert "hipGraphAddMemcpyNodeToSymbol(&node, graph, nullptr, 0, HIP_SYMBOL(result), host," in out
    assert "hipGraphMemcpyNodeSetParamsFromSymbol(node, back, HIP_SYMBOL(result), sizeof(float) * 16" in out
    assert "HIP_SYMBOL(HIP_SYMBOL" not in translate_source(out).text  # a second pass changes nothing


def test_calls_whose_arguments_move():
    src = ("#include <cudnn.h>\nvoid f(cudnnHandle_t h, cudnnTensorDescriptor_t d, float* x, float* y) {\n"
           "  float a = 1, b = 0;\n"
           "  cudnnSoftmaxForward(h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &a, d, x, &b, d, y);\n}\n")
    result = translate_source(src)
    assert ("miopenSoftmaxForward_V2(h, &a, d, x, &b, d, y, MIOPEN_SOFTMAX_ACCURATE, MIOPEN_SOFTMAX_MODE_CHANNEL);"
            in result.text)
    assert any("MIOpen order" in w.what for w in result.rewrites)


def test_inactive_branches_translate_like_active_code():
    out = port_text("fidelity/symbols_and_branches.cu").text
    head, rest = out.split("#if defined(USE_ASYNC_COPY)\n")
    inactive, active = rest.split("#else\n")
    active = active.split("#endif")[0]
    assert inactive == active and "hipMemcpyFromSymbolAsync(back, HIP_SYMBOL(table)" in active


def test_cub_namespaces_and_cublas_v1_legacy():
    result = port_text("fidelity/legacy_and_libraries.cu")
    out = result.text
    assert "using namespace hipcub;" in out
    assert "::hipcub::DeviceReduce::Sum(tmp, bytes, in, out, n);" in out
    assert "hipcub::DeviceReduce::Max(tmp, bytes, in, out, n);" in out
    assert "#include <hipcub/hipcub.hpp>" in out
    # v1 calls take no handle: each gets the file's handle (the prelude after the cuBLAS include)
    assert '#include "hipblas.h"\n#ifndef GPUPARITY_BLAS_V1\n' in out
    assert ("[&]() { const float s0_ = (2.0f); gpuparity_v1_status(hipblasSscal(gpuparity_v1_handle(), n, &s0_, "
            "devPtr, 1)); }();") in out
    assert "hipblasStatus_t stat = (hipMalloc((void**)" in out and "HIPBLAS_STATUS_SUCCESS" in out
    assert "return gpuparity_v1_get_error() == HIPBLAS_STATUS_SUCCESS ? 0 : 1;" in out
    assert unsupported(result) == {}
    # with the v2 header, the same name is the handle API and ports by name
    v2 = translate_source("#include <cublas_v2.h>\nvoid f(cublasHandle_t h) { cublasSscal(h, 1, a, x, 1); }\n")
    assert "hipblasSscal(h, 1, a, x, 1)" in v2.text and "GPUPARITY_BLAS_V1" not in v2.text


def test_every_table_type_enum_and_macro_is_mapped():
    """Each row of HIPIFY's tables with a HIP name is in the packaged map with that name."""
    apis = mappings.load_table()["apis"]
    for name in ("cudaStreamCaptureModeGlobal", "CUDART_PI", "CUB_PTX_WARP_THREADS", "cusparseSpMatDescr_t",
                 "CURAND_RNG_PSEUDO_MRG32K3A", "CUFFT_R2C", "cudnnTensorDescriptor_t", "NVRTC_SUCCESS",
                 "cuComplex", "CUBLAS_GEMM_DEFAULT"):
        assert apis[name].get("hip"), name
    out = translate_source("int w = CUB_PTX_WARP_THREADS; cudaStreamCaptureMode m = cudaStreamCaptureModeGlobal;\n")
    assert "HIPCUB_WARP_THREADS" in out.text and "hipStreamCaptureModeGlobal" in out.text


# ---------------------------------------------------------------- HIP version awareness

def test_status_string_stand_in_for_targets_without_it():
    src = "#include <cusparse.h>\nconst char* m(cusparseStatus_t s) { return cusparseGetErrorString(s); }\n"
    new = translate_source(src, Options(hip_version=V70)).text
    assert "return hipsparseGetErrorString(s);" in new
    old = translate_source(src, Options(hip_version=V52))
    assert "return [](hipsparseStatus_t status_) -> const char* { switch (status_) { case " in old.text
    assert 'case HIPSPARSE_STATUS_SUCCESS: return "HIPSPARSE_STATUS_SUCCESS";' in old.text
    assert old.text.rstrip().endswith('default: return "unknown hipSPARSE status"; } }(s); }')
    assert "cusparseGetErrorString" not in unsupported(old)
    assert any("inline switch" in w.what for w in old.rewrites)
    # only enumerators the target has: HIPSPARSE_STATUS_NOT_SUPPORTED came with HIP 4.1
    assert "HIPSPARSE_STATUS_NOT_SUPPORTED" not in status_string_lambda("cusparseGetErrorString", (4, 0, 0), False)
    assert "HIPSPARSE_STATUS_NOT_SUPPORTED" in status_string_lambda("cusparseGetErrorString", V52, False)


def test_warp_sync_and_data_types_follow_the_target():
    src = "__device__ int f(int v) { return __shfl_xor_sync(0xffffffff, v, 1); }\ncudaDataType t = CUDA_R_32F;\n"
    old = translate_source(src, Options(hip_version=V52))
    assert "__shfl_xor(v, 1)" in old.text and "hipDataType t = HIP_R_32F;" in old.text
    assert unsupported(old) == {}  # HIP 5.2's hip/library_types.h has the data types


# ---------------------------------------------------------------- --roc

def test_roc_cusparse_generic_api_per_target():
    new = port_text("roc/cusparse_spmv.cu", roc=True)
    assert "#include <rocsparse.h>" in new.text and "cusparse" not in new.text.split("int main")[1]
    assert ("rocsparse_spmv(handle, rocsparse_operation_none, &alpha, mat, vec_x, &beta, vec_y,\n"
            "                                rocsparse_datatype_f32_r, rocsparse_spmv_alg_default, "
            "rocsparse_spmv_stage_compute, nullptr, buffer)") in new.text
    assert "rocsparse_spmv_alg_default,\n                                           rocsparse_spmv_stage_buffer_size, " \
           "&buffer_size, nullptr)" in new.text
    assert "rocsparse_create_csr_descr(&mat, rows, cols, nnz, d_offsets, d_columns, d_values" in new.text
    assert "rocsparse_indextype_i32, rocsparse_indextype_i32,\n" in new.text
    assert "rocsparse_get_status_description(status_)" in new.text
    old = port_text("roc/cusparse_spmv.cu", hip=V52, roc=True)  # rocSPARSE before 6.0: no stage argument
    assert "rocsparse_spmv_alg_default, nullptr, buffer)" in old.text and "stage" not in old.text
    assert "[](rocsparse_status status_) -> const char*" in old.text
    assert unsupported(new) == {} and unsupported(old) == {}


def test_roc_curand_host_and_device_api():
    out = port_text("roc/curand_host_device.cu", roc=True).text
    for want in ("#include <rocrand/rocrand.h>", "#include <rocrand/rocrand_kernel.h>", "rocrand_generator gen;",
                 "rocrand_create_generator(&gen, ROCRAND_RNG_PSEUDO_DEFAULT)", "rocrand_set_seed(gen, 1234ULL)",
                 "rocrand_generate_normal(gen, d_normal, n, 0.0f, 1.0f)", "rocrand_init(seed, i, 0, &states[i]);",
                 "rocrand_state_xorwow local = states[i];", "rocrand_uniform(&local) + rocrand_normal(&local)",
                 "if (status_ != ROCRAND_STATUS_SUCCESS)"):
        assert want in out, want
    assert "curand" not in out.split("int main")[1].replace("CHECK_CURAND", "")


def test_roc_cublas_gemm_ex_and_cusolver_workspace():
    result = port_text("roc/cublas_cusolver.cu", roc=True)
    out = result.text
    assert "#include <rocblas.h>" in out and "#include <rocsolver/rocsolver.h>" in out
    assert ("rocblas_gemm_ex(h, rocblas_operation_none, rocblas_operation_transpose, n, n, n, &alpha, a, "
            "rocblas_datatype_f32_r, n, b,") in out
    assert ("&beta, c, rocblas_datatype_f32_r, n, c, rocblas_datatype_f32_r, n, rocblas_datatype_f32_r,\n"
            "                                     rocblas_gemm_algo_standard, 0, 0);") in out
    assert "(*(&lwork) = 0, rocblas_status_success);" in out
    assert "rocblas_status st = rocsolver_spotrf(solver, rocblas_fill_lower, n, a, n, info);" in out
    assert "int cholesky(rocblas_handle solver," in out
    assert unsupported(result) == {}
    notes = " ".join(w.what for w in result.rewrites)
    assert "compute type CUBLAS_COMPUTE_32F -> rocblas_datatype_f32_r" in notes and "own workspace" in notes


def test_roc_leaves_what_rocm_lacks_and_says_why():
    src = ("#include <cusolverDn.h>\n#include <cufft.h>\n"
           "void f(cusolverDnHandle_t s, cufftHandle p) { cusolverDnSorgqr(s, 4, 4, 4, 0, 4, 0, 0, 1, 0);"
           " cufftPlan1d(&p, 8, CUFFT_C2C, 1); }\n")
    result = translate_source(src, Options(roc=True))
    assert "cusolverDnSorgqr(s, 4, 4" in result.text  # named, left for a human
    assert unsupported(result)["cusolverDnSorgqr"] == "no rocSOLVER equivalent (hipsolverDnSorgqr exists in the " \
                                                      "hip* library)"
    assert "hipfftPlan1d(&p, 8, HIPFFT_C2C, 1)" in result.text  # no rocFFT map: cuFFT stays on hipFFT
    # a call whose shape the rewrite does not know is not half-rewritten
    odd = translate_source("void g(cusparseHandle_t h) { cusparseSpMV(h, args); }\n", Options(roc=True))
    assert "rocsparse_spmv(h, args)" in odd.text
    assert [w for w in odd.rewrites if "cusparseSpMV" in w.what] == []
