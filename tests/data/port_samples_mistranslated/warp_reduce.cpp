// PLANTED ERROR: width 16 where the CUDA code has 32.
// (AMD's wavefront is 64 lanes: the width keeps the groups at 32).
#include <cstdio>
#include <hip/hip_runtime.h>

__global__ void group_sums(const int* in, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down(v, offset, 16);
    if (threadIdx.x % 32 == 0) out[i / 32] = v;
}

int main() {
    const int n = 512, groups = n / 32;
    int h[n], got[groups];
    for (int i = 0; i < n; ++i) h[i] = (i * 7) % 13 - 6;
    int *d_in, *d_out;
    hipMalloc(&d_in, sizeof h);
    hipMalloc(&d_out, sizeof got);
    hipMemcpy(d_in, h, sizeof h, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(group_sums, dim3(n / 128), dim3(128), 0, 0, d_in, d_out);
    hipMemcpy(got, d_out, sizeof got, hipMemcpyDeviceToHost);
    int bad = 0;
    for (int g = 0; g < groups; ++g) {
        int s = 0;
        for (int k = 0; k < 32; ++k) s += h[g * 32 + k];
        bad += got[g] != s;
    }
    std::printf("sums[0]=%d sums[%d]=%d\n", got[0], groups - 1, got[groups - 1]);
    hipFree(d_in); hipFree(d_out);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
