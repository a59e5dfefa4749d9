// PLANTED ERROR: the tile read one index off. Reverse each block's slice through static shared memory (a barrier between write and read).
#include <cstdio>
#include <hip/hip_runtime.h>

constexpr int BLOCK = 128;

__global__ void reverse_blocks(const int* in, int* out) {
    __shared__ int tile[BLOCK];
    int base = blockIdx.x * BLOCK;
    tile[threadIdx.x] = in[base + threadIdx.x];
    __syncthreads();
    out[base + threadIdx.x] = tile[(BLOCK - threadIdx.x) % BLOCK];
}

int main() {
    const int blocks = 4, n = blocks * BLOCK;
    int h[n], r[n];
    for (int i = 0; i < n; ++i) h[i] = i * 3 + 1;
    int *d_in, *d_out;
    hipMalloc(&d_in, sizeof h);
    hipMalloc(&d_out, sizeof h);
    hipMemcpy(d_in, h, sizeof h, hipMemcpyHostToDevice);
    reverse_blocks<<<blocks, BLOCK>>>(d_in, d_out);
    hipMemcpy(r, d_out, sizeof r, hipMemcpyDeviceToHost);
    int bad = 0;
    for (int b = 0; b < blocks; ++b)
        for (int t = 0; t < BLOCK; ++t)
            bad += r[b * BLOCK + t] != h[b * BLOCK + BLOCK - 1 - t];
    std::printf("out[0]=%d out[%d]=%d\n", r[0], n - 1, r[n - 1]);
    hipFree(d_in); hipFree(d_out);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
