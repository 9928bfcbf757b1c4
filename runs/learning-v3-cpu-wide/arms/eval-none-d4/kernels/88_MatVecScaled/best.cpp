#include <cmath>
#include <cstdint>

extern "C" void kernel(
    const float* A,  // input, float32 [A_d0 x A_d1] (now 2048x2048)
    const float* v,  // input, float32 [v_d0 x v_d1] (now 2048x1)
    float* out,      // output, float32 [out_d0 x out_d1] (now 2048x1)
    double alpha,    // constructor argument alpha (now 0.5)
    int64_t A_d0,    // size of dimension 0 of A (now 2048)
    int64_t A_d1,    // size of dimension 1 of A (now 2048)
    int64_t v_d0,    // size of dimension 0 of v (now 2048)
    int64_t v_d1,    // size of dimension 1 of v (now 1)
    int64_t out_d0,  // size of dimension 0 of out (now 2048)
    int64_t out_d1   // size of dimension 1 of out (now 1)
) {
    const int64_t n = A_d0 * v_d1;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float sum = 0.0f;
        #pragma omp simd reduction(+:sum)
        for (int64_t k = 0; k < A_d1; ++k) {
            sum += A[i * A_d1 + k] * v[k];
        }
        out[i] = alpha * sum;
    }
}
