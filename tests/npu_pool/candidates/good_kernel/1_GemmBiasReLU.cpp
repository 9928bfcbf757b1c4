// task: level2/1_GemmBiasReLU.py
// expect-gate: ok
// Parameters come in named_parameters() order: the module's own `bias` before `gemm.weight`.
// extern "C" void kernel(const float* x, const float* bias, const float* gemm_weight,
//                        float* out, int64_t in_features, int64_t out_features,
//                        int64_t x_d0, int64_t x_d1, int64_t bias_d0,
//                        int64_t gemm_weight_d0, int64_t gemm_weight_d1,
//                        int64_t out_d0, int64_t out_d1);
#include <cstdint>

// out[b, o] = relu(dot(x[b, :], gemm_weight[o, :]) + bias[o]); both rows are contiguous.
extern "C" void kernel(const float* x, const float* bias, const float* gemm_weight,
                       float* out, int64_t in_features, int64_t out_features,
                       int64_t x_d0, int64_t x_d1, int64_t bias_d0,
                       int64_t gemm_weight_d0, int64_t gemm_weight_d1,
                       int64_t out_d0, int64_t out_d1) {
    const int64_t B = x_d0, K = x_d1, O = gemm_weight_d0;
#pragma omp parallel for collapse(2)
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t o = 0; o < O; ++o) {
            const float* xr = x + b * K;
            const float* wr = gemm_weight + o * K;
            float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
            for (int64_t k = 0; k < K; ++k) acc += xr[k] * wr[k];
            acc += bias[o];
            out[b * O + o] = acc > 0.0f ? acc : 0.0f;
        }
    }
}
