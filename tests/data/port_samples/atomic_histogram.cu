// A 16-bin histogram of a pseudo-random sequence with atomicAdd on global memory.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void histogram(const unsigned* data, int n, unsigned* bins) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&bins[data[i] % 16], 1u);
}

int main() {
    const int n = 5000;
    static unsigned h[n];
    unsigned x = 12345u, expect[16] = {0}, got[16];
    for (int i = 0; i < n; ++i) { x = x * 1664525u + 1013904223u; h[i] = x >> 8; ++expect[h[i] % 16]; }
    unsigned *d, *bins;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&bins, sizeof got);
    cudaMemset(bins, 0, sizeof got);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    histogram<<<8, 64>>>(d, n, bins);
    cudaMemcpy(got, bins, sizeof got, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int b = 0; b < 16; ++b) bad += got[b] != expect[b];
    std::printf("bins[0]=%u bins[15]=%u\n", got[0], got[15]);
    cudaFree(d); cudaFree(bins);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
