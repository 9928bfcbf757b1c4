#include <cmath>

extern "C" void kernel(const float* A, const float* B, float* out, int64_t A_d0, int64_t A_d1, int64_t B_d0, int64_t B_d1, int64_t out_d0, int64_t out_d1) {
    // Matrix dimensions
    const int64_t N = A_d0;
    const int64_t M = B_d1;

    // Output dimensions
    const int64_t K = A_d1;  // equivalent to N for this case

    // Local variables for accumulation
    float acc[K];

    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < out_d0; ++i) {
        for (int64_t j = 0; j < out_d1; ++j) {
            // Accumulate the product of elements in the current row and column
            acc[j] = 0;
            for (int64_t k = 0; k < K; ++k) {
                acc[j] += A[i * K + k] * B[k * M + j];
            }

            // Write the accumulated value to the output
            out[i * out_d1 + j] = acc[j];
        }
    }
}
