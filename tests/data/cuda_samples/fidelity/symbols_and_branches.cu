// Symbols passed to the copy and graph calls (HIP takes them through HIP_SYMBOL), and the
// same code in active and inactive #if branches, which must translate alike.
#include <cuda_runtime.h>

__constant__ float table[16];
__device__ float result[16];

__global__ void use_table(float* out) { out[threadIdx.x] = table[threadIdx.x] + result[threadIdx.x]; }

int copy_with_graph(const float* host, float* back) {
    cudaMemcpyToSymbol(table, host, sizeof(float) * 16);
    cudaGraph_t graph;
    cudaGraphNode_t node;
    cudaGraphCreate(&graph, 0);
    cudaGraphAddMemcpyNodeToSymbol(&node, graph, nullptr, 0, result, host, sizeof(float) * 16, 0,
                                   cudaMemcpyHostToDevice);
    cudaGraphMemcpyNodeSetParamsFromSymbol(node, back, result, sizeof(float) * 16, 0, cudaMemcpyDeviceToHost);
    cudaGraphDestroy(graph);
#if defined(USE_ASYNC_COPY)
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaMemcpyFromSymbolAsync(back, table, sizeof(float) * 16, 0, cudaMemcpyDeviceToHost, s);
    cudaStreamDestroy(s);
#else
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaMemcpyFromSymbolAsync(back, table, sizeof(float) * 16, 0, cudaMemcpyDeviceToHost, s);
    cudaStreamDestroy(s);
#endif
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
