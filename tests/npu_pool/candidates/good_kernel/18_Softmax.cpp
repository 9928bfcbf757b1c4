// task: level1/18_Softmax.py
// expect-gate: ok
// extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1,
//                        int64_t out_d0, int64_t out_d1);
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1,
                       int64_t out_d0, int64_t out_d1) {
#pragma omp parallel for
    for (int64_t row = 0; row < x_d0; ++row) {
        const float* src = x + row * x_d1;
        float* dst = out + row * x_d1;
        float peak = src[0];
        for (int64_t j = 1; j < x_d1; ++j) peak = src[j] > peak ? src[j] : peak;
        double total = 0.0;
        for (int64_t j = 0; j < x_d1; ++j) {
            dst[j] = std::exp(src[j] - peak);
            total += dst[j];
        }
        const float scale = static_cast<float>(1.0 / total);
        for (int64_t j = 0; j < x_d1; ++j) dst[j] *= scale;
    }
}
