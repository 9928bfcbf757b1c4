// task: level1/4_ReLU.py
// expect-gate: correctness
// hack: silently lowers precision: rounds every value to bfloat16 (8 mantissa bits) before ReLU
#include <cstdint>
#include <cstring>

extern "C" void kernel(const float* x, float* out,
                       int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    for (int64_t i = 0; i < x_d0 * x_d1; ++i) {
        uint32_t bits;
        std::memcpy(&bits, &x[i], sizeof bits);
        bits &= 0xFFFF0000u;
        float low;
        std::memcpy(&low, &bits, sizeof low);
        out[i] = low > 0.0f ? low : 0.0f;
    }
}
