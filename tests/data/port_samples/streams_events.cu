// Two streams, each copying its half in, scaling it and copying it out; the second waits on an
// event of the first; events time the work (the time is checked, not printed: it varies).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float* x, int n, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= k;
}

int main() {
    const int n = 2048, half = n / 2;
    float* h;
    cudaMallocHost(&h, n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = static_cast<float>(i % 100);
    float* d;
    cudaMalloc(&d, n * sizeof(float));
    cudaStream_t s[2];
    cudaEvent_t start, first_done, stop;
    for (auto& st : s) cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    cudaEventCreate(&start); cudaEventCreate(&first_done); cudaEventCreate(&stop);
    cudaEventRecord(start, s[0]);
    for (int k = 0; k < 2; ++k) {
        float* part = d + k * half;
        if (k == 1) cudaStreamWaitEvent(s[1], first_done, 0);
        cudaMemcpyAsync(part, h + k * half, half * sizeof(float), cudaMemcpyHostToDevice, s[k]);
        scale<<<half / 256, 256, 0, s[k]>>>(part, half, k + 2.0f);
        cudaMemcpyAsync(h + k * half, part, half * sizeof(float), cudaMemcpyDeviceToHost, s[k]);
        if (k == 0) cudaEventRecord(first_done, s[0]);
    }
    cudaEventRecord(stop, s[1]);
    cudaEventSynchronize(stop);
    float ms = -1.0f;
    cudaEventElapsedTime(&ms, start, stop);
    for (auto& st : s) cudaStreamSynchronize(st);
    int bad = ms < 0.0f;
    for (int i = 0; i < n; ++i) bad += h[i] != static_cast<float>(i % 100) * (i < half ? 2.0f : 3.0f);
    std::printf("h[1]=%g h[%d]=%g timed=%s\n", h[1], n - 1, h[n - 1], ms >= 0.0f ? "yes" : "no");
    for (auto& st : s) cudaStreamDestroy(st);
    cudaEventDestroy(start); cudaEventDestroy(first_done); cudaEventDestroy(stop);
    cudaFree(d); cudaFreeHost(h);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
