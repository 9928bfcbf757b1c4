#include <cmath>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const double alpha = 1.0f / 6.0f;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < out_d0 * out_d1; ++i) {
        float t = x[i] + 3.0f;
        out[i] = alpha * fmaxf(0.0f, fminf(t, 6.0f));
    }
}
