// cuRAND host and device generators beyond XORWOW, written for gpuparity's tests: a
// Philox host generator on a stream, MTGP32 device states from the precomputed parameter
// set, and Philox / MRG32k3a device states. Compiled with hipcc against Debian's rocRAND.
#include <cuda_runtime.h>
#include <curand.h>
#include <curand_kernel.h>
#include <curand_mtgp32_host.h>
#include <curand_mtgp32dc_p_11213.h>

__global__ void draw_mtgp(curandStateMtgp32_t* states, float* out, int per_block) {
    for (int i = threadIdx.x; i < per_block; i += blockDim.x)
        out[blockIdx.x * per_block + i] = curand_uniform(&states[blockIdx.x]);
}

__global__ void draw_philox(unsigned long long seed, float4* out, double2* normals, unsigned* bits) {
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    curandStatePhilox4_32_10_t s;
    curand_init(seed, id, 0, &s);
    out[id] = curand_uniform4(&s);
    curandStateMRG32k3a_t m;
    curand_init(seed, id, 0, &m);
    normals[id] = curand_normal2_double(&m);
    bits[id] = curand(&m) ^ curand_poisson(&s, 4.0);
}

int run(cudaStream_t stream, float* d_out, float* d_host_out, size_t n) {
    curandGenerator_t gen;
    if (curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10) != CURAND_STATUS_SUCCESS) return 1;
    curandSetStream(gen, stream);
    curandSetPseudoRandomGeneratorSeed(gen, 42ULL);
    curandSetGeneratorOffset(gen, 0ULL);
    curandGenerateUniform(gen, d_host_out, n);
    curandGenerateLogNormal(gen, d_host_out, n, 0.0f, 1.0f);
    curandDestroyGenerator(gen);

    curandStateMtgp32_t* states = nullptr;
    mtgp32_kernel_params* params = nullptr;
    cudaMalloc(&states, 64 * sizeof(curandStateMtgp32_t));
    cudaMalloc(&params, sizeof(mtgp32_kernel_params));
    curandMakeMTGP32Constants(mtgp32dc_params_fast_11213, params);
    curandMakeMTGP32KernelState(states, mtgp32dc_params_fast_11213, params, 64, 1234ULL);
    draw_mtgp<<<64, 256, 0, stream>>>(states, d_out, 1024);
    cudaFree(states);
    cudaFree(params);
    return 0;
}
