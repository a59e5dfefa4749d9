// A cubic evaluated with coefficients in __constant__ memory, set by cudaMemcpyToSymbol.
#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>

__constant__ float coeffs[4];

__device__ float poly(float x) {
    return ((coeffs[3] * x + coeffs[2]) * x + coeffs[1]) * x + coeffs[0];
}

__global__ void eval(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = poly(x[i]);
}

int main() {
    const int n = 200;
    const float c[4] = {1.0f, -2.0f, 0.5f, 0.25f};
    float hx[n], got[n];
    for (int i = 0; i < n; ++i) hx[i] = -2.0f + 0.02f * i;
    cudaMemcpyToSymbol(coeffs, c, sizeof c);
    float *x, *y;
    cudaMalloc(&x, sizeof hx);
    cudaMalloc(&y, sizeof got);
    cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
    eval<<<(n + 63) / 64, 64>>>(x, y, n);
    cudaMemcpy(got, y, sizeof got, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; ++i) {
        float e = ((c[3] * hx[i] + c[2]) * hx[i] + c[1]) * hx[i] + c[0];
        bad += std::fabs(got[i] - e) > 1e-4f * (1.0f + std::fabs(e));
    }
    std::printf("y[0]=%.4f y[199]=%.4f\n", got[0], got[n - 1]);
    cudaFree(x); cudaFree(y);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
