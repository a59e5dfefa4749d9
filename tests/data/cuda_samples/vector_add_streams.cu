// Vector add split across CUDA streams, timed with CUDA events.
#include <cstdio>
#include <cuda_runtime.h>
#include "common/cuda_check.cuh"

__global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

int main() {
    const int n = 1 << 22;
    const int n_streams = 4;
    const int chunk = n / n_streams;
    const size_t bytes = n * sizeof(float);
    const size_t chunk_bytes = chunk * sizeof(float);

    float *h_a, *h_b, *h_c;
    CUDA_CHECK(cudaMallocHost(&h_a, bytes));  // pinned memory: cudaMemcpyAsync needs it to overlap
    CUDA_CHECK(cudaMallocHost(&h_b, bytes));
    CUDA_CHECK(cudaMallocHost(&h_c, bytes));
    for (int i = 0; i < n; ++i) {
        h_a[i] = 1.0f;
        h_b[i] = 2.0f;
    }

    float *d_a, *d_b, *d_c;
    CUDA_CHECK(cudaMalloc(&d_a, bytes));
    CUDA_CHECK(cudaMalloc(&d_b, bytes));
    CUDA_CHECK(cudaMalloc(&d_c, bytes));

    cudaStream_t streams[n_streams];
    for (int s = 0; s < n_streams; ++s)
        CUDA_CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));

    CUDA_CHECK(cudaEventRecord(start, 0));
    for (int s = 0; s < n_streams; ++s) {
        const int off = s * chunk;
        CUDA_CHECK(cudaMemcpyAsync(d_a + off, h_a + off, chunk_bytes, cudaMemcpyHostToDevice, streams[s]));
        CUDA_CHECK(cudaMemcpyAsync(d_b + off, h_b + off, chunk_bytes, cudaMemcpyHostToDevice, streams[s]));
        const int threads = 256;
        const int blocks = (chunk + threads - 1) / threads;
        vector_add<<<blocks, threads, 0, streams[s]>>>(d_a + off, d_b + off, d_c + off, chunk);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaMemcpyAsync(h_c + off, d_c + off, chunk_bytes, cudaMemcpyDeviceToHost, streams[s]));
    }
    CUDA_CHECK(cudaEventRecord(stop, 0));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));

    int bad = 0;
    for (int i = 0; i < n; ++i) bad += h_c[i] != 3.0f;
    std::printf("vector add: %d elements, %d wrong, %.3f ms (cudaEventElapsedTime)\n", n, bad, ms);

    for (int s = 0; s < n_streams; ++s) CUDA_CHECK(cudaStreamDestroy(streams[s]));
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
    CUDA_CHECK(cudaFree(d_c));
    CUDA_CHECK(cudaFreeHost(h_a));
    CUDA_CHECK(cudaFreeHost(h_b));
    CUDA_CHECK(cudaFreeHost(h_c));
    return bad != 0;
}
