#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t out_d0) {
    const int64_t N = x_d1;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < out_d0; ++i) {
        float sum = 0.0f;
        #pragma omp simd
        for (int64_t j = 0; j < N; ++j) sum += x[i * N + j];
        out[i] = sum;
    }
}
