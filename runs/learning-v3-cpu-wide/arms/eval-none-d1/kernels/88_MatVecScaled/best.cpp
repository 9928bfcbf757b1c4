#include <cmath>

extern "C" void kernel(const float* A, const float* v, float* out, double alpha, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;
    const float a = static_cast<float>(alpha);

    // Outer loop: i
    for (int64_t i = 0; i < out_d0; ++i) {
        float acc = 0.0f;

        // Inner loop: k (A columns)
        for (int64_t k = 0; k < A_d1; ++k) {
            acc += v[k] * A[i * A_d1 + k];
        }

        out[i] = a * acc;
    }
}
