// The sum of 4096 integers: a shared-memory tree per block, then one atomicAdd per block.
#include <cstdio>
#include <cuda_runtime.h>

#define THREADS 128

__global__ void total(const int* in, int n, int* sum) {
    __shared__ int s[THREADS];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(sum, s[0]);
}

int main() {
    const int n = 4096;
    static int h[n];
    long expect = 0;
    for (int i = 0; i < n; ++i) { h[i] = (i * 31) % 97 - 40; expect += h[i]; }
    int *d, *sum, got = 0;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&sum, sizeof(int));
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemcpy(sum, &got, sizeof(int), cudaMemcpyHostToDevice);
    total<<<n / THREADS, THREADS>>>(d, n, sum);
    cudaMemcpy(&got, sum, sizeof(int), cudaMemcpyDeviceToHost);
    std::printf("sum=%d expected=%ld\n", got, expect);
    cudaFree(d); cudaFree(sum);
    std::printf("%s\n", got == expect ? "PASS" : "FAIL");
    return got != expect;
}
