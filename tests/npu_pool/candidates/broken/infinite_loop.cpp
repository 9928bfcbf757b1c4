// task: level1/4_ReLU.py
// expect-gate: runtime
// Never returns: spins on a volatile counter (a loop without side effects could be removed
// by the optimiser, so the counter is volatile).
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1,
                       int64_t out_d0, int64_t out_d1) {
    volatile int64_t spins = 0;
    for (;;) spins = spins + 1;
    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
