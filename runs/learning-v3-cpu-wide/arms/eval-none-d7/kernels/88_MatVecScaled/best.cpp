#include <cmath>

extern "C" void kernel(const float* A, const float* v, float* out, double alpha, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;
    const float a = static_cast<float>(alpha);
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float sum = 0.0f;
        for (int64_t j = 0; j < A_d1; ++j) {
            sum += A[i * A_d1 + j] * v[j];
        }
        out[i] = a * sum;
    }
}
