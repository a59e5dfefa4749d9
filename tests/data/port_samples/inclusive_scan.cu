// Inclusive prefix sums of 256 values in one block (Hillis-Steele, double-buffered shared memory).
#include <cstdio>
#include <cuda_runtime.h>

#define N 256

__global__ void scan(const int* in, int* out) {
    __shared__ int buf[2][N];
    int t = threadIdx.x, src = 0;
    buf[0][t] = in[t];
    __syncthreads();
    for (int offset = 1; offset < N; offset *= 2) {
        int v = buf[src][t];
        if (t >= offset) v += buf[src][t - offset];
        buf[1 - src][t] = v;
        src = 1 - src;
        __syncthreads();
    }
    out[t] = buf[src][t];
}

int main() {
    int h[N], got[N];
    for (int i = 0; i < N; ++i) h[i] = (i % 5) + 1;
    int *d_in, *d_out;
    cudaMalloc(&d_in, sizeof h);
    cudaMalloc(&d_out, sizeof got);
    cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice);
    scan<<<1, N>>>(d_in, d_out);
    cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost);
    int bad = 0, run = 0;
    for (int i = 0; i < N; ++i) { run += h[i]; bad += got[i] != run; }
    std::printf("scan[0]=%d scan[255]=%d\n", got[0], got[N - 1]);
    cudaFree(d_in); cudaFree(d_out);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
