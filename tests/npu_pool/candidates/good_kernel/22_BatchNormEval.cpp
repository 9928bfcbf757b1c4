// task: level1/22_BatchNormEval.py
// expect-gate: ok
// Parameters first, then buffers (named_parameters() then named_buffers() order).
// extern "C" void kernel(const float* x, const float* weight, const float* bias,
//                        const float* running_mean, const float* running_var, float* out,
//                        int64_t num_features, double eps, int64_t x_d0, int64_t x_d1,
//                        int64_t x_d2, int64_t x_d3, int64_t weight_d0, int64_t bias_d0,
//                        int64_t running_mean_d0, int64_t running_var_d0, int64_t out_d0,
//                        int64_t out_d1, int64_t out_d2, int64_t out_d3);
#include <cmath>
#include <cstdint>

// Folds the statistics into one scale and shift per channel, then one pass over each plane.
extern "C" void kernel(const float* x, const float* weight, const float* bias,
                       const float* running_mean, const float* running_var, float* out,
                       int64_t num_features, double eps, int64_t x_d0, int64_t x_d1,
                       int64_t x_d2, int64_t x_d3, int64_t weight_d0, int64_t bias_d0,
                       int64_t running_mean_d0, int64_t running_var_d0, int64_t out_d0,
                       int64_t out_d1, int64_t out_d2, int64_t out_d3) {
    const int64_t C = x_d1, plane = x_d2 * x_d3;
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < x_d0; ++n) {
        for (int64_t c = 0; c < C; ++c) {
            const float scale = weight[c] / std::sqrt(running_var[c] + static_cast<float>(eps));
            const float shift = bias[c] - running_mean[c] * scale;
            const float* src = x + (n * C + c) * plane;
            float* dst = out + (n * C + c) * plane;
            for (int64_t i = 0; i < plane; ++i) dst[i] = src[i] * scale + shift;
        }
    }
}
