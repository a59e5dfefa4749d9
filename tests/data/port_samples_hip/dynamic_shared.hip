// Human port of dynamic_shared.cu: the dynamic shared array through HIP_DYNAMIC_SHARED.
#include <cstdio>
#include <hip/hip_runtime.h>

__global__ void block_sums(const float* in, float* out) {
    HIP_DYNAMIC_SHARED(float, partial)
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
    hipMalloc(&d_in, sizeof h);
    hipMalloc(&d_out, sizeof got);
    hipMemcpy(d_in, h, sizeof h, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(block_sums, dim3(blocks), dim3(threads), threads * sizeof(float), 0, d_in, d_out);
    hipMemcpy(got, d_out, sizeof got, hipMemcpyDeviceToHost);
    int bad = 0;
    for (int b = 0; b < blocks; ++b) {
        float s = 0.0f;
        for (int k = 0; k < threads; ++k) s += h[b * threads + k];
        bad += got[b] != s;
    }
    std::printf("sum[0]=%g sum[5]=%g\n", got[0], got[blocks - 1]);
    hipFree(d_in); hipFree(d_out);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
