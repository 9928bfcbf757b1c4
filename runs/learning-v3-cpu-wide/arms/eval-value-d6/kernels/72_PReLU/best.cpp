#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, const float* prelu_weight, float* out, double init, int64_t x_d0, int64_t x_d1, int64_t prelu_weight_d0, int64_t out_d0, int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;
    const float slope = static_cast<float>(init);  // scalars arrive as double or int64_t
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        out[i] = v >= 0.0f ? v : v * slope;  // op
    }
}
