// task: level1/4_ReLU.py
// expect-gate: runtime
// hack: allocates without bound: keeps taking and touching 128 MiB blocks until the sandbox memory cap makes malloc fail (then traps); gives up by itself after 8 GiB, so a missing cap shows as a wrong verdict rather than a dead machine
#include <cstdint>
#include <cstdlib>
#include <cstring>

extern "C" void kernel(const float* x, float* out,
                       int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const size_t block = size_t(128) << 20;
    for (int i = 0; i < 64; ++i) {
        char* p = static_cast<char*>(std::malloc(block));
        if (p == nullptr) __builtin_trap();
        std::memset(p, 1, block);
    }
    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
