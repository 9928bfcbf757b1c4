// task: level1/4_ReLU.py
// expect-gate: correctness
// "ReLU" as a plain copy: right only where the input is non-negative (as with torch.rand
// inputs); the task draws torch.randn inputs, half of them negative.
#include <cstdint>
#include <cstring>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1,
                       int64_t out_d0, int64_t out_d1) {
    std::memcpy(out, x, sizeof(float) * x_d0 * x_d1);
}
