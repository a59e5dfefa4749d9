// Reads through a texture object: HIP-CPU has no textures.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fetch(cudaTextureObject_t tex, float* out) {
    out[threadIdx.x] = tex1Dfetch<float>(tex, threadIdx.x);
}

int main() {
    float* out;
    cudaMalloc(&out, 32 * sizeof(float));
    cudaTextureObject_t tex = 0;
    fetch<<<1, 32>>>(tex, out);
    std::printf("PASS\n");
    return 0;
}
