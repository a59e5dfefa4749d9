// Dense solves with cuSOLVER, written for gpuparity's tests (text checks with --roc: Debian
// ships no rocSOLVER): LU solve, Cholesky solve, QR and a symmetric eigen-decomposition,
// each with the workspace query cuSOLVER needs and rocSOLVER does not.
#include <cuda_runtime.h>
#include <cusolverDn.h>

int solve(cudaStream_t stream, int n, float* a, float* b, int* ipiv, int* info, float* tau, float* w) {
    cusolverDnHandle_t h;
    if (cusolverDnCreate(&h) != CUSOLVER_STATUS_SUCCESS) return 1;
    cusolverDnSetStream(h, stream);
    int lwork = 0;
    float* work = nullptr;
    cusolverDnSgetrf_bufferSize(h, n, n, a, n, &lwork);
    cudaMalloc(&work, sizeof(float) * lwork);
    cusolverDnSgetrf(h, n, n, a, n, work, ipiv, info);
    cusolverDnSgetrs(h, CUBLAS_OP_N, n, 1, a, n, ipiv, b, n, info);
    cusolverDnSpotrf(h, CUBLAS_FILL_MODE_UPPER, n, a, n, work, lwork, info);
    cusolverStatus_t st = cusolverDnSpotrs(h, CUBLAS_FILL_MODE_UPPER, n, 1, a, n, b, n, info);
    cusolverDnSgeqrf_bufferSize(h, n, n, a, n, &lwork);
    cusolverDnSgeqrf(h, n, n, a, n, tau, work, lwork, info);
    cusolverDnSsyevd_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, a, n, w, &lwork);
    cudaFree(work);
    cudaMalloc(&work, sizeof(float) * lwork);
    cusolverDnSsyevd(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, a, n, w, work, lwork, info);
    cudaFree(work);
    cusolverDnDestroy(h);
    return st == CUSOLVER_STATUS_SUCCESS ? 0 : 1;
}
