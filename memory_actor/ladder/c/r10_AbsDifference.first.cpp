// rung: first
// task: r10_AbsDifference
// summary: first rung, elementwise family, two rank-2 inputs of one shape to a rank-2 output: one plain loop over every element
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, const float* y, float* out, int64_t x_d0, int64_t x_d1, int64_t y_d0,
                       int64_t y_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;  // all three contiguous and of one shape: one flat index walks them together
    for (int64_t i = 0; i < n; ++i) {
        out[i] = std::fabs(x[i] - y[i]);
    }
}
