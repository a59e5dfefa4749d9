// Stand-in for HIP-CPU's public interface, for gpuparity's tests (see ../../README.md).
#pragma once

#include <ucontext.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __shared__ static
#define __constant__
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define HIP_SYMBOL(X) &X

inline constexpr int warpSize{64};

struct dim3 {
    std::uint32_t x{1}, y{1}, z{1};
    constexpr dim3(std::uint32_t a = 1, std::uint32_t b = 1, std::uint32_t c = 1) : x{a}, y{b}, z{c} {}
};

enum hipError_t { hipSuccess = 0, hipErrorInvalidValue = 1, hipErrorOutOfMemory = 2 };
enum hipMemcpyKind { hipMemcpyHostToHost, hipMemcpyHostToDevice, hipMemcpyDeviceToHost, hipMemcpyDeviceToDevice,
                     hipMemcpyDefault };
enum { hipStreamDefault = 0, hipStreamNonBlocking = 1, hipHostMallocDefault = 0, hipEventDefault = 0 };

struct hipDeviceProp_t { char name[256]; int warpSize; int maxThreadsPerBlock; int multiProcessorCount;
                         std::size_t sharedMemPerBlock; std::size_t totalGlobalMem; int major, minor; };

namespace hipcpu_standin {
struct Event { std::chrono::steady_clock::time_point at{}; };
struct Stream { int unused{}; };

struct Block {  // the block being run and the fiber (GPU thread) running in it
    dim3 grid, dim, idx;
    std::vector<ucontext_t> fibers;
    std::vector<std::vector<char>> stacks;
    std::vector<std::uint64_t> exchange;  // one shuffle slot a thread
    std::vector<std::byte> dynamic;       // HIP_DYNAMIC_SHARED's storage
    ucontext_t scheduler{};
    std::uint32_t current{}, count{};
    bool exited{};
    const std::function<void()>* kernel{};
};
inline Block& block() { static Block b; return b; }

// Every thread of the block reaches it before any goes on: a fiber returns to the scheduler,
// which runs the others to this point before coming back.
inline void barrier() { auto& b = block(); swapcontext(&b.fibers[b.current], &b.scheduler); }

inline void fiber_main() {
    (*block().kernel)();
    block().exited = true;  // then uc_link: back to the scheduler for good
}

inline void launch(dim3 grid, dim3 dim, std::size_t shared_bytes, const std::function<void()>& kernel) {
    auto& b = block();
    b.grid = grid; b.dim = dim; b.kernel = &kernel;
    b.count = dim.x * dim.y * dim.z;
    b.fibers.assign(b.count, ucontext_t{});
    b.stacks.resize(b.count);
    b.exchange.assign(b.count, 0);
    b.dynamic.assign(shared_bytes, std::byte{});
    for (std::uint32_t bz = 0; bz < grid.z; ++bz)
        for (std::uint32_t by = 0; by < grid.y; ++by)
            for (std::uint32_t bx = 0; bx < grid.x; ++bx) {
                b.idx = dim3{bx, by, bz};
                for (std::uint32_t t = 0; t < b.count; ++t) {
                    b.stacks[t].resize(256 * 1024);
                    getcontext(&b.fibers[t]);
                    b.fibers[t].uc_stack.ss_sp = b.stacks[t].data();
                    b.fibers[t].uc_stack.ss_size = b.stacks[t].size();
                    b.fibers[t].uc_link = &b.scheduler;
                    makecontext(&b.fibers[t], fiber_main, 0);
                }
                std::vector<bool> finished(b.count, false);
                for (std::uint32_t left = b.count; left;) {
                    for (std::uint32_t t = 0; t < b.count; ++t) {
                        if (finished[t]) continue;
                        b.current = t;
                        b.exited = false;
                        swapcontext(&b.scheduler, &b.fibers[t]);
                        if (b.exited) { finished[t] = true; --left; }
                    }
                }
            }
}

inline dim3 thread_idx() {
    auto& b = block();
    return dim3{b.current % b.dim.x, (b.current / b.dim.x) % b.dim.y, b.current / (b.dim.x * b.dim.y)};
}

template<typename T>
T shuffle(T var, int lane_of(int lane, int width, bool* keep), int width) {
    static_assert(sizeof(T) <= 8, "shuffles move up to 8 bytes");
    auto& b = block();
    const std::uint32_t me = b.current;
    std::memcpy(&b.exchange[me], &var, sizeof(T));
    barrier();  // every lane has written its value
    const int lane = static_cast<int>(me % warpSize);
    bool keep = false;
    const int src = lane_of(lane, width, &keep);
    T out = var;
    const std::uint32_t from = me - lane + src;
    if (!keep && from < b.count) std::memcpy(&out, &b.exchange[from], sizeof(T));
    barrier();  // every lane has read before the slots are written again
    return out;
}
} // namespace hipcpu_standin

