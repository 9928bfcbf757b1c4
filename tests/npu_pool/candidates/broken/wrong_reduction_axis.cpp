// task: level1/14_SumOverDim.py
// expect-gate: correctness
// Sums over the last axis instead of axis `dim`: out[b, 0, j] = sum_k x[b, j, k]. With
// dim1 == dim2 every output element gets a value of the right magnitude; only the values
// give it away. Writes stay inside `out` whatever the sizes.
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t dim,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2,
                       int64_t out_d0, int64_t out_d1, int64_t out_d2) {
#pragma omp parallel for collapse(2)
    for (int64_t b = 0; b < out_d0; ++b) {
        for (int64_t j = 0; j < out_d2; ++j) {
            float acc = 0.0f;
            if (j < x_d1) {
                const float* row = x + (b * x_d1 + j) * x_d2;
                for (int64_t k = 0; k < x_d2; ++k) acc += row[k];
            }
            out[b * out_d2 + j] = acc;
        }
    }
}
