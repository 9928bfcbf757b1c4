#include <cmath>

extern "C" void kernel(const float* A, const float* v, const float* b, float* out, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t b_d0, int64_t b_d1, int64_t out_d0, int64_t out_d1) {
    const auto M = A_d0;
    const auto K = A_d1;
    const auto N = v_d1;

    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        float sum = b[i];
        for (int64_t k = 0; k < K; ++k) {
            sum += A[i * K + k] * v[k];
        }
        out[i] = sum;
    }
}
