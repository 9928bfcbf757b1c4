// task: level1/4_ReLU.py
// expect-gate: compile
// A ReLU with a type error: a float assigned to a pointer, and an undeclared name.
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1,
                       int64_t out_d0, int64_t out_d1) {
    const int64_t n = x_d0 * x_d1;
    for (int64_t i = 0; i < n; ++i) {
        float* p = x[i] > 0.0f ? x[i] : 0.0f;
        out[i] = *p + undeclared_bias;
    }
}
