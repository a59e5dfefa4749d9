// Prefetches managed memory: HIP-CPU has hipMallocManaged but no hipMemPrefetchAsync.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(int* x) { x[threadIdx.x] = threadIdx.x; }

int main() {
    int* x;
    cudaMallocManaged(&x, 64 * sizeof(int));
    cudaMemPrefetchAsync(x, 64 * sizeof(int), 0, 0);
    fill<<<1, 64>>>(x);
    cudaDeviceSynchronize();
    std::printf("%s\n", x[63] == 63 ? "PASS" : "FAIL");
    return 0;
}
