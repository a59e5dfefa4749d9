// y = A x for a small CSR matrix through cuSPARSE's generic API (SpMV), with the legacy
// matrix descriptor calls and an error-string check; the --roc port goes to rocSPARSE.
#include <cstdio>
#include <cuda_runtime.h>
#include <cusparse.h>

#define CHECK_CUSPARSE(call)                                                     \
    do {                                                                         \
        cusparseStatus_t status_ = (call);                                       \
        if (status_ != CUSPARSE_STATUS_SUCCESS) {                                \
            std::printf("cuSPARSE error: %s\n", cusparseGetErrorString(status_)); \
            return 1;                                                            \
        }                                                                        \
    } while (0)

int main() {
    // 3x3 matrix [[1 0 2] [0 3 0] [4 0 5]]
    const int rows = 3, cols = 3, nnz = 5;
    int h_offsets[] = {0, 2, 3, 5};
    int h_columns[] = {0, 2, 1, 0, 2};
    float h_values[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
    float h_x[] = {1.0f, 1.0f, 1.0f};
    float h_y[3] = {0.0f, 0.0f, 0.0f};
    float alpha = 1.0f, beta = 0.0f;

    int *d_offsets, *d_columns;
    float *d_values, *d_x, *d_y;
    cudaMalloc((void**)&d_offsets, sizeof(h_offsets));
    cudaMalloc((void**)&d_columns, sizeof(h_columns));
    cudaMalloc((void**)&d_values, sizeof(h_values));
    cudaMalloc((void**)&d_x, sizeof(h_x));
    cudaMalloc((void**)&d_y, sizeof(h_y));
    cudaMemcpy(d_offsets, h_offsets, sizeof(h_offsets), cudaMemcpyHostToDevice);
    cudaMemcpy(d_columns, h_columns, sizeof(h_columns), cudaMemcpyHostToDevice);
    cudaMemcpy(d_values, h_values, sizeof(h_values), cudaMemcpyHostToDevice);
    cudaMemcpy(d_x, h_x, sizeof(h_x), cudaMemcpyHostToDevice);

    cusparseHandle_t handle;
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    CHECK_CUSPARSE(cusparseCreate(&handle));
    CHECK_CUSPARSE(cusparseSetStream(handle, stream));
    cusparseMatDescr_t legacy;
    CHECK_CUSPARSE(cusparseCreateMatDescr(&legacy));
    CHECK_CUSPARSE(cusparseSetMatIndexBase(legacy, CUSPARSE_INDEX_BASE_ZERO));
    CHECK_CUSPARSE(cusparseDestroyMatDescr(legacy));

    cusparseSpMatDescr_t mat;
    cusparseDnVecDescr_t vec_x, vec_y;
    CHECK_CUSPARSE(cusparseCreateCsr(&mat, rows, cols, nnz, d_offsets, d_columns, d_values,
                                     CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                     CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CHECK_CUSPARSE(cusparseCreateDnVec(&vec_x, cols, d_x, CUDA_R_32F));
    CHECK_CUSPARSE(cusparseCreateDnVec(&vec_y, rows, d_y, CUDA_R_32F));

    size_t buffer_size = 0;
    CHECK_CUSPARSE(cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, vec_x,
                                           &beta, vec_y, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT,
                                           &buffer_size));
    void* buffer = nullptr;
    cudaMalloc(&buffer, buffer_size > 0 ? buffer_size : 1);
    CHECK_CUSPARSE(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, vec_x, &beta, vec_y,
                                CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buffer));
    cudaMemcpy(h_y, d_y, sizeof(h_y), cudaMemcpyDeviceToHost);
    std::printf("y = %.1f %.1f %.1f (expect 3.0 3.0 9.0)\n", h_y[0], h_y[1], h_y[2]);

    CHECK_CUSPARSE(cusparseDestroySpMat(mat));
    CHECK_CUSPARSE(cusparseDestroyDnVec(vec_x));
    CHECK_CUSPARSE(cusparseDestroyDnVec(vec_y));
    CHECK_CUSPARSE(cusparseDestroy(handle));
    cudaFree(buffer);
    cudaFree(d_offsets);
    cudaFree(d_columns);
    cudaFree(d_values);
    cudaFree(d_x);
    cudaFree(d_y);
    cudaStreamDestroy(stream);
    return 0;
}