#define threadIdx (::hipcpu_standin::thread_idx())
#define blockIdx (::hipcpu_standin::block().idx)
#define blockDim (::hipcpu_standin::block().dim)
#define gridDim (::hipcpu_standin::block().grid)

inline void __syncthreads() { hipcpu_standin::barrier(); }
inline void __threadfence() {}

template<typename T>
T __shfl(T var, int src_lane, int width = warpSize) {
    static thread_local int s;
    s = src_lane;
    return hipcpu_standin::shuffle(var, [](int lane, int w, bool*) { return lane / w * w + ((s % w) + w) % w; }, width);
}
template<typename T>
T __shfl_down(T var, unsigned delta, int width = warpSize) {
    static thread_local unsigned d;
    d = delta;
    return hipcpu_standin::shuffle(var, [](int lane, int w, bool* keep) {
        const int in = lane % w + static_cast<int>(d);
        *keep = in >= w;
        return lane / w * w + (in < w ? in : lane % w);
    }, width);
}
template<typename T>
T __shfl_up(T var, unsigned delta, int width = warpSize) {
    static thread_local unsigned d;
    d = delta;
    return hipcpu_standin::shuffle(var, [](int lane, int w, bool* keep) {
        const int in = lane % w - static_cast<int>(d);
        *keep = in < 0;
        return lane / w * w + (in >= 0 ? in : lane % w);
    }, width);
}
template<typename T>
T __shfl_xor(T var, int mask, int width = warpSize) {
    static thread_local int m;
    m = mask;
    return hipcpu_standin::shuffle(var, [](int lane, int w, bool* keep) {
        const int in = (lane % w) ^ m;
        *keep = in >= w;
        return lane / w * w + (in < w ? in : lane % w);
    }, width);
}

// Atomics: the fibers share one OS thread, so a read-modify-write is never interrupted.
template<typename T> T atomicAdd(T* p, T v) { T old = *p; *p = old + v; return old; }
template<typename T> T atomicSub(T* p, T v) { T old = *p; *p = old - v; return old; }
template<typename T> T atomicMax(T* p, T v) { T old = *p; *p = std::max(old, v); return old; }
template<typename T> T atomicMin(T* p, T v) { T old = *p; *p = std::min(old, v); return old; }
template<typename T> T atomicExch(T* p, T v) { T old = *p; *p = v; return old; }
template<typename T> T atomicCAS(T* p, T cmp, T v) { T old = *p; if (old == cmp) *p = v; return old; }
inline unsigned atomicInc(unsigned* p, unsigned limit) { unsigned old = *p; *p = old >= limit ? 0 : old + 1; return old; }

#define HIP_DYNAMIC_SHARED(type, variable) \
    auto variable{reinterpret_cast<type*>(::hipcpu_standin::block().dynamic.data())};

#define hipLaunchKernelGGL(kernel_name, num_blocks, dim_blocks, group_mem_bytes, stream, ...) \
    if (true) { \
        (void)(stream); \
        ::hipcpu_standin::launch(dim3(num_blocks), dim3(dim_blocks), group_mem_bytes, \
                                 [=]() { kernel_name(__VA_ARGS__); }); \
    } else ((void)0)

typedef hipcpu_standin::Stream* hipStream_t;
typedef hipcpu_standin::Event* hipEvent_t;

