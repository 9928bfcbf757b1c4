#include <cstdint>

extern "C" void kernel(const float* A, const float* B, float* out,
                       int64_t A_d0, int64_t A_d1, int64_t B_d0, int64_t B_d1,
                       int64_t out_d0, int64_t out_d1) {
    const int64_t M = A_d0, K = A_d1, N = B_d1;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        float* c = out + i * N;
        for (int64_t j = 0; j < N; ++j) c[j] = 0.0f;  // outputs arrive as NaN
        for (int64_t k = 0; k < K; ++k) {
            const float a = A[i * K + k];
            const float* b = B + k * N;
#pragma omp simd
            for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
        }
    }
}
