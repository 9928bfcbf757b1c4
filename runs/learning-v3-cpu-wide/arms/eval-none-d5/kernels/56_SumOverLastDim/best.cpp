#include <cmath>
extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t out_d0, int64_t out_d1) {
    const int64_t n = x_d0 * x_d1;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float acc = 0.0f;
        for (int64_t k = 0; k < x_d2; ++k) {
            acc += x[i * x_d1 + k];
        }
        out[i] = acc;
    }
}
