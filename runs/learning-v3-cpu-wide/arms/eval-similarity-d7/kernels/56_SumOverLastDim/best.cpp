#include <cmath>
#include <algorithm>

extern "C" void kernel(const float* x, float* out, int64_t dim,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t out_d0, int64_t out_d1) {
    const int64_t sizes[3] = {x_d0, x_d1, x_d2};
    const int64_t axis = dim < 0 ? dim + 3 : dim;  // torch allows negative axes
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= sizes[d];
    for (int64_t d = axis + 1; d < 3; ++d) inner *= sizes[d];
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            double acc = 0.0;
            for (int64_t r = 0; r < sizes[axis]; ++r) acc += x[(o * sizes[axis] + r) * inner + i];
            out[o * inner + i] = static_cast<float>(acc);
        }
    }
}
