#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* A, const float* v, const float* b, float* out, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t b_d0, int64_t b_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t M = A_d0;
    const int64_t K = A_d1;
    const float alpha = v_d1 == 1 ? 0.5 : 1.0; // default alpha for b has value 1.0

    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        float s = 0.0f;
        for (int64_t j = 0; j < K; ++j) {
            s += A[i * K + j] * v[j];
        }
        out[i] = s + b[i];
    }
}
