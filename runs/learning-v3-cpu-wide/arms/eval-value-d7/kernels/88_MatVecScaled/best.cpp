#include <cmath>

extern "C" void kernel(const float* A, const float* v, float* out, double alpha, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t m = A_d0;
    const int64_t k = A_d1;
    const int64_t n = v_d1;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
        float s = 0.0f;
        for (int64_t j = 0; j < k; ++j) {
            s += A[i * k + j] * v[j];
        }
        out[i] = alpha * s;
    }
}
