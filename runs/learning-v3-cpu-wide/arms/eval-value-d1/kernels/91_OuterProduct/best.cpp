#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* u, const float* v, float* out, int64_t u_d0, int64_t u_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t m = u_d0 * u_d1;  // size of the first input tensor
    const int64_t n = v_d0 * v_d1;  // size of the second input tensor
    const int64_t p = out_d0 * out_d1; // size of the output tensor
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
        const float u_i = u[i];
        for (int64_t j = 0; j < n; ++j) {
            const float v_j = v[j];
            out[i * out_d1 + j] = u_i * v_j;  // op
        }
    }
}
