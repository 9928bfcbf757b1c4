// task: level1/5_GELU.py
// expect-gate: correctness
// An exact GELU, except that every element is 1e-3 too large: beyond atol = rtol = 1e-4.
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1,
                       int64_t out_d0, int64_t out_d1) {
    const int64_t n = x_d0 * x_d1;
#pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        out[i] = 0.5f * v * (1.0f + std::erf(v * 0.70710678f)) + 1e-3f;
    }
}
