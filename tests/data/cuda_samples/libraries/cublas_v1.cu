// cuBLAS v1 (the legacy cublas.h API: no handle, scalars by value, 'N'/'T' characters),
// written for gpuparity's tests: a least-squares style update with the v1 set-up calls.
#include <cstdio>
#include <cublas.h>

float update(const float* h_a, const float* h_x, int n) {
    float *d_a = nullptr, *d_x = nullptr, *d_y = nullptr;
    if (cublasInit() != CUBLAS_STATUS_SUCCESS) return -1.0f;
    cublasAlloc(n * n, sizeof(float), (void**)&d_a);
    cublasAlloc(n, sizeof(float), (void**)&d_x);
    cublasAlloc(n, sizeof(float), (void**)&d_y);
    cublasSetMatrix(n, n, sizeof(float), h_a, n, d_a, n);
    cublasSetVector(n, sizeof(float), h_x, 1, d_x, 1);
    cublasSgemv('T', n, n, 1.0f, d_a, n, d_x, 1, 0.0f, d_y, 1);
    cublasSgemm('N', 'T', n, n, 1, 0.5f, d_x, n, d_x, n, 1.0f, d_a, n);
    cublasStrsv('U', 'N', 'N', n, d_a, n, d_y, 1);
    cublasSaxpy(n, -1.0f, d_x, 1, d_y, 1);
    float norm = cublasSnrm2(n, d_y, 1);
    int peak = cublasIsamax(n, d_y, 1);
    float dot = cublasSdot(n, d_x, 1, d_y, 1);
    if (cublasGetError() != CUBLAS_STATUS_SUCCESS) std::printf("cublas failed\n");
    std::printf("norm %f peak %d dot %f\n", norm, peak, dot);
    cublasFree(d_a);
    cublasFree(d_x);
    cublasFree(d_y);
    cublasShutdown();
    return norm;
}
