#include <cmath>

extern "C" void kernel(const float* A, const float* v, const float* b, float* out, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t b_d0, int64_t b_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t M = A_d0;
    const int64_t K = A_d1;
    const int64_t n = out_d0 * out_d1;
    
    // Allocate local variables for accumulation
    float sum = 0.0f;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        sum = 0.0f;
        #pragma omp simd reduction(+:sum)
        for (int64_t j = 0; j < K; ++j) {
            sum += A[i * K + j] * v[j];
        }
        out[i * out_d1] = sum + b[i];
    }
}
