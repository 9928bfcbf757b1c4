// rung: first
// task: r55_Conv1dCausal
// summary: first rung, convolution family, rank 3 with weight, bias and in/out channels and kernel_size: one weighted window sum per output element, bias first, positions before 0 left out
#include <cstdint>

extern "C" void kernel(const float* x, const float* conv_weight, const float* conv_bias, float* out,
                       int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2,
                       int64_t conv_weight_d0, int64_t conv_weight_d1, int64_t conv_weight_d2, int64_t conv_bias_d0,
                       int64_t out_d0, int64_t out_d1, int64_t out_d2) {
    const int64_t B = x_d0, C = x_d1, L = x_d2, OC = out_d1, OL = out_d2, KS = conv_weight_d2;
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t oc = 0; oc < OC; ++oc) {
            for (int64_t o = 0; o < OL; ++o) {
                double sum = conv_bias[oc];  // weight is [OC, C, KS]
                for (int64_t ic = 0; ic < C; ++ic) {
                    for (int64_t k = 0; k < KS; ++k) {
                        const int64_t p = o - (KS - 1) + k;  // the window ends at o: only the past and the present
                        if (p < 0 || p >= L) continue;  // zero padding contributes nothing
                        sum += (double)conv_weight[(oc * C + ic) * KS + k] * x[(b * C + ic) * L + p];
                    }
                }
                out[(b * OC + oc) * OL + o] = (float)sum;
            }
        }
    }
}
