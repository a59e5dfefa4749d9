// Lane id and a saturating add through inline PTX, each with a portable fallback
// for compilers that do not target NVIDIA PTX.
#include <cstdio>
#include <cuda_runtime.h>
#include "common/cuda_check.cuh"

__device__ __forceinline__ unsigned lane_id() {
#if defined(__CUDA_ARCH__)
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
#else
    return threadIdx.x % warpSize;
#endif
}

__device__ __forceinline__ int add_sat(int a, int b) {
#if defined(__CUDA_ARCH__)
    int r;
    asm("add.sat.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
#else
    long long r = (long long)a + b;
    return r > 2147483647LL ? 2147483647 : (r < -2147483647LL - 1 ? -2147483647 - 1 : (int)r);
#endif
}

__global__ void lanes(unsigned* out, int* sums) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = lane_id();
    sums[i] = add_sat(2147483000, i);
}

int main() {
    const int n = 256;
    unsigned* d_out;
    int* d_sums;
    CUDA_CHECK(cudaMalloc(&d_out, n * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&d_sums, n * sizeof(int)));
    lanes<<<1, n>>>(d_out, d_sums);
    CUDA_CHECK(cudaDeviceSynchronize());
    unsigned h_out[n];
    CUDA_CHECK(cudaMemcpy(h_out, d_out, sizeof(h_out), cudaMemcpyDeviceToHost));
    std::printf("lane of thread 37: %u\n", h_out[37]);
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_sums));
    return 0;
}
