// Written for gpuparity's tests (ported with --roc): cuSPARSE's legacy incomplete LU, triangular
// solve, CSR geam and interleaved batch solvers, whose rocSPARSE calls take policies, a size_t
// buffer size, no buffer, or a batch stride; complex values declared as cuComplex.
#include <cuda_runtime.h>
#include <cusparse.h>

int factor(cusparseHandle_t handle, cusparseMatDescr_t descr, csrilu02Info_t info, int m, int nnz, float* val,
           int* ptr, int* ind) {
    int bufferSize = 0;
    void* buffer = nullptr;
    cusparseScsrilu02_bufferSize(handle, m, nnz, descr, val, ptr, ind, info, &bufferSize);
    cudaMalloc(&buffer, bufferSize);
    cusparseScsrilu02_analysis(handle, m, nnz, descr, val, ptr, ind, info, CUSPARSE_SOLVE_POLICY_USE_LEVEL, buffer);
    cusparseStatus_t status = cusparseScsrilu02(handle, m, nnz, descr, val, ptr, ind, info,
                                                CUSPARSE_SOLVE_POLICY_USE_LEVEL, buffer);
    cudaFree(buffer);
    return status == CUSPARSE_STATUS_SUCCESS ? 0 : 1;
}

int add(cusparseHandle_t handle, cusparseMatDescr_t descr, int m, int n, int nnz, const cuComplex* alpha,
        const cuComplex* a, const int* ptr, const int* ind, cuComplex* c, int* cptr, int* cind, void* buffer) {
    int total = 0;
    cusparseXcsrgeam2Nnz(handle, m, n, descr, nnz, ptr, ind, descr, nnz, ptr, ind, descr, cptr, &total, buffer);
    return cusparseCcsrgeam2(handle, m, n, alpha, descr, nnz, a, ptr, ind, alpha, descr, nnz, a, ptr, ind, descr, c,
                             cptr, cind, buffer) == CUSPARSE_STATUS_SUCCESS ? 0 : 1;
}

int tridiagonal(cusparseHandle_t handle, int m, float* dl, float* d, float* du, float* x, int batch) {
    size_t size = 0;
    cusparseSgtsvInterleavedBatch_bufferSizeExt(handle, 0, m, dl, d, du, x, batch, &size);
    void* buffer = nullptr;
    cudaMalloc(&buffer, size);
    int status = cusparseSgtsvInterleavedBatch(handle, 0, m, dl, d, du, x, batch, buffer);
    cudaFree(buffer);
    return status;
}
