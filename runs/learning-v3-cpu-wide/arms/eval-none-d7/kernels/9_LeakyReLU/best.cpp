#include <cmath>

extern "C" void kernel(const float* x, float* out, double negative_slope, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;
    const float slope = static_cast<float>(negative_slope);
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float val = x[i];
        if (val >= 0.0f) {
            out[i] = val;
        } else {
            out[i] = slope * val;
        }
    }
}
