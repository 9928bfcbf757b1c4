// task: level1/4_ReLU.py
// expect-gate: runtime
// hack: hangs: spins forever on a volatile flag (the run timeout must stop it)
#include <cstdint>

extern "C" void kernel(const float* x, float* out,
                       int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    volatile int keep_going = 1;
    while (keep_going) {
    }
    out[0] = x[0];
}
