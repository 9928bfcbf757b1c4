#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float x_i = x[i];
        float exp_x_i = expf(-x_i);
        float sigmoid_x_i = 1.0 / (1 + exp_x_i);
        out[i] = logf(sigmoid_x_i);
    }
}
