#include <cstdint>

extern "C" void kernel(const float* A, const float* B, float* out, int64_t A_d0, int64_t A_d1, int64_t B_d0, int64_t B_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t m = A_d0;
    const int64_t n = B_d1;
    const int64_t k = A_d1;
    #pragma omp parallel for collapse(2)
    for (int64_t i = 0; i < out_d0; ++i) {
        for (int64_t j = 0; j < out_d1; ++j) {
            float acc = 0.0f;
            for (int64_t l = 0; l < k; ++l) {
                acc += A[i * k + l] * B[l * n + j];
            }
            out[i * out_d1 + j] = acc;
        }
    }
}
