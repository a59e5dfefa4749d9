// Never finishes: the kernel waits for a flag that nothing sets.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void wait_forever(volatile int* flag) {
    while (*flag == 0) {
    }
}

int main() {
    int* flag;
    cudaMalloc(&flag, sizeof(int));
    cudaMemset(flag, 0, sizeof(int));
    wait_forever<<<1, 1>>>(flag);
    cudaDeviceSynchronize();
    std::printf("PASS\n");
    return 0;
}
