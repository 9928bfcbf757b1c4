// rung: first
// task: r11_SoftClip
// summary: first rung, elementwise family, a rank-2 input to a rank-2 output with one constructor scalar: one plain loop over every element
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, float* out, double bound, int64_t x_d0, int64_t x_d1, int64_t out_d0,
                       int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;  // contiguous: one flat index walks every element
    for (int64_t i = 0; i < n; ++i) {
        const double v = x[i];
        out[i] = (float)(bound * std::tanh(v / bound));  // the constructor's scalar arrives as an argument
    }
}
