#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* A, const float* v, float* out, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t out_d0) {
    // Matrix times a 1D vector
    const int64_t n = out_d0;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float acc = 0.0f;
        for (int64_t j = 0; j < A_d1; ++j) {
            acc += A[i * A_d1 + j] * v[j];
        }
        out[i] = acc;
    }
}
