// A template kernel (y = a*x + y) launched for float and for double.
#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>

template <typename T>
__global__ void axpy(T a, const T* x, T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

template <typename T>
int check(const char* name) {
    const int n = 300;
    T hx[n], hy[n], got[n];
    for (int i = 0; i < n; ++i) { hx[i] = T(i) / T(8); hy[i] = T(1) - T(i); }
    T *x, *y;
    cudaMalloc(&x, sizeof hx);
    cudaMalloc(&y, sizeof hy);
    cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
    cudaMemcpy(y, hy, sizeof hy, cudaMemcpyHostToDevice);
    axpy<T><<<(n + 63) / 64, 64>>>(T(3), x, y, n);
    cudaMemcpy(got, y, sizeof got, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += std::fabs(double(got[i] - (T(3) * hx[i] + hy[i]))) > 1e-6;
    std::printf("%s: y[10]=%g y[299]=%g\n", name, double(got[10]), double(got[n - 1]));
    cudaFree(x); cudaFree(y);
    return bad;
}

int main() {
    int bad = check<float>("float") + check<double>("double");
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
