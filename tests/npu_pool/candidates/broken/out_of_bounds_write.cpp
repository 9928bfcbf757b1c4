// task: level1/4_ReLU.py
// expect-gate: runtime
// Computes ReLU, then writes far past the end of `out` (about 4 TiB away): a segfault.
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1,
                       int64_t out_d0, int64_t out_d1) {
    const int64_t n = x_d0 * x_d1;
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
    volatile float* far = out + n + (int64_t{1} << 40);
    *far = 1.0f;
}
