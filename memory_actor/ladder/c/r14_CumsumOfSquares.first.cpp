// rung: first
// task: r14_CumsumOfSquares
// summary: first rung, scan family, a rank-2 input to a rank-2 output with the scan's dim as a constructor scalar (0, 1 or negative): one plain loop along each scan, in a double
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t out_d0,
                       int64_t out_d1) {
    const int64_t rows = x_d0, cols = x_d1;
    const int64_t axis = dim < 0 ? dim + 2 : dim;  // a negative dim counts from the end: -1 is 1, -2 is 0
    // axis 1: one scan along each row; axis 0: one scan down each column.
    const int64_t scans = axis == 1 ? rows : cols;  // how many independent scans
    const int64_t len = axis == 1 ? cols : rows;    // elements in each scan
    const int64_t stride = axis == 1 ? 1 : cols;    // from one element of a scan to the next
    const int64_t step = axis == 1 ? cols : 1;      // from the first element of one scan to the next scan's
    for (int64_t s = 0; s < scans; ++s) {
        double sum = 0.0;  // the running value carries along the scan; double: a long float sum drifts
        for (int64_t i = 0; i < len; ++i) {
            const int64_t k = s * step + i * stride;
            const double v = x[k];
            sum += v * v;
            out[k] = (float)sum;
        }
    }
}
