// Sums of 32-lane groups with __shfl_down_sync and an explicit width of 32: the same groups on a
// 32-wide NVIDIA warp and a 64-wide AMD wavefront (width=warpSize would sum 64 lanes there).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void group_sums(const int* in, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset, 32);
    if (threadIdx.x % 32 == 0) out[i / 32] = v;
}

int main() {
    const int n = 512, groups = n / 32;
    int h[n], got[groups];
    for (int i = 0; i < n; ++i) h[i] = (i * 7) % 13 - 6;
    int *d_in, *d_out;
    cudaMalloc(&d_in, sizeof h);
    cudaMalloc(&d_out, sizeof got);
    cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice);
    group_sums<<<n / 128, 128>>>(d_in, d_out);
    cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int g = 0; g < groups; ++g) {
        int s = 0;
        for (int k = 0; k < 32; ++k) s += h[g * 32 + k];
        bad += got[g] != s;
    }
    std::printf("sums[0]=%d sums[%d]=%d\n", got[0], groups - 1, got[groups - 1]);
    cudaFree(d_in); cudaFree(d_out);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
