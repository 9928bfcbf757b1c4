// rung: first
// task: r57_DepthwiseConv2dStride2
// summary: first rung, convolution family, rank 4 depthwise (one filter per channel, no bias) with channels and kernel_size: one weighted window sum per output element, padded positions left out
#include <cstdint>

const int64_t STRIDE = 2;  // the reference's stride; padding is kernel_size / 2

extern "C" void kernel(const float* x, const float* conv_weight, float* out, int64_t channels, int64_t kernel_size,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t x_d3,
                       int64_t conv_weight_d0, int64_t conv_weight_d1, int64_t conv_weight_d2, int64_t conv_weight_d3,
                       int64_t out_d0, int64_t out_d1, int64_t out_d2, int64_t out_d3) {
    const int64_t B = x_d0, C = x_d1, H = x_d2, W = x_d3, OH = out_d2, OW = out_d3;
    const int64_t KH = conv_weight_d2, KW = conv_weight_d3;  // weight is [C, 1, KH, KW]
    const int64_t PH = KH / 2, PW = KW / 2;
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t c = 0; c < C; ++c) {
            for (int64_t oh = 0; oh < OH; ++oh) {
                for (int64_t ow = 0; ow < OW; ++ow) {
                    double sum = 0.0;
                    for (int64_t kh = 0; kh < KH; ++kh) {
                        const int64_t h = oh * STRIDE - PH + kh;
                        if (h < 0 || h >= H) continue;  // zero padding contributes nothing
                        for (int64_t kw = 0; kw < KW; ++kw) {
                            const int64_t w = ow * STRIDE - PW + kw;
                            if (w < 0 || w >= W) continue;
                            sum += (double)conv_weight[(c * KH + kh) * KW + kw] * x[((b * C + c) * H + h) * W + w];
                        }
                    }
                    out[((b * C + c) * OH + oh) * OW + ow] = (float)sum;
                }
            }
        }
    }
}
