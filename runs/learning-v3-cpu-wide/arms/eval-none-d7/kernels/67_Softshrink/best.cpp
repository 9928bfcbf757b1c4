#include <cmath>

extern "C" void kernel(const float* x, float* out, double lambd, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;
    const float a = static_cast<float>(lambd);
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float x_val = x[i];
        if (x_val > a) {
            out[i] = x_val - a;
        } else if (x_val < -a) {
            out[i] = x_val + a;
        } else {
            out[i] = 0.0f;
        }
    }
}
