// Human port of streams_events.cu. Two streams, each copying its half in, scaling it and copying it out; the second waits on an
// event of the first; events time the work (the time is checked, not printed: it varies).
#include <cstdio>
#include <hip/hip_runtime.h>

__global__ void scale(float* x, int n, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= k;
}

int main() {
    const int n = 2048, half = n / 2;
    float* h;
    hipHostMalloc(&h, n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = static_cast<float>(i % 100);
    float* d;
    hipMalloc(&d, n * sizeof(float));
    hipStream_t s[2];
    hipEvent_t start, first_done, stop;
    for (auto& st : s) hipStreamCreateWithFlags(&st, hipStreamNonBlocking);
    hipEventCreate(&start); hipEventCreate(&first_done); hipEventCreate(&stop);
    hipEventRecord(start, s[0]);
    for (int k = 0; k < 2; ++k) {
        float* part = d + k * half;
        if (k == 1) hipStreamWaitEvent(s[1], first_done, 0);
        hipMemcpyAsync(part, h + k * half, half * sizeof(float), hipMemcpyHostToDevice, s[k]);
        scale<<<half / 256, 256, 0, s[k]>>>(part, half, k + 2.0f);
        hipMemcpyAsync(h + k * half, part, half * sizeof(float), hipMemcpyDeviceToHost, s[k]);
        if (k == 0) hipEventRecord(first_done, s[0]);
    }
    hipEventRecord(stop, s[1]);
    hipEventSynchronize(stop);
    float ms = -1.0f;
    hipEventElapsedTime(&ms, start, stop);
    for (auto& st : s) hipStreamSynchronize(st);
    int bad = ms < 0.0f;
    for (int i = 0; i < n; ++i) bad += h[i] != static_cast<float>(i % 100) * (i < half ? 2.0f : 3.0f);
    std::printf("h[1]=%g h[%d]=%g timed=%s\n", h[1], n - 1, h[n - 1], ms >= 0.0f ? "yes" : "no");
    for (auto& st : s) hipStreamDestroy(st);
    hipEventDestroy(start); hipEventDestroy(first_done); hipEventDestroy(stop);
    hipFree(d); hipHostFree(h);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
