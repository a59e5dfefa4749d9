// Block sums through dynamically sized shared memory (size given at the launch): a tree
// reduction over `extern __shared__ float partial[]`.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void block_sums(const float* in, float* out) {
    extern __shared__ float partial[];
    unsigned t = threadIdx.x;
    partial[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) partial[t] += partial[t + stride];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}

int main() {
    const int threads = 64, blocks = 6, n = threads * blocks;
    float h[n], got[blocks];
    for (int i = 0; i < n; ++i) h[i] = static_cast<float>(i % 17);
    float *d_in, *d_out;
    cudaMalloc(&d_in, sizeof h);
    cudaMalloc(&d_out, sizeof got);
    cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice);
    block_sums<<<blocks, threads, threads * sizeof(float)>>>(d_in, d_out);
    cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int b = 0; b < blocks; ++b) {
        float s = 0.0f;
        for (int k = 0; k < threads; ++k) s += h[b * threads + k];
        bad += got[b] != s;
    }
    std::printf("sum[0]=%g sum[5]=%g\n", got[0], got[blocks - 1]);
    cudaFree(d_in); cudaFree(d_out);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
