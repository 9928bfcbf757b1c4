// rung: first
// task: ex7_Conv1dStride2
// summary: first rung, convolution family: ex7_Conv1dStride2, one weighted window sum per output element
#include <cstdint>

const int64_t STRIDE = 2;  // the reference's stride; no padding

extern "C" void kernel(const float* x, const float* conv_weight, float* out,
                       int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2,
                       int64_t conv_weight_d0, int64_t conv_weight_d1, int64_t conv_weight_d2,
                       int64_t out_d0, int64_t out_d1, int64_t out_d2) {
    const int64_t B = x_d0, C = x_d1, L = x_d2, OC = out_d1, OL = out_d2, KS = conv_weight_d2;
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t oc = 0; oc < OC; ++oc) {
            for (int64_t o = 0; o < OL; ++o) {
                float sum = 0.0f;  // weight is [OC, C, KS]
                for (int64_t ic = 0; ic < C; ++ic) {
                    for (int64_t k = 0; k < KS; ++k) {
                        sum += conv_weight[(oc * C + ic) * KS + k] * x[(b * C + ic) * L + o * STRIDE + k];
                    }
                }
                out[(b * OC + oc) * OL + o] = sum;
            }
        }
    }
}
