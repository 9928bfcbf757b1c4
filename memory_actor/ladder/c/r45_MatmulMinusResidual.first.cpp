// rung: first
// task: r45_MatmulMinusResidual
// summary: first rung, matmul family, three rank-2 inputs to a rank-2 output: one double dot product per output element, minus the residual's element
#include <cstdint>

extern "C" void kernel(const float* A, const float* B, const float* R, float* out, int64_t A_d0, int64_t A_d1,
                       int64_t B_d0, int64_t B_d1, int64_t R_d0, int64_t R_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t M = A_d0, K = A_d1, N = B_d1;  // out[i, j] = sum over k of A[i, k] * B[k, j], minus R[i, j]
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            double sum = 0.0;  // double: a long float sum drifts past the 1e-4 tolerance
            for (int64_t k = 0; k < K; ++k) {
                sum += (double)A[i * K + k] * (double)B[k * N + j];
            }
            out[i * N + j] = (float)(sum - (double)R[i * N + j]);
        }
    }
}
