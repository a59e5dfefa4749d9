"""The API families and forms added for HIPIFY's suite (tests/test_port_hipify_suite.py), on
snippets written for this project: headers and the runtime include, launches, runtime
overloads, --roc element types and rocSPARSE argument lists, hipDNN and MIOpen RNNs, half2,
#if branches, strings. The last tests compile the family snippets with the installed hipcc."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpuparity.port import conditions
from gpuparity.port.run import port
from gpuparity.port.tokens import tokenize
from gpuparity.port.translate import Options, translate_source

FAMILIES = Path(__file__).parent / "data" / "cuda_samples" / "families"
ROC = Options(roc=True)


def tr(src: str, opts: Options | None = None, **kw) -> str:
    return translate_source(src, opts, **kw).text


def notes(src: str, opts: Options | None = None) -> str:
    return " | ".join(w.what for w in translate_source(src, opts).rewrites)


def left(src: str, opts: Options | None = None) -> dict[str, str]:
    return {u.name: u.reason for u in translate_source(src, opts).uses if not u.supported}


# ---------------------------------------------------------------- headers and the runtime include

def test_runtime_include_goes_after_pragma_once_or_the_guard_and_every_cu_gets_it():
    assert tr("int main() { return 0; }\n", cuda_source=True) == "#include <hip/hip_runtime.h>\nint main() { return 0; }\n"
    assert tr("int main() { return 0; }\n") == "int main() { return 0; }\n"  # a .cpp that uses nothing
    guard = "#ifndef A_H\n#pragma once\n#define A_H\n#include <stdio.h>\n#endif\n"
    assert tr(guard, cuda_source=True).startswith("#ifndef A_H\n#include <hip/hip_runtime.h>\n#pragma once\n")
    once = "// x\n#pragma once\n#ifndef A_H\n#define A_H\n#endif\n"
    assert tr(once, cuda_source=True) == "// x\n#pragma once\n#include <hip/hip_runtime.h>\n#ifndef A_H\n#define A_H\n#endif\n"
    # never inside a conditional: before the first unconditional #include
    cond = '#if defined(_WIN32)\n#include "windows.h"\n#endif\n#include <stdio.h>\n'
    assert tr(cond, cuda_source=True) == ('#if defined(_WIN32)\n#include "windows.h"\n#endif\n'
                                          "#include <hip/hip_runtime.h>\n#include <stdio.h>\n")
    # cuda_runtime_api.h is not the runtime: both headers
    api = tr("#include <cuda_runtime_api.h>\n", cuda_source=True)
    assert api == "#include <hip/hip_runtime.h>\n#include <hip/hip_runtime_api.h>\n"


def test_includes_made_redundant_are_dropped_only_where_the_first_covers_them():
    out = tr("#include <cuda.h>\n#include <cuda_runtime.h>\n#include <cublas.h>\n#include <cublas_v2.h>\n")
    assert out == "#include <hip/hip_runtime.h>\n\n#include <hipblas.h>\n\n"
    branches = "#ifdef OLD\n#include <cublas.h>\n#else\n#include <cublas_v2.h>\n#endif\n"
    assert tr(branches).count("#include <hipblas.h>") == 2  # each branch needs its own
    nested = "#include <curand_kernel.h>\n#ifdef X\n#include <curand_normal.h>\n#endif\n"
    assert tr(nested).count("#include <hiprand/hiprand_kernel.h>") == 1
    roc = tr('#include "curand_uniform.h"\n#include "curand_globals.h"\n#include "curand_discrete2.h"\n', ROC)
    assert roc == ('#include "rocrand/rocrand_uniform.h"\n#include "rocrand/rocrand_common.h"\n'
                   '#include "rocrand/rocrand_discrete.h"\n')


def test_header_layouts():
    src = "#include <cusolverRf.h>\n#include <cublasLt.h>\n#include <cusparse.h>\n"
    assert tr(src) == "#include <hipsolver.h>\n#include <hipblaslt.h>\n#include <hipsparse.h>\n"
    assert tr(src, Options(headers="folder")) == ("#include <hipsolver/hipsolver.h>\n#include <hipblaslt/hipblaslt.h>\n"
                                                  "#include <hipsparse/hipsparse.h>\n")
    older = tr(src, Options(headers="folder", hip_version=(5, 1, 0)))
    assert "<hipsparse.h>" in older  # before 5.2 only the flat name exists


# ---------------------------------------------------------------- launches, namespaces, macros

def test_template_kernels_launch_through_hip_kernel_name_even_with_deduced_arguments():
    src = ("template <typename T>\n__global__ void scale(T* p) {}\n__global__ void plain(float* p) {}\n"
           "#define INSTANCE scale<float>\n"
           "void f(float* d) { scale<<<1, 2>>>(d); plain<<<1, 2>>>(d); INSTANCE<<<1, 2>>>(d); }\n")
    out = tr(src, Options(launch="ggl"))
    assert "hipLaunchKernelGGL(HIP_KERNEL_NAME(scale), dim3(1), dim3(2), 0, 0, d);" in out
    assert "hipLaunchKernelGGL(plain, dim3(1), dim3(2), 0, 0, d);" in out
    assert "hipLaunchKernelGGL(HIP_KERNEL_NAME(INSTANCE), dim3(1), dim3(2), 0, 0, d);" in out


def test_global_scope_cub_after_a_keyword_and_cudacc_defined_by_the_file():
    assert "typedef ::hipcub::BlockLoad<int, 128> Load;" in tr("typedef ::cub::BlockLoad<int, 128> Load;\n")
    assert "return ::hipcub::Max();" in tr("int f() { return ::cub::Max(); }\n")
    assert "#define __HIPCC__\n#ifdef __HIPCC__\n#endif\n" in tr("#define __CUDACC__\n#ifdef __CUDACC__\n#endif\n")
    # other macros a file defines keep their names (a user's own cudaMalloc stays theirs)
    assert "#define cudaMalloc my_alloc\nvoid f() { cudaMalloc(0, 0); }" in tr("#define cudaMalloc my_alloc\n"
                                                                              "void f() { cudaMalloc(0, 0); }\n")


# ---------------------------------------------------------------- runtime and driver

def test_runtime_overloads_cuda12_forms_and_driver_calls():
    src = ("void f(cudaGraph_t g, cudaGraphExec_t* e, cudaEvent_t* ev, CUfunction fn, int* grid, int* block) {\n"
           "  cudaGraphInstantiate(e, g, 0); cudaGraphInstantiate(e, g); cudaGraphInstantiate(e, g, 0, 0, 0);\n"
           "  cudaEventCreate(ev, cudaEventDisableTiming); cudaEventCreate(ev);\n"
           "  cuOccupancyMaxPotentialBlockSize(grid, block, fn, 0, 256, 1024);\n"
           "  cuOccupancyMaxPotentialBlockSizeWithFlags(grid, block, fn, sizer, 256, 1024, 0);\n"
           "  void* pfn; cudaGetDriverEntryPoint(\"cuMemAlloc\", &pfn, 0);\n"
           "  cudaFuncSetSharedMemConfig(kernel, cudaSharedMemBankSizeFourByte);\n}\n")
    out = tr(src)
    assert "hipGraphInstantiateWithFlags(e, g, 0); hipGraphInstantiateWithFlags(e, g, 0); " \
           "hipGraphInstantiate(e, g, 0, 0, 0);" in out
    assert "hipEventCreateWithFlags(ev, hipEventDisableTiming); hipEventCreate(ev);" in out
    assert "hipModuleOccupancyMaxPotentialBlockSize(grid, block, fn, 256, 1024);" in out
    assert "hipModuleOccupancyMaxPotentialBlockSizeWithFlags(grid, block, fn, 256, 1024, 0);" in out
    assert 'hipGetProcAddress("hipMalloc", &pfn, HIP_VERSION_MAJOR * 100 + HIP_VERSION_MINOR, 0, nullptr);' in out
    assert "hipFuncSetSharedMemConfig(reinterpret_cast<const void*>(kernel), hipSharedMemBankSizeFourByte);" in out
    assert "sizer is not called, so dynamicSMemSize must cover every block size" in notes(src)


def test_strings_name_the_hip_call_and_leave_other_words():
    src = ('void f() { perror("cudaSetDevice returned cudaErrorInvalidDevice"); puts("cudaMallocX cuda"); }\n'
           '#pragma message("cudaMalloc")\n')
    out = tr(src)
    assert 'perror("hipSetDevice returned hipErrorInvalidDevice")' in out and 'puts("cudaMallocX cuda")' in out
    assert '#pragma message("cudaMalloc")' in out


# ---------------------------------------------------------------- --roc: element types and rocSPARSE

def test_roc_sparse_only_files_get_the_rocsparse_complex_typedefs():
    src = ("#include <cusparse.h>\nvoid f(cusparseHandle_t h, cuComplex* v, cuDoubleComplex* w) {}\n")
    out = tr(src, ROC)
    assert "typedef rocsparse_float_complex rocblas_float_complex;" in out
    assert "void f(rocsparse_handle h, rocblas_float_complex* v, rocblas_double_complex* w)" in out
    assert "typedef" not in tr(src.replace("cusparseHandle_t h", "cublasHandle_t h"), ROC)  # rocBLAS has them
    helper = tr(src.replace("{}", "{ cuComplex z = make_cuComplex(1, 0); }"), ROC)
    assert "hipComplex* v" in helper and "typedef" not in helper  # helper calls: HIP's types stay


def test_rocsparse_policies_sizes_and_argument_lists():
    src = ("void f(cusparseHandle_t h, cusparseMatDescr_t d, csrilu02Info_t info, csrsm2Info_t sm, float* v, int* p,\n"
           "       int* i, void* buf, cusparseSolvePolicy_t pol, float* x, int m) {\n"
           "  int size = 0;\n"
           "  cusparseScsrilu02_bufferSize(h, m, m, d, v, p, i, info, &size);\n"
           "  cusparseScsrilu02_analysis(h, m, m, d, v, p, i, info, pol, buf);\n"
           "  cusparseScsrilu02(h, m, m, d, v, p, i, info, pol, buf);\n"
           "  cusparseScsrsm2_solve(h, 0, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, m, 1, m,\n"
           "                        x, d, v, p, i, x, m, sm, pol, buf);\n"
           "  cusparseScsrmv(h, CUSPARSE_OPERATION_NON_TRANSPOSE, m, m, m, x, d, v, p, i, x, x, x);\n"
           "  cusparseScsrmm(h, CUSPARSE_OPERATION_NON_TRANSPOSE, m, m, m, m, x, d, v, p, i, x, m, x, x, m);\n"
           "  cusparseSgpsvInterleavedBatch(h, 0, m, x, x, x, x, x, x, 4, buf);\n"
           "}\n")
    out = tr(src, ROC)
    flat = " ".join(out.split())
    assert "size_t size = 0;" in out
    assert "rocsparse_scsrilu0_buffer_size(h, m, m, d, v, p, i, info, reinterpret_cast<size_t*>(&size));" in out
    assert "rocsparse_scsrilu0_analysis(h, m, m, d, v, p, i, info, rocsparse_analysis_policy_force, " \
           "rocsparse_solve_policy_auto, buf);" in out
    assert "rocsparse_scsrilu0(h, m, m, d, v, p, i, info, rocsparse_solve_policy_auto, buf);" in out
    assert "rocsparse_scsrsm_solve(h, rocsparse_operation_none, rocsparse_operation_none, m, 1, m, x, d, v, p, i, " \
           "x, m, sm, rocsparse_solve_policy_auto, buf);" in flat  # no algorithm
    assert "rocsparse_scsrmv(h, rocsparse_operation_none, m, m, m, x, d, v, p, i, nullptr, x, x, x);" in out
    assert "rocsparse_scsrmm(h, rocsparse_operation_none, rocsparse_operation_none, m, m, m, m," in out
    assert "rocsparse_sgpsv_interleaved_batch(h, rocsparse_gpsv_interleaved_alg_qr, m, x, x, x, x, x, x, 4, 4, buf);" \
        in out
    # a size that is a parameter cannot be retyped here: left for a human, with the reason
    param = "void g(cusparseHandle_t h, int m, float* x, int* size) { cusparseSgemvi_bufferSize(h, " \
            "CUSPARSE_OPERATION_NON_TRANSPOSE, m, m, m, size); }\n"
    assert "cusparseSgemvi_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE" in tr(param, ROC)
    assert "pass the address of a size_t" in left(param, ROC)["cusparseSgemvi_bufferSize"]


def test_rocsparse_generic_triangular_solves_by_stage():
    src = ("void f(cusparseHandle_t h, cusparseSpMatDescr_t a, cusparseDnVecDescr_t x, cusparseDnVecDescr_t y,\n"
           "       cusparseSpSVDescr_t d, float* one, size_t* size, void* buf) {\n"
           "  cusparseSpSV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, one, a, x, y, CUDA_R_32F, "
           "CUSPARSE_SPSV_ALG_DEFAULT, d, size);\n"
           "  cusparseSpSV_analysis(h, CUSPARSE_OPERATION_NON_TRANSPOSE, one, a, x, y, CUDA_R_32F, "
           "CUSPARSE_SPSV_ALG_DEFAULT, d, buf);\n"
           "  cusparseSpSV_solve(h, CUSPARSE_OPERATION_NON_TRANSPOSE, one, a, x, y, CUDA_R_32F, "
           "CUSPARSE_SPSV_ALG_DEFAULT, d);\n}\n")
    out = tr(src, ROC)
    assert "rocsparse_spsv_stage_buffer_size, size, nullptr);" in out
    assert "rocsparse_spsv_stage_preprocess, nullptr, buf);" in out
    assert "cusparseSpSV_solve(h, CUSPARSE_OPERATION_NON_TRANSPOSE" in out  # the buffer is not known here
    assert "takes the buffer its analysis was given" in left(src, ROC)["cusparseSpSV_solve"]
    # hipSPARSE's solve keeps cuSPARSE 11's buffer argument
    hip = tr("void g(cusparseHandle_t h, cusparseSpMatDescr_t a, cusparseDnMatDescr_t b, cusparseSpSMDescr_t d,"
             " float* one) { cusparseSpSM_solve(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,"
             " one, a, b, b, CUDA_R_32F, CUSPARSE_SPSM_ALG_DEFAULT, d); }\n")
    assert "HIP_R_32F, HIPSPARSE_SPSM_ALG_DEFAULT, d, nullptr); }" in hip


# ---------------------------------------------------------------- cuDNN: hipDNN names, MIOpen RNNs

def test_hipdnn_names_keep_cudnn_arguments_and_are_listed():
    src = ("#include <cudnn.h>\nvoid f(cudnnHandle_t h, cudnnTensorDescriptor_t d) {\n"
           "  cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 3, 4);\n}\n")
    out = tr(src, Options(dnn="hipdnn"))
    assert "#include <hipDNN.h>" in out
    assert "hipdnnSetTensor4dDescriptor(d, HIPDNN_TENSOR_NCHW, HIPDNN_DATA_FLOAT, 1, 2, 3, 4);" in out
    assert "not part of ROCm" in left(src, Options(dnn="hipdnn"))["cudnnSetTensor4dDescriptor"]
    assert "miopenSet4dTensorDescriptor(d, miopenFloat, 1, 2, 3, 4);" in tr(src)  # MIOpen by default


def test_miopen_rnn_descriptors_and_backward_weights():
    src = ("void f(cudnnHandle_t h, cudnnRNNDescriptor_t r, cudnnDropoutDescriptor_t dr, int hs, int nl) {\n"
           "  cudnnSetRNNDescriptor_v6(h, r, hs, nl, dr, CUDNN_LINEAR_INPUT, CUDNN_UNIDIRECTIONAL, CUDNN_LSTM, "
           "CUDNN_RNN_ALGO_STANDARD, CUDNN_DATA_FLOAT);\n"
           "  cudnnRNNBackwardWeights(h, r, 4, xd, x, hd, hx, yd, y, ws, wsz, dwd, dw, rs, rsz);\n}\n")
    out = tr(src)
    assert "miopenSetRNNDescriptor_V2(r, hs, nl, dr, miopenRNNlinear, miopenRNNunidirection, miopenLSTM, " \
           "miopenRNNwithBias, miopenRNNdefault, miopenFloat);" in out
    assert "miopenRNNBackwardWeights(h, r, 4, xd, x, hd, hx, yd, y, dwd, dw, ws, wsz, rs, rsz);" in out


# ---------------------------------------------------------------- half2, #if branches

def test_half2_members_and_braced_assignments():
    src = ("__global__ void k(half2* o, const __half2* in, float f) {\n"
           "  half2 v = o[0];\n  float s = (float)v.x + (float)in[1].y + (float)o->x;\n"
           "  v = {__float2half(f), __float2half(f)};\n  o[1].y = __float2half(s);\n"
           "  float t = (float)reinterpret_cast<half&>(v.y);\n}\n")
    out = tr(src)
    assert "(float)reinterpret_cast<half&>(v.x) + (float)reinterpret_cast<const __half&>(in[1].y) + " \
           "(float)reinterpret_cast<half&>(o->x)" in out
    assert "v = half2{__float2half(f), __float2half(f)};" in out
    assert "reinterpret_cast<half&>(o[1].y) = __float2half(s);" in out
    assert "reinterpret_cast<half&>(reinterpret_cast" not in out  # a cast member stays as written
    assert "struct P { float x; }; void g(P v) { float a = v.x; }" in tr("struct P { float x; }; void g(P v) "
                                                                           "{ float a = v.x; }\n")


def test_excluded_branches_are_skipped_only_when_surely_out():
    src = ("#define ON 1\n#ifdef OFF\ncudaMalloc(a, 1);\n#elif ON\ncudaMalloc(b, 1);\n#else\ncudaMalloc(c, 1);\n"
           "#endif\n#if CUDA_VERSION >= 12000\ncudaMalloc(d, 1);\n#else\ncudaMalloc(e, 1);\n#endif\n"
           "#if defined(FROM_D) && !defined(OFF)\ncudaMalloc(f, 1);\n#endif\n")
    skip = tr(src, Options(skip_excluded=True, defines=("FROM_D",)))
    assert "cudaMalloc(a, 1)" in skip and "hipMalloc(b, 1)" in skip and "cudaMalloc(c, 1)" in skip
    assert "hipMalloc(d, 1)" in skip and "hipMalloc(e, 1)" in skip  # CUDA_VERSION: unknown here, both kept
    assert "hipMalloc(f, 1)" in skip
    assert tr(src).count("hipMalloc") == 6  # by default every branch is translated
    toks, _ = tokenize(src)
    assert len(conditions.excluded(toks)) == 3  # OFF, #else, and FROM_D not given


# ---------------------------------------------------------------- compiled with the installed hipcc

SNIPPETS = [("runtime_overloads.cu", False, "HIP runtime"), ("hipsparse_spsm.cu", False, "hipSPARSE"),
            ("curand_both.cu", False, "hipRAND"), ("curand_both.cu", True, "rocRAND"),
            ("rocsparse_legacy.cu", True, "rocSPARSE"), ("hipblas_gemm.cu", False, "hipBLAS")]


@pytest.mark.parametrize("name,roc,library", SNIPPETS, ids=[s[2] for s in SNIPPETS])
def test_family_snippets_compile_with_the_installed_hipcc(tmp_path, name, roc, library):
    """hipcc (Debian's 5.2 here) compiles each translation whose headers are installed; the
    others are reported as not checked, naming the library."""
    if shutil.which("hipcc") is None:
        pytest.skip("hipcc not installed (scripts/system-deps.sh)")
    report = port(FAMILIES / name, tmp_path / name, check=True, roc=roc, want_diff=False)
    check = report.files[0].check
    assert report.files[0].score.unsupported == 0
    if check.status == "headers unavailable":
        assert library in check.detail and "not installed for hipcc" in check.detail
        assert library == "hipBLAS" or not Path(f"/usr/include/{library.lower()}").exists()
    else:
        assert check.status == "pass", (check.detail, check.error, (tmp_path / name).read_text())
    doc = json.loads(json.dumps({"status": check.status}))
    assert doc["status"] in ("pass", "headers unavailable")


def test_experimental_names_and_hip_data_types_follow_the_options():
    src = "void f(cublasHandle_t h, float* a) { cublasSgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, a, a, 1, a, 1, " \
          "a, a, 1); }\n"
    assert "hipblasSgemm_64(" in tr(src)  # HIPIFY's --experimental names are translated by default
    off = Options(experimental=False)
    assert "cublasSgemm_64(" in tr(src, off) and "experimental" in left(src, off)["cublasSgemm_64"]
    types = "#include <cublas_v2.h>\nvoid g(cublasHandle_t h) { cudaDataType t = CUDA_R_16BF; }\n"
    assert "rocblas_datatype t = rocblas_datatype_bf16_r;" in tr(types, ROC)
    assert "hipDataType t = HIP_R_16BF;" in tr(types, Options(roc=True, hip_data_types=True))
