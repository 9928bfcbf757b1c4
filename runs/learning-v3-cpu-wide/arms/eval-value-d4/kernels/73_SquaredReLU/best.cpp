#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t m = x_d0, n = x_d1;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
        float* c = out + i * n;
        for (int64_t j = 0; j < n; ++j) {
            c[j] = std::max(0.0f, x[i * n + j]) * x[i * n + j];
        }
    }
}
