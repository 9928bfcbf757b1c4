// task: level2/3_Conv2dBatchNormReLU.py
// expect-gate: ok
// Own parameters (bn_weight, bn_bias) precede the submodule's (conv.weight, conv.bias);
// buffers (running_mean, running_var) come after all parameters.
// extern "C" void kernel(const float* x, const float* bn_weight, const float* bn_bias,
//                        const float* conv_weight, const float* conv_bias,
//                        const float* running_mean, const float* running_var, float* out,
//                        int64_t in_channels, int64_t out_channels, int64_t kernel_size,
//                        double eps, int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t x_d3,
//                        int64_t bn_weight_d0, int64_t bn_bias_d0, int64_t conv_weight_d0,
//                        int64_t conv_weight_d1, int64_t conv_weight_d2,
//                        int64_t conv_weight_d3, int64_t conv_bias_d0,
//                        int64_t running_mean_d0, int64_t running_var_d0, int64_t out_d0,
//                        int64_t out_d1, int64_t out_d2, int64_t out_d3);
#include <cmath>
#include <cstdint>

// 'same' convolution (padding kernel_size / 2, stride 1) accumulated per output plane, then
// the folded batch-norm scale and shift and the ReLU in one pass over the plane.
extern "C" void kernel(const float* x, const float* bn_weight, const float* bn_bias,
                       const float* conv_weight, const float* conv_bias,
                       const float* running_mean, const float* running_var, float* out,
                       int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                       double eps, int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t x_d3,
                       int64_t bn_weight_d0, int64_t bn_bias_d0, int64_t conv_weight_d0,
                       int64_t conv_weight_d1, int64_t conv_weight_d2,
                       int64_t conv_weight_d3, int64_t conv_bias_d0,
                       int64_t running_mean_d0, int64_t running_var_d0, int64_t out_d0,
                       int64_t out_d1, int64_t out_d2, int64_t out_d3) {
    const int64_t N = x_d0, C = x_d1, H = x_d2, W = x_d3, F = out_d1, OH = out_d2, OW = out_d3;
    const int64_t K = kernel_size, pad = kernel_size / 2;
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t f = 0; f < F; ++f) {
            float* dst = out + (n * F + f) * OH * OW;
            for (int64_t i = 0; i < OH * OW; ++i) dst[i] = conv_bias[f];
            for (int64_t c = 0; c < C; ++c) {
                const float* src = x + (n * C + c) * H * W;
                const float* wgt = conv_weight + (f * C + c) * K * K;
                for (int64_t kh = 0; kh < K; ++kh) {
                    for (int64_t kw = 0; kw < K; ++kw) {
                        const float wv = wgt[kh * K + kw];
                        for (int64_t oh = 0; oh < OH; ++oh) {
                            const int64_t h = oh + kh - pad;
                            if (h < 0 || h >= H) continue;
                            const int64_t ow_lo = pad - kw > 0 ? pad - kw : 0;
                            const int64_t ow_hi = W + pad - kw < OW ? W + pad - kw : OW;
                            const float* row = src + h * W + kw - pad;
                            float* drow = dst + oh * OW;
                            for (int64_t ow = ow_lo; ow < ow_hi; ++ow) drow[ow] += wv * row[ow];
                        }
                    }
                }
            }
            const float scale = bn_weight[f] / std::sqrt(running_var[f] + static_cast<float>(eps));
            const float shift = bn_bias[f] - running_mean[f] * scale;
            for (int64_t i = 0; i < OH * OW; ++i) {
                const float v = dst[i] * scale + shift;
                dst[i] = v > 0.0f ? v : 0.0f;
            }
        }
    }
}
