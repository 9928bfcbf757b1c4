// task: level1/4_ReLU.py
// expect-gate: runtime
// hack: crashes: writes through a null pointer (segfault)
#include <cstdint>

extern "C" void kernel(const float* x, float* out,
                       int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    volatile float* nowhere = nullptr;
    *nowhere = x[0];
    out[0] = 0.0f;
}
