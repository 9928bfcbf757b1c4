#include <cmath>

extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t out_d0) {
    const int64_t rows = out_d0;
    const int64_t cols = x_d1;
    #pragma omp parallel for
    for (int64_t i = 0; i < rows; ++i) {
        float sum = 0.0f;
        #pragma omp simd reduction(+:sum)
        for (int64_t j = 0; j < cols; ++j) {
            sum += x[i * cols + j];
        }
        out[i] = sum / cols;
    }
}
