// task: level1/4_ReLU.py
// expect-gate: runtime
// (at the second size: right at the task's own, friendly size)
// WRONG: ignores its size arguments and runs over the 128 x 4096 elements of the size it was
// shown (tests' fitted size), so at any other size it reads and writes past its tensors.
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = 128 * 4096;
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
