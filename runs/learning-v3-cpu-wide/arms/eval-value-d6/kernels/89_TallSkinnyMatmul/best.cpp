#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* A, const float* B, float* out, int64_t A_d0, int64_t A_d1, int64_t B_d0, int64_t B_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t M = A_d0;
    const int64_t K = A_d1;
    const int64_t N = B_d1;

    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            float sum = 0;
            for (int64_t k = 0; k < K; ++k) {
                sum += A[i * K + k] * B[k * N + j];
            }
            out[i * N + j] = sum;
        }
    }
}
