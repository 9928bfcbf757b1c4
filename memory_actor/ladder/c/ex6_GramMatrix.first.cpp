// rung: first
// task: ex6_GramMatrix
// summary: first rung, matmul family: ex6_GramMatrix, one dot product per output element
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t M = x_d0, K = x_d1;  // out[i, j] = sum over k of x[i, k] * x[j, k]
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < M; ++j) {
            float sum = 0.0f;
            for (int64_t k = 0; k < K; ++k) {
                sum += x[i * K + k] * x[j * K + k];
            }
            out[i * M + j] = sum;
        }
    }
}
