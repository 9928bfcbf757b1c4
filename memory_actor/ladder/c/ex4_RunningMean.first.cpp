// rung: first
// task: ex4_RunningMean
// summary: first rung, scan family: ex4_RunningMean, one plain loop along each row
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t rows = x_d0, cols = x_d1;
    for (int64_t r = 0; r < rows; ++r) {
        double sum = 0.0;  // the running value carries along the row
        for (int64_t i = 0; i < cols; ++i) {
            sum += x[r * cols + i];
            out[r * cols + i] = (float)(sum / (double)(i + 1));
        }
    }
}
