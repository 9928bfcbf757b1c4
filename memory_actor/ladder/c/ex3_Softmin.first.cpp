// rung: first
// task: ex3_Softmin
// summary: first rung, softmax/normalisation family: ex3_Softmin, three plain passes per row
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t rows = x_d0, cols = x_d1;
    for (int64_t r = 0; r < rows; ++r) {
        float low = x[r * cols];  // softmax of -x: subtract the largest -x, the row's minimum
        for (int64_t c = 1; c < cols; ++c) {
            if (x[r * cols + c] < low) low = x[r * cols + c];
        }
        double sum = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
            sum += std::exp(low - x[r * cols + c]);
        }
        for (int64_t c = 0; c < cols; ++c) {
            out[r * cols + c] = (float)(std::exp(low - x[r * cols + c]) / sum);
        }
    }
}
