// Written for gpuparity's tests: runtime calls whose HIP form takes other arguments or another
// name (C++ overloads, CUDA 12 forms), __half2 members (raw bits in HIP), a braced half2
// assignment (ambiguous in HIP) and an error message naming the call.
#include <cstdio>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

template <typename T>
__global__ void scale(T* p, T s) { p[threadIdx.x] *= s; }

__global__ void halves(half2* out, const half2* in, float* sum) {
    half2 v = in[threadIdx.x];
    sum[threadIdx.x] = (float)v.x + (float)in[threadIdx.x].y;
    v = {__float2half(1.0f), __float2half(2.0f)};
    out[threadIdx.x] = v;
}

int main() {
    cudaEvent_t done;
    if (cudaEventCreate(&done, cudaEventDisableTiming) != cudaSuccess) {
        std::printf("cudaEventCreate failed\n");
        return 1;
    }
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaGraphCreate(&graph, 0);
    cudaGraphInstantiate(&exec, graph, 0);
    cudaFuncSetSharedMemConfig(scale<float>, cudaSharedMemBankSizeFourByte);
    float* d = nullptr;
    cudaMalloc(&d, 32 * sizeof(float));
    scale<<<1, 32>>>(d, 2.0f);
    cudaEventRecord(done);
    cudaEventSynchronize(done);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(d);
    return 0;
}
