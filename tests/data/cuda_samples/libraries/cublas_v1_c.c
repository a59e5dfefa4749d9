/* cuBLAS v1 from C (written for gpuparity's tests): the same calls in a C file. */
#include <cublas.h>

float scaled_dot(float* d_x, float* d_y, int n, char trans, float* d_a) {
    cublasSscal(n, 2.0f, d_x, 1);
    cublasSgemv(trans, n, n, 1.0f, d_a, n, d_x, 1, 0.0f, d_y, 1);
    return cublasSdot(n, d_x, 1, d_y, 1);
}
