// task: level1/24_SquareMatmul.py
// expect-gate: ok
// extern "C" void kernel(const float* A, const float* B, float* out,
//                        int64_t A_d0, int64_t A_d1, int64_t B_d0, int64_t B_d1,
//                        int64_t out_d0, int64_t out_d1);
#include <cstdint>

// i-k-j order: the inner loop streams a row of B and a row of out, so it vectorises.
extern "C" void kernel(const float* A, const float* B, float* out,
                       int64_t A_d0, int64_t A_d1, int64_t B_d0, int64_t B_d1,
                       int64_t out_d0, int64_t out_d1) {
    const int64_t M = A_d0, K = A_d1, N = B_d1;
#pragma omp parallel for
    for (int64_t i = 0; i < M; ++i) {
        float* c = out + i * N;
        for (int64_t j = 0; j < N; ++j) c[j] = 0.0f;
        for (int64_t k = 0; k < K; ++k) {
            const float a = A[i * K + k];
            const float* b = B + k * N;
            for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
        }
    }
}
