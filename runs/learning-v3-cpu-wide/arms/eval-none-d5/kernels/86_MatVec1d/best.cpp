#include <cmath>

extern "C" void kernel(const float* A, const float* v, float* out, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t out_d0) {
    const int64_t n = out_d0;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float sum = 0.0f;
        for (int64_t k = 0; k < A_d1; ++k) {
            sum += A[i * A_d1 + k] * v[k];
        }
        out[i] = sum;
    }
}
