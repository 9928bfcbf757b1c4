// rung: first
// task: r28_RMSNormWithBias
// summary: first rung, softmax/normalisation family, rank-2 rows with two rank-1 parameters (weight, bias) and int and float constructor scalars: per row a double statistics pass, then one pass writing the row
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, const float* weight, const float* bias, float* out, int64_t features, double eps, int64_t x_d0, int64_t x_d1, int64_t weight_d0, int64_t bias_d0, int64_t out_d0, int64_t out_d1) {
    const int64_t rows = x_d0, cols = x_d1;  // the last axis is the normalised one (features long)
    for (int64_t r = 0; r < rows; ++r) {
        double squares = 0.0;  // double: a long float sum drifts past the 1e-4 tolerance
        for (int64_t c = 0; c < cols; ++c) {
            const double v = x[r * cols + c];
            squares += v * v;
        }
        const double scale = 1.0 / std::sqrt(squares / (double)cols + eps);
        for (int64_t c = 0; c < cols; ++c) {
            out[r * cols + c] = (float)((double)x[r * cols + c] * scale * (double)weight[c] + (double)bias[c]);
        }
    }
}
