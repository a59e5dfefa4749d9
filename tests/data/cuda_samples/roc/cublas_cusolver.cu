// Text-only --roc checks (Debian ships neither rocBLAS nor rocSOLVER): cuBLAS v2 with a
// mixed-precision GemmEx, whose rocBLAS call takes D and two more arguments, and a Cholesky
// factorisation through cuSOLVER, whose rocSOLVER call allocates its own workspace.
#include <cublas_v2.h>
#include <cusolverDn.h>

int gemm_ex(cublasHandle_t h, const float* a, const float* b, float* c, int n) {
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &alpha, a, CUDA_R_32F, n, b,
                                     CUDA_R_32F, n, &beta, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT);
    return st == CUBLAS_STATUS_SUCCESS ? 0 : 1;
}

int cholesky(cusolverDnHandle_t solver, float* a, int n, int* info) {
    int lwork = 0;
    float* work = nullptr;
    cusolverDnSpotrf_bufferSize(solver, CUBLAS_FILL_MODE_LOWER, n, a, n, &lwork);
    cudaMalloc(&work, sizeof(float) * (lwork > 0 ? lwork : 1));
    cusolverStatus_t st = cusolverDnSpotrf(solver, CUBLAS_FILL_MODE_LOWER, n, a, n, work, lwork, info);
    cudaFree(work);
    return st == CUSOLVER_STATUS_SUCCESS ? 0 : 1;
}
