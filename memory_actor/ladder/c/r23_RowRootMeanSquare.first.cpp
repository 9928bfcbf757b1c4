// rung: first
// task: r23_RowRootMeanSquare
// summary: first rung, row reduction over a given dim, rank 2 to rank 1: one plain loop over the reduced axis per output element
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t out_d0) {
    const int64_t axis = dim < 0 ? dim + 2 : dim;  // a negative dim counts from the end
    const int64_t len = axis == 0 ? x_d0 : x_d1;     // the reduced axis
    const int64_t count = axis == 0 ? x_d1 : x_d0;   // the output's elements
    const int64_t step = axis == 0 ? x_d1 : 1;       // between neighbours along the reduced axis
    const int64_t stride = axis == 0 ? 1 : x_d1;     // between the starts of two outputs
    for (int64_t r = 0; r < count; ++r) {
        double sum = 0.0;  // double: a long float sum drifts past the 1e-4 tolerance
        for (int64_t k = 0; k < len; ++k) {
            const double v = x[r * stride + k * step];
            sum += v * v;
        }
        out[r] = (float)std::sqrt(sum / (double)len);
    }
}
