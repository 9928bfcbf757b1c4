// rung: first
// task: r42_BatchedMatmulAbs
// summary: first rung, matmul family, two rank-3 inputs to a rank-3 output (batched): one double dot product per output element
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* A, const float* B, float* out, int64_t A_d0, int64_t A_d1, int64_t A_d2,
                       int64_t B_d0, int64_t B_d1, int64_t B_d2, int64_t out_d0, int64_t out_d1, int64_t out_d2) {
    const int64_t batch = A_d0, M = A_d1, K = A_d2, N = B_d2;  // out[b, i, j] = |sum over k of A[b, i, k] * B[b, k, j]|
    for (int64_t b = 0; b < batch; ++b) {
        const float* a = A + b * M * K;  // this batch's matrices
        const float* bm = B + b * K * N;
        float* o = out + b * M * N;
        for (int64_t i = 0; i < M; ++i) {
            for (int64_t j = 0; j < N; ++j) {
                double sum = 0.0;  // double: a long float sum drifts past the 1e-4 tolerance
                for (int64_t k = 0; k < K; ++k) {
                    sum += (double)a[i * K + k] * (double)bm[k * N + j];
                }
                o[i * N + j] = (float)std::fabs(sum);
            }
        }
    }
}
