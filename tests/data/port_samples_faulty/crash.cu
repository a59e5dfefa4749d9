// Crashes on the host after a launch: a write through a null pointer.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void noop() {}

int main(int argc, char**) {
    noop<<<1, 1>>>();
    cudaDeviceSynchronize();
    volatile int* p = nullptr;
    *p = argc;
    std::printf("PASS\n");
    return 0;
}
