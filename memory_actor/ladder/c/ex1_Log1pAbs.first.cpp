// rung: first
// task: ex1_Log1pAbs
// summary: first rung, elementwise family: ex1_Log1pAbs, one plain loop over every element
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;  // contiguous: one flat index walks every element
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        out[i] = std::log(1.0f + std::fabs(v));
    }
}
