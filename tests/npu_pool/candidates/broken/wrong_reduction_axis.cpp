// task: level1/14_SumOverDim.py
// expect-gate: correctness
// Sums over the last axis instead of axis `dim`. With dim1 == dim2 the element count of
// the output is the same, so only the values give it away.
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t dim,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2,
                       int64_t out_d0, int64_t out_d1, int64_t out_d2) {
    const int64_t rows = x_d0 * x_d1;
#pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        float acc = 0.0f;
        for (int64_t k = 0; k < x_d2; ++k) acc += x[r * x_d2 + k];
        out[r] = acc;
    }
}
