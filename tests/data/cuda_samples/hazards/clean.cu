// Clean CUDA code: no hazard may be reported for this file.
// Lane math in comments is not code: lane = threadIdx.x & 31; x % 32; __shared__ float s[32];
/* Neither is this: asm volatile("nop"); __CUDA_ARCH__; texture<float> t; __syncwarp(); */
#include <cstdio>
#include <cuda_runtime.h>

#define TILE 32
#define MASK_DOC "pass 0xffffffff as the mask"

__global__ void transpose(float* out, const float* in, int n) {
    __shared__ float tile[TILE][TILE + 1];  // a 2-D tile, not a per-warp array
    const int x = blockIdx.x * TILE + threadIdx.x;
    const int y = blockIdx.y * TILE + threadIdx.y;
    if (x < n && y < n) tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    if (x < n && y < n) out[x * n + y] = tile[threadIdx.x][threadIdx.y];
}

__global__ void reduce(const float* in, float* out) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    float v = in[blockIdx.x * blockDim.x + threadIdx.x];
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(__activemask(), v, offset);
    unsigned long long voters = __ballot_sync(__activemask(), v > 0.0f);
    if (lane == 0) out[warp] = v + __popcll(voters);
}

__global__ void __launch_bounds__(256) bounded(float* p) { p[threadIdx.x] *= 2.0f; }

int main() {
    const char* msg = "threadIdx.x & 31, asm(\"nop\"), __CUDA_ARCH__ and texture<float> in a string";
    int table[32];
    for (int i = 0; i < 32; ++i) table[i] = i % 32;  // a host loop, not a warp
    int blocks = (1000 + 255) / 256;
    unsigned bits = 1000u >> 5;
    float* d = nullptr;
    cudaMalloc(&d, 1024 * sizeof(float));
    bounded<<<blocks, 256, 48 * 1024>>>(d);
    std::printf("%s %d %d %u\n", msg, table[5], blocks, bits);
    return 0;
}
