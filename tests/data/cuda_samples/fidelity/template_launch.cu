// Launch shapes that --launch ggl must turn into hipLaunchKernelGGL calls that hipcc accepts:
// template kernels (HIP_KERNEL_NAME), sizes already written as dim3(...), a namespace-qualified
// kernel, a global-scope ::kernel, and launches inside macros.
#include <cstdio>
#include <cuda_runtime.h>

template <typename T, int SCALE>
__global__ void scale(T* data, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] *= SCALE;
}

namespace kernels {
__global__ void fill(float* data, float value, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = value;
}
}  // namespace kernels

__global__ void touch(float* data) { data[threadIdx.x] += 1.0f; }

#define LAUNCH_FILL(ptr, n) kernels::fill<<<((n) + 255) / 256, 256>>>(ptr, 2.0f, n)
#define LAUNCH_SCALE(ptr, n)                                   \
    scale<float, 3><<<dim3(((n) + 127) / 128), dim3(128)>>>(ptr, n)

int main() {
    const int n = 1000;
    float* d = nullptr;
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    cudaMalloc(&d, n * sizeof(float));
    LAUNCH_FILL(d, n);
    LAUNCH_SCALE(d, n);
    scale<float, 2><<<dim3((n + 255) / 256, 1, 1), 256, 0, stream>>>(d, n);
    ::touch<<<1, 32>>>(d);
    kernels::fill<<<dim3(4), dim3(256), 0, stream>>>(d, 1.0f, n);
    cudaStreamSynchronize(stream);
    float h = 0.0f;
    cudaMemcpy(&h, d, sizeof(float), cudaMemcpyDeviceToHost);
    std::printf("d[0] = %f\n", h);
    cudaFree(d);
    cudaStreamDestroy(stream);
    return 0;
}
