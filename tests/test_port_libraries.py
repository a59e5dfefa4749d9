"""CUDA libraries to their AMD counterparts, on CUDA written for these tests: cuBLAS v1/v2 to
rocBLAS (--roc) and hipBLAS, cuDNN to MIOpen, cuSOLVER to rocSOLVER, cuRAND to rocRAND, and
half/half2 warp shuffles. Text checks here (Debian packages neither rocBLAS, rocSOLVER nor
MIOpen); what Debian's hipcc can compile is compiled in test_port_cli.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuparity.port import mappings
from gpuparity.port.translate import Options, translate_source
from gpuparity.port.walk import decode_source

SAMPLES = Path(__file__).parent / "data" / "cuda_samples"
V52, V70 = mappings.parse_version("5.2"), mappings.parse_version("7.0")


def port(name: str, c_only: bool = False, **kw):
    text = decode_source((SAMPLES / name).read_bytes())
    return translate_source(text, Options(**kw), c_only=c_only)


def unsupported(result) -> dict[str, str]:
    return {u.name: u.reason for u in result.uses if not u.supported}


def notes(result) -> str:
    return "\n".join(f"{w.line}: {w.what}" for w in result.rewrites)


def squash(text: str) -> str:
    """Whitespace runs as one space: a rewritten call may keep the original line breaks."""
    return re.sub(r"\s+", " ", text)


# ---------------------------------------------------------------- cuDNN -> MIOpen

@pytest.fixture(scope="module")
def dnn():
    return port("libraries/cudnn_conv.cu")


def test_cudnn_descriptors_become_miopen_tensor_and_convolution_descriptors(dnn):
    out = dnn.text
    assert "#include <miopen/miopen.h>" in out and not re.search(r"\bcudnn[A-Z]|\bCUDNN_", out)
    assert "    miopenTensorDescriptor_t w_desc;" in out  # MIOpen has no filter descriptor
    assert "CHECK_DNN(miopenCreateTensorDescriptor(&l.w_desc));" in out
    assert "CHECK_DNN(miopenSet4dTensorDescriptor(l.x_desc, miopenFloat, n, c, h, w));" in out
    assert "CHECK_DNN(miopenSet4dTensorDescriptor(l.w_desc, miopenFloat, k, c, 3, 3));" in out
    # mode first, no compute type; cross-correlation is MIOpen's convolution
    assert "CHECK_DNN(miopenInitConvolutionDescriptor(l.conv, miopenConvolution, 1, 1, 1, 1, 1, 1));" in out
    assert "CHECK_DNN(miopenStatusSuccess);" in out  # math type: MIOpen chooses
    assert ("CHECK_DNN(miopenGetConvolutionForwardOutputDim(l.conv, l.x_desc, l.w_desc, &on, &oc, &oh, &ow));"
            in out)
    assert unsupported(dnn) == {}


def test_cudnn_algorithm_search_workspace_and_forward_take_miopen_argument_order(dnn):
    out = squash(dnn.text)
    assert "CHECK_DNN((*(&max_algos) = 5, miopenStatusSuccess));" in out
    assert "std::vector<miopenConvAlgoPerf_t> perf(max_algos);" in out
    assert ("miopenFindConvolutionForwardAlgorithm(h, l.x_desc, x, l.w_desc, w, l.conv, l.y_desc, y, max_algos, "
            "&returned, perf.data(), ws, ws_size, false)") in out
    assert "return perf[i].fwd_algo;" in out and "if (miopenStatusSuccess == miopenStatusSuccess)" in out
    # w before x, no algorithm argument
    assert "miopenConvolutionForwardGetWorkSpaceSize(h, l.w_desc, l.x_desc, l.conv, l.y_desc, &ws_size)" in out
    # beta, yDesc, y before the workspace
    assert ("miopenConvolutionForward(h, &one, l.x_desc, x, l.w_desc, w, l.conv, algo, &zero, l.y_desc, y, ws, "
            "ws_size)") in out


def test_cudnn_backward_data_and_filter_swap_their_inputs(dnn):
    out = squash(dnn.text)
    assert ("miopenConvolutionBackwardDataGetWorkSpaceSize(h, l.y_desc, l.w_desc, l.conv, l.x_desc, &data_ws)"
            in out)
    assert ("miopenConvolutionBackwardWeightsGetWorkSpaceSize(h, l.y_desc, l.x_desc, l.conv, l.w_desc, "
            "&filter_ws)") in out
    assert ("miopenConvolutionBackwardData(h, &one, l.y_desc, dy, l.w_desc, w, l.conv, data_algo, &zero, "
            "l.x_desc, dx, ws, data_ws)") in out
    assert ("miopenConvolutionBackwardWeights(h, &one, l.y_desc, dy, l.x_desc, x, l.conv, filter_algo, &zero, "
            "l.w_desc, dw, ws, filter_ws)") in out
    assert "miopenConvBwdDataAlgorithm_t data_algo, miopenConvBwdWeightsAlgorithm_t filter_algo" in out


def test_cudnn_activation_pooling_softmax_and_batch_norm(dnn):
    out = squash(dnn.text)
    assert "miopenSetActivationDescriptor(l.relu, miopenActivationRELU, 0.0, 1.0, 1.0)" in out
    assert "miopenSet2dPoolingDescriptor(l.pool, miopenPoolingMax, 2, 2, 0, 0, 2, 2)" in out
    assert ("miopenPoolingForward(h, l.pool, &one, l.y_desc, y, &zero, pooled_desc, pooled, false, nullptr, 0)"
            in out)
    assert ("miopenSoftmaxForward_V2(h, &one, pooled_desc, pooled, &zero, pooled_desc, pooled, MIOPEN_SOFTMAX_LOG, "
            "MIOPEN_SOFTMAX_MODE_CHANNEL)") in out
    assert "miopenDeriveBNTensorDescriptor(bn, t, miopenBNSpatial)" in out
    assert ("miopenBatchNormalizationForwardTraining(h, miopenBNSpatial, (void*)(&one), (void*)(&zero), t, x, t, "
            "y, bn, (void*)(scale), (void*)(bias), 0.1, mean, var, 1e-5, save_mean, save_inv)") in out
    said = notes(dnn)
    for what in ("workspace moved last", "dy before w", "NaN option dropped", "do_backward = false",
                 "perf.algo -> fwd_algo", "perf.status -> miopenStatusSuccess"):
        assert what in said, what


def test_cudnn_calls_without_a_miopen_counterpart_are_named_with_the_reason():
    src = ("#include <cudnn.h>\n"
           "void f(cudnnHandle_t h, cudnnTensorDescriptor_t t, cudnnFilterDescriptor_t w,\n"
           "       cudnnConvolutionDescriptor_t c, cudnnPoolingDescriptor_t p, cudnnActivationDescriptor_t a,\n"
           "       cudnnConvolutionFwdAlgoPerf_t* perf, float* x, float* y, int* n) {\n"
           "  cudnnGetConvolutionForwardAlgorithm_v7(h, t, w, c, t, 4, n, perf);\n"
           "  cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT);\n"
           "  cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 2, 3, 4);\n"
           "  cudnnPoolingBackward(h, p, x, t, y, t, y, t, x, x, t, y);\n"
           "  cudnnAddTensor(h, x, t, x, y, t, y);\n"
           "  cudnnConvolutionForward(h, x, t, x);\n"  # not the call's shape: kept, not half-renamed
           "  int m = perf[0].mathType;\n"
           "}\n")
    result = translate_source(src)
    bad = unsupported(result)
    assert "miopenFindConvolutionForwardAlgorithm" in bad["cudnnGetConvolutionForwardAlgorithm_v7"]
    assert "cross-correlation" in bad["cudnnSetConvolution2dDescriptor"]
    assert "NCHW" in bad["cudnnSetTensor4dDescriptor"] and "CUDNN_TENSOR_NHWC" in bad["cudnnSetTensor4dDescriptor"]
    assert "do_backward = true" in bad["cudnnPoolingBackward"]
    assert "miopenOpTensor" in bad["cudnnAddTensor"]
    assert "call shape not recognised" in bad["cudnnConvolutionForward"]
    assert "perf.mathType" in bad
    for call in ("cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT)",
                 "cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 2, 3, 4)",
                 "cudnnConvolutionForward(h, x, t, x)"):
        assert call in result.text, call  # left as CUDA, arguments and all, so the build says where
    assert "miopenTensorNHWC" not in result.text and "miopenFloat" not in result.text


def test_cudnn_lrn_forward_becomes_miopen_lrn_forward_and_the_backward_is_named():
    """MIOpen's LRN descriptor holds the mode that cuDNN passes to the forward call, and its forward
    says whether to keep a workspace for a backward pass; the backward needs that workspace."""
    src = ("#include <cudnn.h>\n"
           "void lrn(cudnnHandle_t h, cudnnTensorDescriptor_t t, cudnnLRNDescriptor_t d, const float* one,\n"
           "         const float* zero, float* x, float* y, float* dy, float* dx) {\n"
           "  cudnnCreateLRNDescriptor(&d);\n"
           "  cudnnSetLRNDescriptor(d, 5, 1e-4, 0.75, 2.0);\n"
           "  cudnnLRNCrossChannelForward(h, d, CUDNN_LRN_CROSS_CHANNEL_DIM1, one, t, x, zero, t, y);\n"
           "  cudnnLRNCrossChannelBackward(h, d, CUDNN_LRN_CROSS_CHANNEL_DIM1, one, t, y, t, dy, t, x, zero, t, dx);\n"
           "  unsigned n; double a, b, k;\n"
           "  cudnnGetLRNDescriptor(d, &n, &a, &b, &k);\n"
           "}\n")
    result = translate_source(src)
    out = result.text
    assert "miopenCreateLRNDescriptor(&d);" in out
    assert "miopenSetLRNDescriptor(d, miopenLRNCrossChannel, 5, 1e-4, 0.75, 2.0);" in out
    assert "miopenLRNForward(h, d, one, t, x, zero, t, y, false, nullptr);" in out
    assert "cudnnLRNCrossChannelForward" not in out
    bad = unsupported(result)
    # the backward's mode is left as written with it (a name in a call left for a human is not ported)
    assert set(bad) == {"cudnnLRNCrossChannelBackward", "cudnnGetLRNDescriptor", "CUDNN_LRN_CROSS_CHANNEL_DIM1"}
    assert "cudnnLRNCrossChannelBackward(h, d, CUDNN_LRN_CROSS_CHANNEL_DIM1, one," in out
    back = bad["cudnnLRNCrossChannelBackward"]
    assert back.startswith("MIOpen's miopenLRNBackward takes no mode") and "do_backward = true" in back
    assert "miopenLRNGetWorkSpaceSize" in back and "no HIP equivalent" not in back
    assert "miopenGetLRNDescriptor also returns the mode" in bad["cudnnGetLRNDescriptor"]
    said = notes(result)
    assert "lrnMode dropped" in said and "mode miopenLRNCrossChannel added" in said
    c = translate_source(src, c_only=True).text    # C: no nullptr, no false
    assert "miopenLRNForward(h, d, one, t, x, zero, t, y, 0, 0);" in c


def test_cudnn_activation_coefficient_follows_the_mode():
    src = ("void f(cudnnActivationDescriptor_t a, cudnnActivationMode_t mode, double clip) {\n"
           "  cudnnSetActivationDescriptor(a, CUDNN_ACTIVATION_TANH, CUDNN_NOT_PROPAGATE_NAN, 0.0);\n"
           "  cudnnSetActivationDescriptor(a, CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_PROPAGATE_NAN, clip);\n"
           "  cudnnSetActivationDescriptor(a, mode, CUDNN_PROPAGATE_NAN, clip);\n}\n")
    out = translate_source(src).text
    assert "miopenSetActivationDescriptor(a, miopenActivationTANH, 1.0, 1.0, 1.0)" in out  # beta*tanh(alpha*x)
    assert "miopenSetActivationDescriptor(a, miopenActivationCLIPPEDRELU, clip, 1.0, 1.0)" in out
    assert "miopenSetActivationDescriptor(a, mode, ((mode) == miopenActivationTANH ? 1.0 : (clip)), 1.0, 1.0)" in out
    assert "PROPAGATE_NAN" not in out  # the dropped NaN options count as ported, not as missing names


def test_cudnn_backward_filter_find_and_nd_descriptors():
    src = ("void f(cudnnHandle_t h, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t dy, cudnnFilterDescriptor_t dw,\n"
           "       cudnnConvolutionDescriptor_t c, void* px, void* pdy, void* pdw, void* ws, size_t wsz,\n"
           "       const int* dims, const int* pad, const int* str, const int* dil) {\n"
           "  cudnnConvolutionBwdFilterAlgoPerf_t perf[4];\n  int got = 0;\n"
           "  cudnnFindConvolutionBackwardFilterAlgorithmEx(h, x, px, dy, pdy, c, dw, pdw, 4, &got, perf, ws, wsz);\n"
           "  cudnnConvolutionBwdFilterAlgo_t algo = perf[0].algo;\n"
           "  cudnnSetFilterNdDescriptor(dw, CUDNN_DATA_HALF, CUDNN_TENSOR_NCHW, 5, dims);\n"
           "  cudnnSetConvolutionNdDescriptor(c, 3, pad, str, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);\n}\n")
    result = translate_source(src)
    out = result.text
    assert "miopenConvAlgoPerf_t perf[4];" in out
    assert ("miopenFindConvolutionBackwardWeightsAlgorithm(h, dy, pdy, x, px, c, dw, pdw, 4, &got, perf, ws, wsz, "
            "false)") in out
    assert "miopenConvBwdWeightsAlgorithm_t algo = perf[0].bwd_weights_algo;" in out
    assert "miopenSetTensorDescriptor(dw, miopenHalf, 5, dims, nullptr)" in out
    assert "miopenInitConvolutionNdDescriptor(c, 3, pad, str, dil, miopenConvolution)" in out
    assert unsupported(result) == {}


# ---------------------------------------------------------------- cuBLAS -> rocBLAS (--roc)

def test_cublas_v2_handles_streams_pointer_mode_status_and_enums():
    result = port("libraries/cublas_v2.cu", roc=True)
    out = squash(result.text)
    for want in ("#include <rocblas.h>", "rocblas_handle handle;", "rocblas_create_handle(&handle)",
                 "rocblas_set_stream(handle, stream)", "rocblas_status s_ = (call);",
                 "if (s_ != rocblas_status_success) std::printf(\"cublas: %s\\n\", rocblas_status_to_string(s_));",
                 "rocblas_set_pointer_mode(handle, rocblas_pointer_mode_host)",
                 "rocblas_set_pointer_mode(handle, rocblas_pointer_mode_device)",
                 "rocblas_sgemm(handle, rocblas_operation_none, rocblas_operation_transpose, n, n, n, &alpha, a, n, b,",
                 "rocblas_ssyrk(handle, rocblas_fill_upper, rocblas_operation_none,",
                 "rocblas_strsm(handle, rocblas_side_left, rocblas_fill_lower, rocblas_operation_none, "
                 "rocblas_diagonal_unit,",
                 "rocblas_saxpy(handle, n, d_alpha, a, 1, c, 1)", "rocblas_sdot(handle, n, a, 1, c, 1, &result)",
                 "rocblas_isamax(handle, n, c, 1, &best)", "rocblas_get_stream(handle, &current)",
                 "rocblas_destroy_handle(handle)"):
        assert want in out, want
    assert unsupported(result) == {}
    hip = port("libraries/cublas_v2.cu")  # hipBLAS: its status string call since ROCm 4.3
    assert "hipblasStatusToString(s_)" in hip.text and unsupported(hip) == {}


def test_cublas_batched_strided_and_gemm_ex_types():
    out = squash(port("libraries/cublas_v2.cu", roc=True).text)
    assert ("rocblas_sgemm_batched(handle, rocblas_operation_none, rocblas_operation_none, n, n, n, &alpha, a_list, "
            "n, b_list, n, &beta, c_list, n, batch)") in out
    assert ("rocblas_sgemm_strided_batched(handle, rocblas_operation_transpose, rocblas_operation_none, n, n, n, "
            "&alpha, a, n, (long long)n * n, b, n, (long long)n * n, &beta, c, n, (long long)n * n, batch)") in out
    # FP16 inputs, FP32 output and compute; D = C; algorithm; solution index and flags
    assert ("rocblas_gemm_ex(handle, rocblas_operation_none, rocblas_operation_none, n, n, n, &alpha, ha, "
            "rocblas_datatype_f16_r, n, hb, rocblas_datatype_f16_r, n, &beta, hc, rocblas_datatype_f32_r, n, hc, "
            "rocblas_datatype_f32_r, n, rocblas_datatype_f32_r, rocblas_gemm_algo_standard, 0, 0)") in out


def test_cublas_gemm_ex_algorithms_become_the_rocblas_standard_algorithm():
    """rocblas_gemm*_ex take (..., compute_type, rocblas_gemm_algo algo, solution_index, flags): every
    cuBLAS algorithm (DEFAULT, the tensor-op forms, ALGOn) becomes rocblas_gemm_algo_standard."""
    src = ("#include <cublas_v2.h>\n"
           "void f(cublasHandle_t h, const void* a, void* c, const void* const* al, void* const* cl, float* s,\n"
           "       cublasGemmAlgo_t mine) {\n"
           "  cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, s, a, CUDA_R_16F, 4, a, CUDA_R_16F, 4, s, c,\n"
           "               CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP);\n"
           "  cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, s, a, CUDA_R_16F, 4, a, CUDA_R_16F, 4, s, c,\n"
           "               CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_ALGO7);\n"
           "  cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, s, al, CUDA_R_16F, 4, al, CUDA_R_16F, 4,\n"
           "                      s, cl, CUDA_R_32F, 4, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_ALGO15_TENSOR_OP);\n"
           "  cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 4, 4, 4, s, a, CUDA_R_16F, 4, 16, a, CUDA_R_16F,\n"
           "                             4, 16, s, c, CUDA_R_32F, 4, 16, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);\n"
           "  cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, s, a, CUDA_R_16F, 4, a, CUDA_R_16F, 4, s, c,\n"
           "               CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, mine);\n"
           "}\n")
    result = translate_source(src, Options(roc=True))
    out = squash(result.text)
    ab = "s, a, rocblas_datatype_f16_r, 4, a, rocblas_datatype_f16_r, 4, s, c, rocblas_datatype_f32_r, 4, c, rocblas_datatype_f32_r, 4"
    gemm = "rocblas_gemm_ex(h, rocblas_operation_none, rocblas_operation_none, 4, 4, 4, " + ab
    assert out.count(gemm + ", rocblas_datatype_f32_r, rocblas_gemm_algo_standard, 0, 0);") == 2
    assert ("rocblas_gemm_batched_ex(h, rocblas_operation_none, rocblas_operation_none, 4, 4, 4, s, al, "
            "rocblas_datatype_f16_r, 4, al, rocblas_datatype_f16_r, 4, s, cl, rocblas_datatype_f32_r, 4, cl, "
            "rocblas_datatype_f32_r, 4, 2, rocblas_datatype_f32_r, rocblas_gemm_algo_standard, 0, 0);") in out
    assert ("rocblas_gemm_strided_batched_ex(h, rocblas_operation_transpose, rocblas_operation_none, 4, 4, 4, s, a, "
            "rocblas_datatype_f16_r, 4, 16, a, rocblas_datatype_f16_r, 4, 16, s, c, rocblas_datatype_f32_r, 4, 16, c, "
            "rocblas_datatype_f32_r, 4, 16, 2, rocblas_datatype_f32_r, rocblas_gemm_algo_standard, 0, 0);") in out
    assert gemm + ", rocblas_datatype_f32_r, mine, 0, 0);" in out     # a variable is the porter's: kept
    assert "CUBLAS_GEMM" not in out and unsupported(result) == {}
    assert "CUBLAS_GEMM_ALGO7 -> rocblas_gemm_algo_standard" in notes(result)


def test_cublas_half_and_complex_gemm_and_sgemm_ex():
    src = ("#include <cublas_v2.h>\n"
           "void f(cublasHandle_t h, const __half* al, const __half* a, __half* c, const cuComplex* z,\n"
           "       cuComplex* zc, const cuComplex* const* za, cuComplex* const* zca, const void* x, void* y) {\n"
           "  cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, al, a, 8, a, 8, al, c, 8);\n"
           "  cublasCgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_C, 8, 8, 8, z, za, 8, za, 8, z, zca, 8, 4);\n"
           "  float one = 1.0f;\n"
           "  cublasSgemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, x, CUDA_R_16BF, 8, x, CUDA_R_16BF, 8,\n"
           "                &one, y, CUDA_R_32F, 8);\n"
           "  cublasSetMathMode(h, CUBLAS_TENSOR_OP_MATH);\n}\n")
    # host code only: the elements are declared in rocBLAS's types (as HIPIFY writes them), no casts
    result = translate_source(src, Options(roc=True))
    out = squash(result.text)
    assert "void f(rocblas_handle h, const rocblas_half* al, const rocblas_half* a, rocblas_half* c, " \
           "const rocblas_float_complex* z, rocblas_float_complex* zc," in out
    assert "rocblas_hgemm(h, rocblas_operation_none, rocblas_operation_none, 8, 8, 8, al, a, 8, a, 8, al, c, 8)" in out
    assert "reinterpret_cast<const rocblas_half" not in out
    # with device code the HIP types stay (kernels use __hadd, cuCaddf ... on them) and the calls cast
    kernel = src + "__global__ void k(__half* p) { p[0] = __hadd(p[0], p[1]); }\n"
    out_k = squash(translate_source(kernel, Options(roc=True)).text)
    assert "__global__ void k(__half* p)" in out_k and "const __half* al" in out_k
    assert ("rocblas_hgemm(h, rocblas_operation_none, rocblas_operation_none, 8, 8, 8, "
            "reinterpret_cast<const rocblas_half*>(al), reinterpret_cast<const rocblas_half*>(a), 8, "
            "reinterpret_cast<const rocblas_half*>(a), 8, reinterpret_cast<const rocblas_half*>(al), "
            "reinterpret_cast<rocblas_half*>(c), 8)") in out_k
    assert ("rocblas_cgemm_batched(h, rocblas_operation_none, rocblas_operation_conjugate_transpose, 8, 8, 8, "
            "reinterpret_cast<const rocblas_float_complex*>(z), reinterpret_cast<const rocblas_float_complex* const*>"
            "(za), 8,") in out_k and "reinterpret_cast<rocblas_float_complex* const*>(zca), 8, 4)" in out_k
    assert ("rocblas_gemm_ex(h, rocblas_operation_none, rocblas_operation_none, 8, 8, 8, &one, x, "
            "rocblas_datatype_bf16_r, 8, x, rocblas_datatype_bf16_r, 8, &one, y, rocblas_datatype_f32_r, 8, y, "
            "rocblas_datatype_f32_r, 8, rocblas_datatype_f32_r, rocblas_gemm_algo_standard, 0, 0)") in out
    assert "rocblas_set_math_mode(h, rocblas_default_math)" in out
    assert unsupported(result) == {}


def test_cublas_v1_calls_get_a_handle_scalars_by_pointer_and_enums():
    result = port("libraries/cublas_v1.cu", roc=True)
    out = result.text
    head, body = out.split("#endif\n", 1)
    assert '#include <rocblas.h>\n#ifndef GPUPARITY_BLAS_V1\n' in head
    assert "static inline rocblas_handle gpuparity_v1_handle(void)" in head
    assert "if (gpuparity_v1_init() != rocblas_status_success) return -1.0f;" in body
    assert ("    (void)(hipMalloc((void**)&d_a, (size_t)(n * n) * (size_t)(sizeof(float))) == hipSuccess ? "
            "rocblas_status_success : rocblas_status_memory_error);") in body
    assert "rocblas_set_matrix(n, n, sizeof(float), h_a, n, d_a, n);" in body  # same arguments in v1 and v2
    assert ("    [&]() { const float s0_ = (1.0f); const float s1_ = (0.0f); gpuparity_v1_status(rocblas_sgemv("
            "gpuparity_v1_handle(), rocblas_operation_transpose, n, n, &s0_, d_a, n, d_x, 1, &s1_, d_y, 1)); }();"
            ) in body
    assert ("gpuparity_v1_status(rocblas_strsv(gpuparity_v1_handle(), rocblas_fill_upper, rocblas_operation_none, "
            "rocblas_diagonal_non_unit, n, d_a, n, d_y, 1));") in body
    assert ("float norm = [&]() -> float { float r_ = 0; gpuparity_v1_status(rocblas_snrm2(gpuparity_v1_handle(), "
            "n, d_y, 1, &r_)); return r_; }();") in body
    assert ("int peak = [&]() -> int { int r_ = 0; gpuparity_v1_status(rocblas_isamax(gpuparity_v1_handle(), n, "
            "d_y, 1, &r_)); return r_; }();") in body
    assert "if (gpuparity_v1_get_error() != rocblas_status_success)" in body
    assert "(void)(hipFree(d_a) == hipSuccess ? rocblas_status_success : rocblas_status_internal_error);" in body
    assert "gpuparity_v1_shutdown();" in body and "cublas" not in body.replace("\"cublas failed", "")
    assert unsupported(result) == {}


def test_cublas_v1_from_c_uses_statement_expressions_and_hipblas_without_roc():
    c_file = port("libraries/cublas_v1_c.c", c_only=True, roc=True).text
    assert ("({ const float s0_ = (1.0f); const float s1_ = (0.0f); gpuparity_v1_status(rocblas_sgemv("
            "gpuparity_v1_handle(), gpuparity_v1_op(trans), n, n,") in c_file  # a character variable: the helper
    assert ("return ({ float r_ = 0; gpuparity_v1_status(rocblas_sdot(gpuparity_v1_handle(), n, d_x, 1, d_y, 1, "
            "&r_)); r_; });") in c_file
    assert "[&]" not in c_file and "nullptr" not in c_file
    hip = port("libraries/cublas_v1.cu")
    assert "static inline hipblasHandle_t gpuparity_v1_handle(void) { if (!gpuparity_v1_handle_) " \
           "hipblasCreate(&gpuparity_v1_handle_);" in hip.text
    assert "gpuparity_v1_status(hipblasSgemv(gpuparity_v1_handle(), HIPBLAS_OP_T," in hip.text
    # complex v1 calls (cuComplex by value) are named for a person
    cz = translate_source("#include <cublas.h>\nvoid f(cuComplex a, cuComplex* x) { cublasCscal(4, a, x, 1); }\n",
                          Options(roc=True))
    assert "complex" in unsupported(cz)["cublasCscal"] and "cublasCscal(4, a, x, 1)" in cz.text


# ---------------------------------------------------------------- cuSOLVER -> rocSOLVER (--roc)

def test_cusolver_solves_drop_workspaces_and_zero_info():
    result = port("libraries/cusolver_solve.cu", roc=True)
    out = result.text
    assert "#include <rocsolver/rocsolver.h>" in out and "rocblas_handle h;" in out
    assert "if (rocblas_create_handle(&h) != rocblas_status_success) return 1;" in out
    assert "rocblas_set_stream(h, stream);" in out and "rocblas_destroy_handle(h);" in out
    assert out.count("(void)(*(&lwork) = 0, rocblas_status_success);") == 2  # getrf, geqrf: no workspace
    assert "rocsolver_sgetrf(h, n, n, a, n, ipiv, info);" in out
    assert ("((void)hipMemset(info, 0, sizeof(int)), rocsolver_sgetrs(h, rocblas_operation_none, n, 1, a, n, ipiv, "
            "b, n));") in out
    assert "rocsolver_spotrf(h, rocblas_fill_upper, n, a, n, info);" in out
    assert ("rocblas_status st = ((void)hipMemset(info, 0, sizeof(int)), rocsolver_spotrs(h, rocblas_fill_upper, n, "
            "1, a, n, b, n));") in out
    assert "((void)hipMemset(info, 0, sizeof(int)), rocsolver_sgeqrf(h, n, n, a, n, tau));" in out
    # syevd: the work array becomes rocSOLVER's E (n elements), so the size query says n
    assert "(void)(*(&lwork) = (n), rocblas_status_success);" in out
    assert "rocsolver_ssyevd(h, rocblas_evect_original, rocblas_fill_lower, n, a, n, w, work, info);" in out
    assert unsupported(result) == {}
    older = port("libraries/cusolver_solve.cu", roc=True, hip_version=mappings.parse_version("4.0"))
    assert "needs HIP 4.1" in unsupported(older)["cusolverDnSpotrs"]  # rocsolver_spotrs came with ROCm 4.1


# ---------------------------------------------------------------- cuRAND -> rocRAND (--roc)

def test_curand_headers_generators_and_mtgp32_set_up():
    result = port("roc/curand_generators.cu", roc=True)
    out = result.text
    for want in ("#include <rocrand/rocrand.h>", "#include <rocrand/rocrand_kernel.h>",
                 "#include <rocrand/rocrand_mtgp32.h>", "#include <rocrand/rocrand_mtgp32_11213.h>",
                 "__global__ void draw_mtgp(rocrand_state_mtgp32* states,", "rocrand_state_philox4x32_10 s;",
                 "out[id] = rocrand_uniform4(&s);", "rocrand_state_mrg32k3a m;",
                 "normals[id] = rocrand_normal_double2(&m);", "bits[id] = rocrand(&m) ^ rocrand_poisson(&s, 4.0);",
                 "rocrand_create_generator(&gen, ROCRAND_RNG_PSEUDO_PHILOX4_32_10)", "rocrand_set_stream(gen, stream);",
                 "rocrand_set_seed(gen, 42ULL);", "rocrand_set_offset(gen, 0ULL);",
                 "rocrand_generate_log_normal(gen, d_host_out, n, 0.0f, 1.0f);", "mtgp32_params* params = nullptr;",
                 "    (void)ROCRAND_STATUS_SUCCESS;",  # rocRAND's state set-up loads the parameters itself
                 "rocrand_make_state_mtgp32(states, mtgp32dc_params_fast_11213, 64, 1234ULL);"):
        assert want in out, want
    assert unsupported(result) == {}
    assert "kernel parameters dropped" in notes(result)


def test_curand_headers_map_to_rocrand_and_hiprand():
    for header, roc, hip in (("curand_mtgp32_host.h", "rocrand/rocrand_mtgp32.h", "hiprand/hiprand_mtgp32_host.h"),
                             ("curand_philox4x32_x.h", "rocrand/rocrand_philox4x32_10.h", "hiprand/hiprand_kernel.h"),
                             ("curand_globals.h", "rocrand/rocrand_common.h", "hiprand/hiprand_kernel.h"),
                             ("curand_mtgp32dc_p_11213.h", "rocrand/rocrand_mtgp32_11213.h",
                              "rocrand/rocrand_mtgp32_11213.h"),
                             ("curand.h", "rocrand/rocrand.h", "hiprand/hiprand.h"),
                             ("cudnn_ops_infer.h", "miopen/miopen.h", "miopen/miopen.h")):
        assert mappings.map_header(header, V70, roc=True) == (True, roc)
        assert mappings.map_header(header, V70, roc=False) == (True, hip)


# ---------------------------------------------------------------- half2 shuffles

def test_half2_shuffles_get_overloads_for_hip_before_5_6():
    old = port("fidelity/half2_warp.cu", hip_version=V52)
    out = old.text
    assert "v = __hadd2(v, __shfl_xor(v, offset, 32));" in out  # the mask dropped (HIP < 6.2)
    assert "other = __shfl_down(v, offset);" in out
    overloads = out.split("#ifndef GPUPARITY_HALF_SHUFFLES")[1].split("#endif")[0]
    assert ("__device__ inline __half2 __shfl_xor(__half2 v, int mask, int width = warpSize) { union { int i; "
            "__half2 h; } t; t.h = v; t.i = __shfl_xor(t.i, mask, width); return t.h; }") in overloads
    assert overloads.count("__device__ inline") == 8
    assert out.index("#include <hip/hip_runtime.h>") < out.index("GPUPARITY_HALF_SHUFFLES")  # after the includes
    for target in ("5.6", "7.0"):  # HIP has them: nothing added
        assert "GPUPARITY_HALF_SHUFFLES" not in port("fidelity/half2_warp.cu",
                                                     hip_version=mappings.parse_version(target)).text
    plain = translate_source("__device__ int f(int v) { return __shfl_xor_sync(0xffffffff, v, 1); }\n",
                             Options(hip_version=V52)).text
    assert "GPUPARITY_HALF_SHUFFLES" not in plain  # no half type in the file


def test_every_hipify_roc_row_for_cublas_resolves_to_its_rocblas_name():
    """--roc is at least as complete as HIPIFY's cuBLAS ROC table: each row with a rocBLAS name
    (kept in the packaged map) is emitted as that name on the newest target."""
    apis = mappings.load_table()["apis"]
    rows = {name: e["roc"] for name, e in apis.items() if e.get("family") == "cublas" and "roc" in e}
    assert len(rows) > 700
    wrong = {}
    for name, roc in rows.items():
        res = mappings.resolve(name, V70, roc=True)
        want = mappings.ROC_OVERRIDES.get(name, roc)["name"]
        if roc.get("unsupported") or not roc.get("added"):
            continue
        if res is None or res.hip != want or not res.supported:
            wrong[name] = res
    assert wrong == {}
    # and a v1 file's calls of those names are rewritten, not renamed into a wrong call
    v1 = translate_source("#include <cublas.h>\nvoid f(float* x) { cublasSscal(4, 2.0f, x, 1); }\n", Options(roc=True))
    assert "rocblas_sscal(gpuparity_v1_handle(), 4, &s0_, x, 1)" in v1.text


# ---------------------------------------------------------------- calls left for a human

def test_names_inside_a_refused_or_unrecognised_cudnn_call_count_as_not_ported():
    """A call left as written is not ported, and neither are the CUDA names in its arguments:
    they must not count toward the converted share."""
    from gpuparity.port.score import score_uses
    src = ("#include <cudnn.h>\n"
           "void layer(cudnnHandle_t h, cudnnTensorDescriptor_t t, cudnnFilterDescriptor_t w,\n"
           "           cudnnConvolutionDescriptor_t c, const float* one, const float* zero,\n"
           "           float* x, float* wt, float* y, void* ws) {\n"
           "  cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 8, 32, 32, 16);\n"
           "  cudnnConvolutionForward(h, one, t, x, w, wt, c, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws,\n"
           "                          zero, t, y);\n"  # no workspace size: not the call's shape
           "  cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 16, 16, 3, 3);\n"
           "}\n")
    result = translate_source(src)
    out = result.text
    assert "  cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 8, 32, 32, 16);\n" in out
    assert ("  cudnnConvolutionForward(h, one, t, x, w, wt, c, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws,\n"
            "                          zero, t, y);\n") in out
    assert "  miopenSet4dTensorDescriptor(w, miopenFloat, 16, 16, 3, 3);\n" in out  # the ported call
    bad = [(u.name, u.line) for u in result.uses if not u.supported]
    assert bad == [("cudnnSetTensor4dDescriptor", 5), ("CUDNN_TENSOR_NHWC", 5), ("CUDNN_DATA_HALF", 5),
                   ("cudnnConvolutionForward", 6), ("CUDNN_CONVOLUTION_FWD_ALGO_GEMM", 6)]
    inside = {u.name: u.reason for u in result.uses if not u.supported}
    assert "in the arguments of cudnnSetTensor4dDescriptor" in inside["CUDNN_DATA_HALF"]
    assert "in the arguments of cudnnConvolutionForward" in inside["CUDNN_CONVOLUTION_FWD_ALGO_GEMM"]
    # ported: the header, 4 parameter types, the filter call and its 2 names (was 10 of 13)
    score = score_uses(result.uses)
    assert (score.uses, score.supported, score.unsupported) == (13, 8, 5)
    assert score.percent() == "61.5%"


def test_a_cudnn_call_named_only_for_a_human_keeps_its_arguments_as_written():
    """A call with only a reason (mappings' "why"), such as the LRN backward or the heuristic
    algorithm choice, is left whole: the human sees the original call beside the reason, and its
    arguments count as not ported."""
    from gpuparity.port.score import score_uses
    src = ("#include <cudnn.h>\n"
           "#define CHECK_DNN(e) do { if ((e) != CUDNN_STATUS_SUCCESS) return; } while (0)\n"
           "void back(cudnnHandle_t h, cudnnLRNDescriptor_t d, cudnnTensorDescriptor_t t,\n"
           "          cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t c, const float* one,\n"
           "          const float* zero, float* x, float* y, float* dy, float* dx) {\n"
           "  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];\n"
           "  int got = 0;\n"
           "  CHECK_DNN(cudnnGetConvolutionForwardAlgorithm_v7(h, t, w, c, t,\n"
           "                                                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));\n"
           "  CHECK_DNN(cudnnLRNCrossChannelBackward(h, d, CUDNN_LRN_CROSS_CHANNEL_DIM1, one, t, y, t, dy,\n"
           "                                         t, x, zero, t, dx));\n"
           "  CHECK_DNN(cudnnLRNCrossChannelForward(h, d, CUDNN_LRN_CROSS_CHANNEL_DIM1, one, t, x, zero, t, y));\n"
           "}\n")
    result = translate_source(src)
    out = result.text
    assert ("  CHECK_DNN(cudnnGetConvolutionForwardAlgorithm_v7(h, t, w, c, t,\n"
            "                                                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));\n"
            ) in out
    assert ("  CHECK_DNN(cudnnLRNCrossChannelBackward(h, d, CUDNN_LRN_CROSS_CHANNEL_DIM1, one, t, y, t, dy,\n"
            "                                         t, x, zero, t, dx));\n") in out
    assert "  CHECK_DNN(miopenLRNForward(h, d, one, t, x, zero, t, y, false, nullptr));\n" in out
    assert out.count("miopenLRNCrossChannel") == 0  # the backward's mode is not half-renamed
    bad = [(u.name, u.line) for u in result.uses if not u.supported]
    assert bad == [("CUDNN_CONVOLUTION_FWD_ALGO_COUNT", 6),  # no MIOpen count, outside a call too
                   ("cudnnGetConvolutionForwardAlgorithm_v7", 8), ("CUDNN_CONVOLUTION_FWD_ALGO_COUNT", 9),
                   ("cudnnLRNCrossChannelBackward", 10), ("CUDNN_LRN_CROSS_CHANNEL_DIM1", 10)]
    reasons = {(u.name, u.line): u.reason for u in result.uses if not u.supported}
    assert "benchmark with miopenFindConvolutionForwardAlgorithm" in reasons[
        ("cudnnGetConvolutionForwardAlgorithm_v7", 8)]
    assert "in the arguments of cudnnLRNCrossChannelBackward" in reasons[("CUDNN_LRN_CROSS_CHANNEL_DIM1", 10)]
    score = score_uses(result.uses)
    assert (score.uses, score.unsupported) == (15, 5) and score.percent() == "66.7%"  # was 12 of 15
