// Human port of transpose.cu. A 96x64 matrix transposed through a padded 32x33 shared tile, on a 2-D grid of 2-D blocks.
#include <cstdio>
#include <hip/hip_runtime.h>

#define TILE 32

__global__ void transpose(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += blockDim.y)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += blockDim.y)
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main() {
    const int rows = 96, cols = 64;
    static float h[rows * cols], got[rows * cols];
    for (int i = 0; i < rows * cols; ++i) h[i] = static_cast<float>(i);
    float *d_in, *d_out;
    hipMalloc(&d_in, sizeof h);
    hipMalloc(&d_out, sizeof got);
    hipMemcpy(d_in, h, sizeof h, hipMemcpyHostToDevice);
    dim3 block(TILE, 8), grid(cols / TILE, rows / TILE);
    transpose<<<grid, block>>>(d_in, d_out, rows, cols);
    hipMemcpy(got, d_out, sizeof got, hipMemcpyDeviceToHost);
    int bad = 0;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) bad += got[c * rows + r] != h[r * cols + c];
    std::printf("out[1]=%g out[%d]=%g\n", got[1], rows * cols - 1, got[rows * cols - 1]);
    hipFree(d_in); hipFree(d_out);
    std::printf("%s\n", bad ? "FAIL" : "PASS");
    return bad != 0;
}
