#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* A, const float* v, float* out,
                       int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1,
                       int64_t out_d0, int64_t out_d1) {
    // Sizes
    const int64_t M = A_d0, K = A_d1, N = v_d1;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        float* c = out + i * N;
        for (int64_t j = 0; j < N; ++j) {  // This loop is hot, so keep it contiguous
            // Compute the dot product of row i and column j
            double sum = 0.0;
#pragma omp simd reduction(+:sum)
            for (int64_t k = 0; k < K; ++k) {
                sum += A[i * K + k] * v[k];
            }
            // Store the result in the output array
            c[j] = static_cast<float>(sum);
        }
    }
}
