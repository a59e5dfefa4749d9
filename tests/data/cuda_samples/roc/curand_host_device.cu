// Uniform and normal numbers from cuRAND's host API, and per-thread states from its device
// API (curand_init / curand_uniform) in a kernel; the --roc port goes to rocRAND.
#include <cstdio>
#include <cuda_runtime.h>
#include <curand.h>
#include <curand_kernel.h>

#define CHECK_CURAND(call)                                          \
    do {                                                            \
        curandStatus_t status_ = (call);                            \
        if (status_ != CURAND_STATUS_SUCCESS) {                     \
            std::printf("cuRAND error %d\n", static_cast<int>(status_)); \
            return 1;                                               \
        }                                                           \
    } while (0)

__global__ void init_states(curandState_t* states, unsigned long long seed) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    curand_init(seed, i, 0, &states[i]);
}

__global__ void draw(curandState_t* states, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    curandState_t local = states[i];
    out[i] = curand_uniform(&local) + curand_normal(&local) * 0.0f;
    states[i] = local;
}

int main() {
    const int n = 1024;
    float* d_uniform;
    float* d_normal;
    cudaMalloc(&d_uniform, n * sizeof(float));
    cudaMalloc(&d_normal, n * sizeof(float));

    curandGenerator_t gen;
    CHECK_CURAND(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT));
    CHECK_CURAND(curandSetPseudoRandomGeneratorSeed(gen, 1234ULL));
    CHECK_CURAND(curandGenerateUniform(gen, d_uniform, n));
    CHECK_CURAND(curandGenerateNormal(gen, d_normal, n, 0.0f, 1.0f));
    CHECK_CURAND(curandDestroyGenerator(gen));

    curandState_t* states;
    float* d_draws;
    cudaMalloc(&states, n * sizeof(curandState_t));
    cudaMalloc(&d_draws, n * sizeof(float));
    init_states<<<n / 256, 256>>>(states, 42ULL);
    draw<<<n / 256, 256>>>(states, d_draws);
    cudaDeviceSynchronize();

    float h[4];
    cudaMemcpy(h, d_draws, sizeof(h), cudaMemcpyDeviceToHost);
    std::printf("draws: %f %f %f %f\n", h[0], h[1], h[2], h[3]);
    cudaFree(d_uniform);
    cudaFree(d_normal);
    cudaFree(states);
    cudaFree(d_draws);
    return 0;
}
