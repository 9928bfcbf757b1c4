#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* u, const float* v, float* out,
                       int64_t u_d0, int64_t u_d1, int64_t v_d0, int64_t v_d1,
                       int64_t out_d0, int64_t out_d1) {
    const int64_t M = u_d0;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        float* c = out + i * v_d1;
        for (int64_t j = 0; j < v_d1; ++j) c[j] = 0.0f;  // outputs arrive as NaN
        const float u_i = u[i];  // keep the hot row
#pragma omp simd
        for (int64_t k = 0; k < v_d1; ++k) c[k] += u_i * v[0 * v_d1 + k];
    }
}
