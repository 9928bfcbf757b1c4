// task: level1/35_Conv2d.py
// expect-gate: ok
// extern "C" void kernel(const float* x, const float* conv_weight, const float* conv_bias,
//                        float* out, int64_t in_channels, int64_t out_channels,
//                        int64_t kernel_size, int64_t x_d0, int64_t x_d1, int64_t x_d2,
//                        int64_t x_d3, int64_t conv_weight_d0, int64_t conv_weight_d1,
//                        int64_t conv_weight_d2, int64_t conv_weight_d3,
//                        int64_t conv_bias_d0, int64_t out_d0, int64_t out_d1,
//                        int64_t out_d2, int64_t out_d3);
#include <cstdint>

// Direct convolution, stride 1, no padding; each (image, out channel) plane is one task.
extern "C" void kernel(const float* x, const float* conv_weight, const float* conv_bias,
                       float* out, int64_t in_channels, int64_t out_channels,
                       int64_t kernel_size, int64_t x_d0, int64_t x_d1, int64_t x_d2,
                       int64_t x_d3, int64_t conv_weight_d0, int64_t conv_weight_d1,
                       int64_t conv_weight_d2, int64_t conv_weight_d3,
                       int64_t conv_bias_d0, int64_t out_d0, int64_t out_d1,
                       int64_t out_d2, int64_t out_d3) {
    const int64_t N = x_d0, C = x_d1, H = x_d2, W = x_d3;
    const int64_t F = out_d1, OH = out_d2, OW = out_d3, KH = conv_weight_d2, KW = conv_weight_d3;
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t f = 0; f < F; ++f) {
            float* dst = out + (n * F + f) * OH * OW;
            for (int64_t i = 0; i < OH * OW; ++i) dst[i] = conv_bias[f];
            for (int64_t c = 0; c < C; ++c) {
                const float* src = x + (n * C + c) * H * W;
                const float* wgt = conv_weight + (f * C + c) * KH * KW;
                for (int64_t kh = 0; kh < KH; ++kh) {
                    for (int64_t kw = 0; kw < KW; ++kw) {
                        const float wv = wgt[kh * KW + kw];
                        for (int64_t oh = 0; oh < OH; ++oh) {
                            const float* row = src + (oh + kh) * W + kw;
                            float* drow = dst + oh * OW;
                            for (int64_t ow = 0; ow < OW; ++ow) drow[ow] += wv * row[ow];
                        }
                    }
                }
            }
        }
    }
}
