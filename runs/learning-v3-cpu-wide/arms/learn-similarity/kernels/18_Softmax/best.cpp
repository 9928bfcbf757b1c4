#include <cmath>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1,
                       int64_t out_d0, int64_t out_d1) {
    const int64_t rows = x_d0, cols = x_d1;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* src = x + r * cols;
        float* dst = out + r * cols;
        double total = 0.0;
        for (int64_t j = 0; j < cols; ++j) {
            dst[j] = std::exp(static_cast<double>(src[j]));
            total += dst[j];
        }
        const float scale = 1.0 / total;
        for (int64_t j = 0; j < cols; ++j) dst[j] *= scale;
    }
}
