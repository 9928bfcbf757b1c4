// rung: first
// task: r56_Conv2dStride2
// summary: first rung, convolution family, rank 4 with weight, bias and in/out channels and kernel_size: one weighted window sum per output element, bias first
#include <cstdint>

const int64_t STRIDE = 2;  // the reference's stride; no padding

extern "C" void kernel(const float* x, const float* conv_weight, const float* conv_bias, float* out,
                       int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t x_d3,
                       int64_t conv_weight_d0, int64_t conv_weight_d1, int64_t conv_weight_d2, int64_t conv_weight_d3,
                       int64_t conv_bias_d0, int64_t out_d0, int64_t out_d1, int64_t out_d2, int64_t out_d3) {
    const int64_t B = x_d0, C = x_d1, H = x_d2, W = x_d3, OC = out_d1, OH = out_d2, OW = out_d3;
    const int64_t KH = conv_weight_d2, KW = conv_weight_d3;  // weight is [OC, C, KH, KW]
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t oc = 0; oc < OC; ++oc) {
            for (int64_t oh = 0; oh < OH; ++oh) {
                for (int64_t ow = 0; ow < OW; ++ow) {
                    double sum = conv_bias[oc];
                    for (int64_t ic = 0; ic < C; ++ic) {
                        for (int64_t kh = 0; kh < KH; ++kh) {
                            for (int64_t kw = 0; kw < KW; ++kw) {
                                sum += (double)conv_weight[((oc * C + ic) * KH + kh) * KW + kw] *
                                       x[((b * C + ic) * H + oh * STRIDE + kh) * W + ow * STRIDE + kw];
                            }
                        }
                    }
                    out[((b * OC + oc) * OH + oh) * OW + ow] = (float)sum;
                }
            }
        }
    }
}
