// Reverse each block's slice through static shared memory (a barrier between write and read).
#include <cstdio>
#include <cuda_runtime.h>

constexpr int BLOCK = 128;

__global__ void reverse_blocks(const int* in, int* out) {
    __shared__ int tile[BLOCK];
    int base = blockIdx.x * BLOCK;
    tile[threadIdx.x] = in[base + threadIdx.x];
    __syncthreads();
    out[base + threadIdx.x] = tile[BLOCK - 1 - threadIdx.x];
}

int main() {
    const int blocks = 4, n = blocks * BLOCK;
    int h[n], r[n];
    for (int i = 0; i < n; ++i) h[i] = i * 3 + 1;
    int *d_in, *d_out;
    cudaMalloc(&d_in, sizeof h);
    cudaMalloc(&d_out, sizeof h);
    cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice);
    reverse_blocks<<<blocks, BLOCK>>>(d_in, d_out);
    cudaMemcpy(r, d_out, sizeof r, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int b = 0; b < blocks; ++b)
        for (int t = 0; t < BLOCK; ++t)
            bad += r[b * BLOCK + t] != h[b * BLOCK + BLOCK - 1 - t];
    std::printf("out[0]=%d out[%d]=%d\n", r[0], n - 1, r[n - 1]);
    cudaFree(d_in); cudaFree(d_out);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
