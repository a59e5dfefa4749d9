// Error-checking helper shared by the samples.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// Abort with the CUDA error string. The message names cudaGetLastError on purpose:
// text inside string literals must survive translation unchanged.
#define CUDA_CHECK(call)                                                              \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            std::fprintf(stderr, "CUDA error %s at %s:%d (see cudaGetLastError)\n",   \
                         cudaGetErrorString(err_), __FILE__, __LINE__);               \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)
