// task: level1/18_Softmax.py
// expect-gate: correctness
// A correct row softmax that only processes the first half of the rows; the rest of `out`
// keeps whatever the harness put there (NaN).
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1,
                       int64_t out_d0, int64_t out_d1) {
    for (int64_t row = 0; row < x_d0 / 2; ++row) {
        const float* src = x + row * x_d1;
        float* dst = out + row * x_d1;
        float peak = src[0];
        for (int64_t j = 1; j < x_d1; ++j) peak = src[j] > peak ? src[j] : peak;
        float total = 0.0f;
        for (int64_t j = 0; j < x_d1; ++j) total += (dst[j] = std::exp(src[j] - peak));
        for (int64_t j = 0; j < x_d1; ++j) dst[j] /= total;
    }
}
