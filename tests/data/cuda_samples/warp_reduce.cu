// Block sum with warp shuffles: each warp reduces in registers, then warp leaders
// combine their partial sums through shared memory.
#include <cstdio>
#include <cuda_runtime.h>
#include "common/cuda_check.cuh"

__inline__ __device__ float warp_reduce_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

__global__ void block_sum(const float* in, float* out, int n) {
    extern __shared__ float warp_sums[];  // one slot per warp, sized at launch
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        v += in[i];
    v = warp_reduce_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    const int n_warps = (blockDim.x + warpSize - 1) / warpSize;
    if (warp == 0) {
        v = lane < n_warps ? warp_sums[lane] : 0.0f;
        v = warp_reduce_sum(v);
        if (lane == 0) atomicAdd(out, v);
    }
}

int main() {
    const int n = 1 << 20;
    const int threads = 256;
    const int blocks = 120;
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    const size_t smem = (threads + prop.warpSize - 1) / prop.warpSize * sizeof(float);

    float* h_in = new float[n];
    for (int i = 0; i < n; ++i) h_in[i] = 1.0f;
    float *d_in, *d_out;
    CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_out, sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_out, 0, sizeof(float)));
    block_sum<<<blocks, threads, smem>>>(d_in, d_out, n);
    CUDA_CHECK(cudaGetLastError());
    float sum = 0.0f;
    CUDA_CHECK(cudaMemcpy(&sum, d_out, sizeof(float), cudaMemcpyDeviceToHost));
    std::printf("sum = %.0f (expected %d)\n", sum, n);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    delete[] h_in;
    return sum != n;
}
