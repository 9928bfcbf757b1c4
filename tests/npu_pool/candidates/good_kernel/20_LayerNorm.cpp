// task: level1/20_LayerNorm.py
// expect-gate: ok
// extern "C" void kernel(const float* x, const float* norm_weight, const float* norm_bias,
//                        float* out, int64_t normalized_shape, double eps,
//                        int64_t x_d0, int64_t x_d1, int64_t norm_weight_d0,
//                        int64_t norm_bias_d0, int64_t out_d0, int64_t out_d1);
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, const float* norm_weight, const float* norm_bias,
                       float* out, int64_t normalized_shape, double eps,
                       int64_t x_d0, int64_t x_d1, int64_t norm_weight_d0,
                       int64_t norm_bias_d0, int64_t out_d0, int64_t out_d1) {
    const int64_t rows = x_d0 * x_d1 / normalized_shape;
    const int64_t n = normalized_shape;
#pragma omp parallel for
    for (int64_t row = 0; row < rows; ++row) {
        const float* src = x + row * n;
        float* dst = out + row * n;
        double sum = 0.0, sum_sq = 0.0;
        for (int64_t j = 0; j < n; ++j) {
            sum += src[j];
            sum_sq += static_cast<double>(src[j]) * src[j];
        }
        const double mean = sum / n;
        const double var = sum_sq / n - mean * mean;  // biased, as LayerNorm uses
        const float inv_std = static_cast<float>(1.0 / std::sqrt(var + eps));
        const float m = static_cast<float>(mean);
        for (int64_t j = 0; j < n; ++j) dst[j] = (src[j] - m) * inv_std * norm_weight[j] + norm_bias[j];
    }
}
