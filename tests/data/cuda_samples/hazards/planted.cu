// Each line marked "expect:" plants hazards of the named kinds; tests compare (kind, line) pairs.
#include <cuda_runtime.h>
#include <mma.h>  // expect: warp_matrix
#include <cooperative_groups.h>
#include <cublasLt.h>  // expect: no_dropin_library
namespace cg = cooperative_groups;
using namespace nvcuda;  // expect: warp_matrix

#define WARP_SIZE 32  // expect: warp_size_32
#define FULL_MASK 0xffffffff  // expect: lane_mask_32
#define BIG_SMEM (96 * 1024)

texture<float, 1, cudaReadModeElementType> tex_ref;  // expect: texture_reference

__global__ void __launch_bounds__(256, 2) lane_math(int* out) {  // expect: launch_bounds
    int lane = threadIdx.x & 31;  // expect: warp_size_32
    int warp_id = threadIdx.x >> 5;  // expect: warp_size_32
    int lane2 = threadIdx.x % 32;  // expect: warp_size_32
    __shared__ float partial[32];  // expect: warp_size_32
    out[lane] = warp_id + lane2;
    float v = out[lane];
    for (int offset = 16; offset > 0; offset /= 2)  // expect: warp_size_32
        v += __shfl_down_sync(0xffffffff, v, offset);  // expect: lane_mask_32
    unsigned int ballot = __ballot_sync(__activemask(), v > 0);  // expect: ballot_32bit
    int voters = __popc(__ballot_sync(FULL_MASK, v > 1));  // expect: ballot_32bit, lane_mask_32
    partial[lane] = v + ballot + voters;
}

__global__ void uses_ptx(int* out) {
    int x;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(x));  // expect: inline_asm
#if __CUDA_ARCH__ >= 800  // expect: cuda_arch_macro
    out[0] = x;
#endif
}

__global__ void grid_wide(int* data) {
    cg::grid_group grid = cg::this_grid();  // expect: grid_sync
    data[grid.thread_rank()] = 1;
    grid.sync();  // expect: grid_sync
}

__global__ void __cluster_dims__(2, 1, 1) clustered(float* p) {  // expect: thread_block_cluster
    p[0] = 1.0f;
}

__global__ void tensor_core(half* a) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> frag;  // expect: warp_matrix
    wmma::load_matrix_sync(frag, a, 16);  // expect: warp_matrix
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0}, {%1}, {%2}, {%3};" ::);  // expect: inline_asm, warp_matrix
}

__global__ void divergent(int* data) {
    if (threadIdx.x % 2 == 0) {
        data[threadIdx.x] = 1;
    }
    __syncwarp();  // expect: independent_thread_scheduling
}

__global__ void big_smem_kernel(float* p) {
    extern __shared__ float dyn[];
    p[threadIdx.x] = dyn[threadIdx.x];
}

void host(float* p) {
    cudaFuncSetAttribute(big_smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, BIG_SMEM);  // expect: shared_memory_64k
    big_smem_kernel<<<1, 256, 80000>>>(p);  // expect: shared_memory_64k
    cudaLaunchConfig_t config = {};
    cudaLaunchKernelEx(&config, big_smem_kernel, p);  // expect: launch_kernel_ex
    cublasLtHandle_t handle;
    cublasLtCreate(&handle);
}
