// Text-only checks (Debian ships no hipCUB or hipBLAS): cuBLAS v1 (legacy, no handle) calls,
// CUB through ::cub:: and `using namespace cub`, and CUDA's math constants header.
#include <cstdio>
#include "cublas.h"
#include <cub/cub.cuh>
#include <math_constants.h>

using namespace cub;

float circle(float r) { return CUDART_PI_F * r * r; }

void reduce(const int* in, int* out, int n, void* tmp, size_t bytes) {
    ::cub::DeviceReduce::Sum(tmp, bytes, in, out, n);
    cub::DeviceReduce::Max(tmp, bytes, in, out, n);
}

int blas_v1(float* devPtr, int n) {
    cublasStatus stat = cublasAlloc(n, sizeof(float), (void**)&devPtr);
    if (stat != CUBLAS_STATUS_SUCCESS) return 1;
    cublasSscal(n, 2.0f, devPtr, 1);
    return cublasGetError() == CUBLAS_STATUS_SUCCESS ? 0 : 1;
}
