// task: level1/4_ReLU.py
// expect-gate: correctness
// broken: returns without launching anything (the output stays NaN)
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1,
                       cudaStream_t stream) {
}
