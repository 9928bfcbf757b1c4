#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t out_d0) {
    const int64_t n = out_d0;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float sum = 0.0f;
        for (int64_t j = 0; j < x_d1; ++j) {
            sum += x[i * x_d1 + j];
        }
        out[i] = sum / x_d1;
    }
}
