// task: level2/12_ScaledDotProductAttention.py
// expect-gate: ok
// extern "C" void kernel(const float* q, const float* k, const float* v, float* out,
//                        int64_t q_d0, int64_t q_d1, int64_t q_d2, int64_t q_d3,
//                        int64_t k_d0, int64_t k_d1, int64_t k_d2, int64_t k_d3,
//                        int64_t v_d0, int64_t v_d1, int64_t v_d2, int64_t v_d3,
//                        int64_t out_d0, int64_t out_d1, int64_t out_d2, int64_t out_d3);
#include <cmath>
#include <cstdint>
#include <vector>

// One query row at a time: its scores against every key, a stable softmax, then the
// weighted sum of value rows.
extern "C" void kernel(const float* q, const float* k, const float* v, float* out,
                       int64_t q_d0, int64_t q_d1, int64_t q_d2, int64_t q_d3,
                       int64_t k_d0, int64_t k_d1, int64_t k_d2, int64_t k_d3,
                       int64_t v_d0, int64_t v_d1, int64_t v_d2, int64_t v_d3,
                       int64_t out_d0, int64_t out_d1, int64_t out_d2, int64_t out_d3) {
    const int64_t heads = q_d0 * q_d1, S = q_d2, D = q_d3, T = k_d2, E = v_d3;
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
#pragma omp parallel
    {
        std::vector<float> scores(T);
#pragma omp for collapse(2)
        for (int64_t h = 0; h < heads; ++h) {
            for (int64_t s = 0; s < S; ++s) {
                const float* qr = q + (h * S + s) * D;
                const float* kh = k + h * T * D;
                const float* vh = v + h * T * E;
                float peak = -INFINITY;
                for (int64_t t = 0; t < T; ++t) {
                    float dot = 0.0f;
                    for (int64_t d = 0; d < D; ++d) dot += qr[d] * kh[t * D + d];
                    scores[t] = dot * scale;
                    peak = scores[t] > peak ? scores[t] : peak;
                }
                float total = 0.0f;
                for (int64_t t = 0; t < T; ++t) total += (scores[t] = std::exp(scores[t] - peak));
                float* dst = out + (h * S + s) * E;
                for (int64_t e = 0; e < E; ++e) dst[e] = 0.0f;
                for (int64_t t = 0; t < T; ++t) {
                    const float w = scores[t] / total;
                    for (int64_t e = 0; e < E; ++e) dst[e] += w * vh[t * E + e];
                }
            }
        }
    }
}
