#include <cmath>

extern "C" void kernel(const float* A, const float* v, float* out, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1) {
    for (int64_t i = 0; i < out_d0; ++i) {
        float acc = 0.0;
        for (int64_t k = 0; k < A_d1; ++k) {
            acc += A[i * A_d1 + k] * v[k];
        }
        out[i] = acc;
    }
}
