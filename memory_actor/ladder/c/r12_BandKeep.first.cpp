// rung: first
// task: r12_BandKeep
// summary: first rung, elementwise family, a rank-2 input to a rank-2 output with two constructor scalars: one plain loop over every element
#include <cstdint>

extern "C" void kernel(const float* x, float* out, double low, double high, int64_t x_d0, int64_t x_d1,
                       int64_t out_d0, int64_t out_d1) {
    const float lo = (float)low, hi = (float)high;  // torch compares a float32 tensor with the scalars as float32
    const int64_t n = out_d0 * out_d1;  // contiguous: one flat index walks every element
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        out[i] = (v >= lo && v <= hi) ? v : 0.0f;
    }
}
