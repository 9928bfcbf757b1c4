#include <cmath>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t axis = 1; // assuming we want to compute the absolute value of each element in the first dimension
    const int64_t lines = x_d0; // number of elements along the first dimension (rows)
    const int64_t len = x_d1; // number of elements along the second dimension (columns)
#pragma omp parallel for schedule(static)
    for (int64_t l = 0; l < lines; ++l) {
        for (int64_t i = 0; i < len; ++i) {
            out[l * len + i] = std::fabs(x[l * len + i]);
        }
    }
}
