// task: level1/37_Cumsum.py
// expect-gate: ok
// extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0,
//                        int64_t x_d1, int64_t out_d0, int64_t out_d1);
#include <cstdint>

// Running sums kept in double, as torch accumulates float scans on the CPU.
extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0,
                       int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t axis = dim < 0 ? dim + 2 : dim;
    const int64_t lines = axis == 1 ? x_d0 : x_d1;  // independent scans
    const int64_t len = axis == 1 ? x_d1 : x_d0;
    const int64_t step = axis == 1 ? 1 : x_d1;      // distance between scan neighbours
    const int64_t gap = axis == 1 ? x_d1 : 1;       // distance between scan starts
#pragma omp parallel for
    for (int64_t l = 0; l < lines; ++l) {
        double acc = 0.0;
        for (int64_t i = 0; i < len; ++i) {
            const int64_t at = l * gap + i * step;
            acc += x[at];
            out[at] = static_cast<float>(acc);
        }
    }
}
