#include <cmath>

extern "C" void kernel(const float* u, const float* v, float* out, int64_t u_d0, int64_t u_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;
    #pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < u_d0; ++k) {
        const float* uk = u + k * u_d1;
        for (int64_t j = 0; j < v_d1; ++j) {
            out[k * out_d1 + j] = 0.0f;
            for (int64_t i = 0; i < u_d1; ++i) {
                out[k * out_d1 + j] += uk[i] * v[j * u_d1 + i];
            }
        }
    }
}