inline hipError_t hipMalloc(void** p, std::size_t n) { *p = std::calloc(n ? n : 1, 1); return *p ? hipSuccess : hipErrorOutOfMemory; }
template<typename T> hipError_t hipMalloc(T** p, std::size_t n) { return hipMalloc(reinterpret_cast<void**>(p), n); }
inline hipError_t hipHostMalloc(void** p, std::size_t n, unsigned = 0) { return hipMalloc(p, n); }
template<typename T> hipError_t hipHostMalloc(T** p, std::size_t n, unsigned = 0) { return hipMalloc(reinterpret_cast<void**>(p), n); }
inline hipError_t hipMallocManaged(void** p, std::size_t n, unsigned = 0) { return hipMalloc(p, n); }
template<typename T> hipError_t hipMallocManaged(T** p, std::size_t n, unsigned = 0) { return hipMalloc(reinterpret_cast<void**>(p), n); }
inline hipError_t hipFree(void* p) { std::free(p); return hipSuccess; }
inline hipError_t hipHostFree(void* p) { std::free(p); return hipSuccess; }
inline hipError_t hipMemcpy(void* d, const void* s, std::size_t n, hipMemcpyKind) { std::memcpy(d, s, n); return hipSuccess; }
inline hipError_t hipMemcpyAsync(void* d, const void* s, std::size_t n, hipMemcpyKind k, hipStream_t = nullptr) { return hipMemcpy(d, s, n, k); }
inline hipError_t hipMemset(void* d, int v, std::size_t n) { std::memset(d, v, n); return hipSuccess; }
inline hipError_t hipMemsetAsync(void* d, int v, std::size_t n, hipStream_t = nullptr) { return hipMemset(d, v, n); }
template<typename T>
hipError_t hipMemcpyToSymbol(T* sym, const void* s, std::size_t n, std::size_t off = 0, hipMemcpyKind = hipMemcpyHostToDevice) {
    std::memcpy(reinterpret_cast<char*>(sym) + off, s, n); return hipSuccess;
}
inline hipError_t hipDeviceSynchronize() { return hipSuccess; }
inline hipError_t hipGetLastError() { return hipSuccess; }
inline hipError_t hipPeekAtLastError() { return hipSuccess; }
inline const char* hipGetErrorString(hipError_t e) { return e == hipSuccess ? "hipSuccess" : "hipError"; }
inline hipError_t hipSetDevice(int) { return hipSuccess; }
inline hipError_t hipGetDeviceCount(int* n) { *n = 1; return hipSuccess; }
inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int) {
    *p = hipDeviceProp_t{};
    std::strcpy(p->name, "HIP-CPU stand-in");
    p->warpSize = warpSize; p->maxThreadsPerBlock = 1024; p->multiProcessorCount = 1;
    p->sharedMemPerBlock = 64 * 1024; p->totalGlobalMem = std::size_t{1} << 32; p->major = 7;
    return hipSuccess;
}
inline hipError_t hipStreamCreate(hipStream_t* s) { *s = new hipcpu_standin::Stream; return hipSuccess; }
inline hipError_t hipStreamCreateWithFlags(hipStream_t* s, unsigned) { return hipStreamCreate(s); }
inline hipError_t hipStreamDestroy(hipStream_t s) { delete s; return hipSuccess; }
inline hipError_t hipStreamSynchronize(hipStream_t) { return hipSuccess; }
inline hipError_t hipStreamWaitEvent(hipStream_t, hipEvent_t, unsigned = 0) { return hipSuccess; }
inline hipError_t hipEventCreate(hipEvent_t* e) { *e = new hipcpu_standin::Event; return hipSuccess; }
inline hipError_t hipEventCreateWithFlags(hipEvent_t* e, unsigned) { return hipEventCreate(e); }
inline hipError_t hipEventDestroy(hipEvent_t e) { delete e; return hipSuccess; }
inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t = nullptr) { e->at = std::chrono::steady_clock::now(); return hipSuccess; }
inline hipError_t hipEventSynchronize(hipEvent_t) { return hipSuccess; }
inline hipError_t hipEventQuery(hipEvent_t) { return hipSuccess; }
inline hipError_t hipEventElapsedTime(float* ms, hipEvent_t a, hipEvent_t b) {
    *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count(); return hipSuccess;
}
