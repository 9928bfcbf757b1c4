#include <cmath>

extern "C" void kernel(const float* x, float* out, double alpha, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;
    const float a = static_cast<float>(alpha);
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float x_i = x[i];
        out[i] = std::max(0.0f, x_i) + std::min(0.0f, a * (std::exp(x_i / a) - 1));
    }
}
