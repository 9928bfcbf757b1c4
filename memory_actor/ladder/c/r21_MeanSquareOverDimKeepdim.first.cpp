// rung: first
// task: r21_MeanSquareOverDimKeepdim
// summary: first rung, row reduction over a given dim, rank 3 to rank 3 (keepdim, the dim kept with length 1): outer x inner output elements, one plain loop over the reduced axis each
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t out_d0, int64_t out_d1, int64_t out_d2) {
    const int64_t sizes[3] = {x_d0, x_d1, x_d2};
    const int64_t axis = dim < 0 ? dim + 3 : dim;  // a negative dim counts from the end
    int64_t outer = 1, inner = 1;  // the dims before the reduced one, and after it
    for (int64_t a = 0; a < axis; ++a) outer *= sizes[a];
    for (int64_t a = axis + 1; a < 3; ++a) inner *= sizes[a];
    const int64_t len = sizes[axis];
    // keepdim: the output's reduced axis has length 1, so its flat index is still o * inner + i
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            double sum = 0.0;  // double: a long float sum drifts past the 1e-4 tolerance
            for (int64_t k = 0; k < len; ++k) {
                const double v = x[(o * len + k) * inner + i];
                sum += v * v;
            }
            out[o * inner + i] = (float)(sum / (double)len);
        }
    }
}
