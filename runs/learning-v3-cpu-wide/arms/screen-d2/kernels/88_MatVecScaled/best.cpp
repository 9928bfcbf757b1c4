#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* A, const float* v, float* out, double alpha, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t M = A_d0;
    const int64_t K = A_d1;
    const int64_t n = out_d0 * out_d1;
    const float a = static_cast<float>(alpha);
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float localAcc = 0.0f;
        for (int64_t k = 0; k < K; ++k) {
            localAcc += A[i * K + k] * v[k];
        }
        out[i] = a * localAcc;
    }
}
