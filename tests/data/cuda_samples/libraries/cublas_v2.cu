// cuBLAS v2 as a training step uses it, written for gpuparity's tests (text checks with
// --roc: Debian ships no rocBLAS): handle and stream, pointer mode, status strings,
// operation / fill / side / diagonal enums, batched and strided-batched GEMM, and a
// mixed-precision GemmEx with FP16 inputs and FP32 compute.
#include <cstdio>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>

#define CHECK_BLAS(call) do { cublasStatus_t s_ = (call); \
    if (s_ != CUBLAS_STATUS_SUCCESS) std::printf("cublas: %s\n", cublasGetStatusString(s_)); } while (0)

void step(cudaStream_t stream, int n, int batch, const float* a, const float* b, float* c,
          const float* const* a_list, const float* const* b_list, float* const* c_list,
          const __half* ha, const __half* hb, float* hc, float* d_alpha, float* d_beta) {
    cublasHandle_t handle;
    CHECK_BLAS(cublasCreate(&handle));
    CHECK_BLAS(cublasSetStream(handle, stream));
    const float alpha = 1.0f, beta = 0.0f;
    CHECK_BLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
    CHECK_BLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &alpha, a, n, b, n, &beta, c, n));
    CHECK_BLAS(cublasSgemmBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a_list, n, b_list, n,
                                  &beta, c_list, n, batch));
    CHECK_BLAS(cublasSgemmStridedBatched(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, a, n,
                                         (long long)n * n, b, n, (long long)n * n, &beta, c, n,
                                         (long long)n * n, batch));
    CHECK_BLAS(cublasSsyrk(handle, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, n, n, &alpha, a, n, &beta, c, n));
    CHECK_BLAS(cublasStrsm(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT,
                           n, n, &alpha, a, n, c, n));
    CHECK_BLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, ha, CUDA_R_16F, n, hb,
                            CUDA_R_16F, n, &beta, hc, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CHECK_BLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
    CHECK_BLAS(cublasSaxpy(handle, n, d_alpha, a, 1, c, 1));
    float result = 0.0f;
    CHECK_BLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
    CHECK_BLAS(cublasSdot(handle, n, a, 1, c, 1, &result));
    int best = 0;
    CHECK_BLAS(cublasIsamax(handle, n, c, 1, &best));
    cudaStream_t current;
    CHECK_BLAS(cublasGetStream(handle, &current));
    CHECK_BLAS(cublasDestroy(handle));
}
