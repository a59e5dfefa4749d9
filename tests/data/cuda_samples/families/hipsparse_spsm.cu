// Written for gpuparity's tests: cuSPARSE's generic triangular solve (SpSM), whose hipSPARSE
// solve takes the buffer argument cuSPARSE 12 dropped.
#include <cuda_runtime.h>
#include <cusparse.h>

int solve(cusparseHandle_t handle, cusparseSpMatDescr_t a, cusparseDnMatDescr_t b, cusparseDnMatDescr_t c) {
    const float one = 1.0f;
    cusparseSpSMDescr_t descr;
    size_t size = 0;
    void* buffer = nullptr;
    cusparseSpSM_createDescr(&descr);
    cusparseSpSM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, b,
                            c, CUDA_R_32F, CUSPARSE_SPSM_ALG_DEFAULT, descr, &size);
    cudaMalloc(&buffer, size);
    cusparseSpSM_analysis(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, b, c,
                          CUDA_R_32F, CUSPARSE_SPSM_ALG_DEFAULT, descr, buffer);
    cusparseStatus_t status = cusparseSpSM_solve(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                 CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, b, c, CUDA_R_32F,
                                                 CUSPARSE_SPSM_ALG_DEFAULT, descr);
    cusparseSpSM_destroyDescr(descr);
    cudaFree(buffer);
    return status == CUSPARSE_STATUS_SUCCESS ? 0 : 1;
}
