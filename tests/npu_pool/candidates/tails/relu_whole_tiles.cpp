// task: level1/4_ReLU.py
// expect-gate: correctness
// (at the second size: right at the task's own, friendly size)
// WRONG at a size that is no multiple of its tile: only whole tiles of 64 are written, so the
// last, partial tile stays unwritten. Right at every power-of-two size.
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    constexpr int64_t TILE = 64;
    const int64_t n = x_d0 * x_d1;
    for (int64_t begin = 0; begin + TILE <= n; begin += TILE)
        for (int64_t i = begin; i < begin + TILE; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
