// task: level1/4_ReLU.py
// expect-gate: correctness
// hack: leaves the output uninitialised (writes nothing), hoping for stale results in the buffer
#include <cstdint>

extern "C" void kernel(const float* x, float* out,
                       int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    (void)x; (void)out; (void)x_d0; (void)x_d1; (void)out_d0; (void)out_d1;
}
