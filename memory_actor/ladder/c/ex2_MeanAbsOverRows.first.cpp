// rung: first
// task: ex2_MeanAbsOverRows
// summary: first rung, row reduction family: ex2_MeanAbsOverRows, one plain loop per row
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0) {
    const int64_t rows = x_d0, cols = x_d1;
    for (int64_t r = 0; r < rows; ++r) {
        double sum = 0.0;  // double: a long float sum drifts past the 1e-4 tolerance
        for (int64_t c = 0; c < cols; ++c) {
            sum += std::fabs(x[r * cols + c]);
        }
        out[r] = (float)(sum / (double)cols);
    }
}
