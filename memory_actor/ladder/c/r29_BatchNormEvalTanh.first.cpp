// rung: first
// task: r29_BatchNormEvalTanh
// summary: first rung, softmax/normalisation family, rank-4 NCHW with four rank-1 per-channel parameters and int and float constructor scalars: one plain loop per (image, channel) plane, the channel's scale and shift worked out once
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, const float* weight, const float* bias, const float* running_mean, const float* running_var, float* out, int64_t num_features, double eps, int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t x_d3, int64_t weight_d0, int64_t bias_d0, int64_t running_mean_d0, int64_t running_var_d0, int64_t out_d0, int64_t out_d1, int64_t out_d2, int64_t out_d3) {
    const int64_t images = x_d0, channels = x_d1, plane = x_d2 * x_d3;  // one channel's H x W values are contiguous
    for (int64_t n = 0; n < images; ++n) {
        for (int64_t c = 0; c < channels; ++c) {
            const double scale = (double)weight[c] / std::sqrt((double)running_var[c] + eps);
            const double shift = (double)bias[c] - (double)running_mean[c] * scale;
            const int64_t base = (n * channels + c) * plane;
            for (int64_t i = 0; i < plane; ++i) {
                out[base + i] = (float)std::tanh((double)x[base + i] * scale + shift);
            }
        }
    }
}
