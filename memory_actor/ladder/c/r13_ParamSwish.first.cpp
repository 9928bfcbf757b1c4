// rung: first
// task: r13_ParamSwish
// summary: first rung, elementwise family, a rank-2 input and a one-element parameter to a rank-2 output with a constructor scalar: read the parameter once, one plain loop over every element
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, const float* beta, float* out, double init, int64_t x_d0, int64_t x_d1,
                       int64_t beta_d0, int64_t out_d0, int64_t out_d1) {
    // `init` only started the parameter; the model's value now is the parameter's one element.
    const double w = beta[0];
    const int64_t n = out_d0 * out_d1;  // contiguous: one flat index walks every element
    for (int64_t i = 0; i < n; ++i) {
        const double v = x[i];
        out[i] = (float)(v / (1.0 + std::exp(-w * v)));  // v * sigmoid(w * v)
    }
}
