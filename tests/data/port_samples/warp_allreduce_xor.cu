// Butterfly all-reduce (max) in 32-lane groups with __shfl_xor_sync, width 32: every lane ends
// with its group's maximum.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void group_max(const float* in, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    for (int mask = 16; mask > 0; mask >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, mask, 32));
    out[i] = v;
}

int main() {
    const int n = 256;
    float h[n], got[n];
    for (int i = 0; i < n; ++i) h[i] = static_cast<float>((i * 37) % 101) - 50.0f;
    float *d_in, *d_out;
    cudaMalloc(&d_in, sizeof h);
    cudaMalloc(&d_out, sizeof got);
    cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice);
    group_max<<<2, 128>>>(d_in, d_out);
    cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; ++i) {
        float m = h[i / 32 * 32];
        for (int k = 1; k < 32; ++k) m = h[i / 32 * 32 + k] > m ? h[i / 32 * 32 + k] : m;
        bad += got[i] != m;
    }
    std::printf("max[0]=%g max[255]=%g\n", got[0], got[n - 1]);
    cudaFree(d_in); cudaFree(d_out);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
