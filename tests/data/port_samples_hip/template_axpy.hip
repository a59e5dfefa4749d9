// Human port of template_axpy.cu: the launch kept as <<<>>> (hipcc takes it).
#include <cmath>
#include <cstdio>
#include <hip/hip_runtime.h>

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
    hipMalloc(&x, sizeof hx);
    hipMalloc(&y, sizeof hy);
    hipMemcpy(x, hx, sizeof hx, hipMemcpyHostToDevice);
    hipMemcpy(y, hy, sizeof hy, hipMemcpyHostToDevice);
    axpy<T><<<(n + 63) / 64, 64>>>(T(3), x, y, n);
    hipMemcpy(got, y, sizeof got, hipMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += std::fabs(double(got[i] - (T(3) * hx[i] + hy[i]))) > 1e-6;
    std::printf("%s: y[10]=%g y[299]=%g\n", name, double(got[10]), double(got[n - 1]));
    hipFree(x); hipFree(y);
    return bad;
}

int main() {
    int bad = check<float>("float") + check<double>("double");
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
