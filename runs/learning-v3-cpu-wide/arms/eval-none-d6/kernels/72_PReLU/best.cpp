#include <cmath>

extern "C" void kernel(const float* x, const float* prelu_weight, float* out, double init, int64_t x_d0, int64_t x_d1, int64_t prelu_weight_d0, int64_t out_d0, int64_t out_d1) {
    const int64_t n = x_d0 * x_d1;
    const float slope = static_cast<float>(init);
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        out[i] = x[i] >= 0 ? x[i] : slope * x[i];
    }
}
