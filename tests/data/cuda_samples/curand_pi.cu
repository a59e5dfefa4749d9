// Monte Carlo estimate of pi: cuRAND device API in the kernel, host API for a check.
#include <cstdio>
#include <cuda_runtime.h>
#include <curand.h>
#include <curand_kernel.h>
#include "common/cuda_check.cuh"

__global__ void setup_states(curandState* states, unsigned long long seed) {
    const int id = blockIdx.x * blockDim.x + threadIdx.x;
    curand_init(seed, id, 0, &states[id]);
}

__global__ void count_hits(curandState* states, int samples, unsigned long long* hits) {
    const int id = blockIdx.x * blockDim.x + threadIdx.x;
    curandState local = states[id];
    unsigned long long count = 0;
    for (int i = 0; i < samples; ++i) {
        const float x = curand_uniform(&local);
        const float y = curand_uniform(&local);
        count += (x * x + y * y <= 1.0f);
    }
    states[id] = local;
    atomicAdd(hits, count);
}

int main() {
    const int blocks = 64, threads = 128, samples = 1000;
    const int n_threads = blocks * threads;
    curandState* d_states;
    unsigned long long* d_hits;
    CUDA_CHECK(cudaMalloc(&d_states, n_threads * sizeof(curandState)));
    CUDA_CHECK(cudaMalloc(&d_hits, sizeof(unsigned long long)));
    CUDA_CHECK(cudaMemset(d_hits, 0, sizeof(unsigned long long)));
    setup_states<<<blocks, threads>>>(d_states, 1234ULL);
    count_hits<<<blocks, threads>>>(d_states, samples, d_hits);
    CUDA_CHECK(cudaGetLastError());
    unsigned long long hits = 0;
    CUDA_CHECK(cudaMemcpy(&hits, d_hits, sizeof(hits), cudaMemcpyDeviceToHost));
    std::printf("pi ~ %.5f\n", 4.0 * hits / (double(n_threads) * samples));

    // Host API: fill a buffer with uniform numbers from a Philox generator.
    curandGenerator_t gen;
    float* d_buf;
    CUDA_CHECK(cudaMalloc(&d_buf, 1024 * sizeof(float)));
    if (curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10) != CURAND_STATUS_SUCCESS) return 1;
    curandSetPseudoRandomGeneratorSeed(gen, 42ULL);
    curandGenerateUniform(gen, d_buf, 1024);
    curandDestroyGenerator(gen);
    CUDA_CHECK(cudaFree(d_buf));
    CUDA_CHECK(cudaFree(d_states));
    CUDA_CHECK(cudaFree(d_hits));
    return 0;
}
