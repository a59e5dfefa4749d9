// Written for gpuparity's tests: cuRAND's host API and a device generator (hipRAND, or rocRAND
// with --roc).
#include <cuda_runtime.h>
#include <curand.h>
#include <curand_kernel.h>

__global__ void draw(unsigned long long seed, float* out) {
    curandState state;
    curand_init(seed, threadIdx.x, 0, &state);
    out[threadIdx.x] = curand_uniform(&state);
}

int fill(float* d, size_t n) {
    curandGenerator_t gen;
    if (curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT) != CURAND_STATUS_SUCCESS) return 1;
    curandSetPseudoRandomGeneratorSeed(gen, 1234ULL);
    curandGenerateUniform(gen, d, n);
    curandDestroyGenerator(gen);
    draw<<<1, 32>>>(7ULL, d);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
