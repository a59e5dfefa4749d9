// Vector scale. Author: René François (this comment is Latin-1, not UTF-8).
// No #include of the CUDA runtime: nvcc provides it implicitly; HIP code must include it.
#include <cstdio>

__global__ void scale(float* x, float a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

int main() {
    const int n = 256;
    float* d;
    cudaError_t err = cudaMalloc(&d, n * sizeof(float));
    if (err != cudaSuccess) {
        std::printf("cudaMalloc failed: %s\n", cudaGetErrorString(err));
        return 1;
    }
    scale<<<1, n>>>(d, 2.0f, n);
    cudaDeviceSynchronize();
    cudaFree(d);
    return 0;
}
