// FP16 warp reductions, written for gpuparity's tests: half2 and half values shuffled with
// the *_sync intrinsics (cuda_fp16.h overloads them; HIP before 5.6 does not).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__device__ half2 warp_sum2(half2 v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v = __hadd2(v, __shfl_xor_sync(0xffffffff, v, offset, 32));
    return v;
}

__device__ half warp_max(half v) {
    half other;
    for (int offset = 16; offset > 0; offset >>= 1) {
        other = __shfl_down_sync(0xffffffff, v, offset);
        v = __hgt(other, v) ? other : v;
    }
    return __shfl_sync(0xffffffff, v, 0);
}

__global__ void reduce(const half2* in, half2* sums, half* peaks) {
    half2 v = warp_sum2(in[threadIdx.x]);
    if (threadIdx.x % 32 == 0) sums[threadIdx.x / 32] = v;
    half m = warp_max(__low2half(v));
    if (threadIdx.x % 32 == 0) peaks[threadIdx.x / 32] = m;
}
