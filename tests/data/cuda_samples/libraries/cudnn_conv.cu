// A small cuDNN network step written for gpuparity's tests (text checks: Debian ships no
// MIOpen): a convolution forward and both backward passes with the algorithm search, the
// workspace queries, bias, activation, pooling, softmax and batch norm.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include <cudnn.h>

#define CHECK_DNN(call) do { cudnnStatus_t s_ = (call); \
    if (s_ != CUDNN_STATUS_SUCCESS) std::printf("cudnn: %s\n", cudnnGetErrorString(s_)); } while (0)

struct Layer {
    cudnnTensorDescriptor_t x_desc, y_desc, bias_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv;
    cudnnActivationDescriptor_t relu;
    cudnnPoolingDescriptor_t pool;
};

void setup(Layer& l, int n, int c, int h, int w, int k) {
    CHECK_DNN(cudnnCreateTensorDescriptor(&l.x_desc));
    CHECK_DNN(cudnnCreateTensorDescriptor(&l.y_desc));
    CHECK_DNN(cudnnCreateTensorDescriptor(&l.bias_desc));
    CHECK_DNN(cudnnCreateFilterDescriptor(&l.w_desc));
    CHECK_DNN(cudnnCreateConvolutionDescriptor(&l.conv));
    CHECK_DNN(cudnnSetTensor4dDescriptor(l.x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
    CHECK_DNN(cudnnSetFilter4dDescriptor(l.w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, 3, 3));
    CHECK_DNN(cudnnSetConvolution2dDescriptor(l.conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
    CHECK_DNN(cudnnSetConvolutionMathType(l.conv, CUDNN_TENSOR_OP_MATH));
    int on, oc, oh, ow;
    CHECK_DNN(cudnnGetConvolution2dForwardOutputDim(l.conv, l.x_desc, l.w_desc, &on, &oc, &oh, &ow));
    CHECK_DNN(cudnnSetTensor4dDescriptor(l.y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow));
    CHECK_DNN(cudnnSetTensor4dDescriptor(l.bias_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, k, 1, 1));
    CHECK_DNN(cudnnCreateActivationDescriptor(&l.relu));
    CHECK_DNN(cudnnSetActivationDescriptor(l.relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
    CHECK_DNN(cudnnCreatePoolingDescriptor(&l.pool));
    CHECK_DNN(cudnnSetPooling2dDescriptor(l.pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2));
}

cudnnConvolutionFwdAlgo_t pick_forward(cudnnHandle_t h, Layer& l, float* x, float* w, float* y,
                                       void* ws, size_t ws_size) {
    int max_algos = 0, returned = 0;
    CHECK_DNN(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_algos));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(max_algos);
    CHECK_DNN(cudnnFindConvolutionForwardAlgorithmEx(h, l.x_desc, x, l.w_desc, w, l.conv, l.y_desc, y,
                                                     max_algos, &returned, perf.data(), ws, ws_size));
    for (int i = 0; i < returned; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i].algo;
    return CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
}

void forward(cudnnHandle_t h, cudaStream_t stream, Layer& l, float* x, float* w, float* b, float* y,
             float* pooled, cudnnTensorDescriptor_t pooled_desc, cudnnConvolutionFwdAlgo_t algo) {
    const float one = 1.0f, zero = 0.0f;
    CHECK_DNN(cudnnSetStream(h, stream));
    size_t ws_size = 0;
    CHECK_DNN(cudnnGetConvolutionForwardWorkspaceSize(h, l.x_desc, l.w_desc, l.conv, l.y_desc, algo, &ws_size));
    void* ws = nullptr;
    cudaMalloc(&ws, ws_size);
    CHECK_DNN(cudnnConvolutionForward(h, &one, l.x_desc, x, l.w_desc, w, l.conv, algo, ws, ws_size,
                                      &zero, l.y_desc, y));
    CHECK_DNN(cudnnActivationForward(h, l.relu, &one, l.y_desc, y, &zero, l.y_desc, y));
    CHECK_DNN(cudnnPoolingForward(h, l.pool, &one, l.y_desc, y, &zero, pooled_desc, pooled));
    CHECK_DNN(cudnnSoftmaxForward(h, CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_CHANNEL, &one, pooled_desc, pooled,
                                  &zero, pooled_desc, pooled));
    cudaFree(ws);
}

void backward(cudnnHandle_t h, Layer& l, float* x, float* w, float* dy, float* dx, float* dw,
              cudnnConvolutionBwdDataAlgo_t data_algo, cudnnConvolutionBwdFilterAlgo_t filter_algo) {
    const float one = 1.0f, zero = 0.0f;
    size_t data_ws = 0, filter_ws = 0;
    CHECK_DNN(cudnnGetConvolutionBackwardDataWorkspaceSize(h, l.w_desc, l.y_desc, l.conv, l.x_desc, data_algo,
                                                           &data_ws));
    CHECK_DNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, l.x_desc, l.y_desc, l.conv, l.w_desc,
                                                             filter_algo, &filter_ws));
    void* ws = nullptr;
    cudaMalloc(&ws, data_ws > filter_ws ? data_ws : filter_ws);
    CHECK_DNN(cudnnConvolutionBackwardData(h, &one, l.w_desc, w, l.y_desc, dy, l.conv, data_algo, ws, data_ws,
                                           &zero, l.x_desc, dx));
    CHECK_DNN(cudnnConvolutionBackwardFilter(h, &one, l.x_desc, x, l.y_desc, dy, l.conv, filter_algo, ws,
                                             filter_ws, &zero, l.w_desc, dw));
    cudaFree(ws);
}

void batch_norm(cudnnHandle_t h, cudnnTensorDescriptor_t t, cudnnTensorDescriptor_t bn, float* x, float* y,
                float* scale, float* bias, float* mean, float* var, float* save_mean, float* save_inv) {
    const float one = 1.0f, zero = 0.0f;
    CHECK_DNN(cudnnDeriveBNTensorDescriptor(bn, t, CUDNN_BATCHNORM_SPATIAL));
    CHECK_DNN(cudnnBatchNormalizationForwardTraining(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, t, x, t, y, bn,
                                                     scale, bias, 0.1, mean, var, 1e-5, save_mean, save_inv));
}
