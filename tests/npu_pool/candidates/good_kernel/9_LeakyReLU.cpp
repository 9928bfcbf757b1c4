// task: level1/9_LeakyReLU.py
// expect-gate: ok
// extern "C" void kernel(const float* x, float* out, double negative_slope,
//                        int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1);
#include <cstdint>

extern "C" void kernel(const float* x, float* out, double negative_slope,
                       int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = x_d0 * x_d1;
    const float slope = static_cast<float>(negative_slope);
#pragma omp parallel for simd
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        out[i] = v >= 0.0f ? v : v * slope;
    }
}
