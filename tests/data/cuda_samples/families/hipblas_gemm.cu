// Written for gpuparity's tests: a cuBLAS v2 GEMM (hipBLAS; Debian ships no hipBLAS headers).
#include <cuda_runtime.h>
#include <cublas_v2.h>

int gemm(const float* a, const float* b, float* c, int n) {
    cublasHandle_t handle;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 1;
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t status = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
    cublasDestroy(handle);
    return status == CUBLAS_STATUS_SUCCESS ? 0 : 1;
}
