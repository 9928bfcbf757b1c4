// rung: first
// task: r43_AbsMatVec1d
// summary: first rung, matmul family, a rank-2 and a rank-1 input to a rank-1 output (matrix-vector): one double dot product per output element
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* A, const float* v, float* out, int64_t A_d0, int64_t A_d1, int64_t v_d0,
                       int64_t out_d0) {
    const int64_t M = A_d0, K = A_d1;  // out[i] = |sum over k of A[i, k] * v[k]|
    for (int64_t i = 0; i < M; ++i) {
        double sum = 0.0;  // double: a long float sum drifts past the 1e-4 tolerance
        for (int64_t k = 0; k < K; ++k) {
            sum += (double)A[i * K + k] * (double)v[k];
        }
        out[i] = (float)std::fabs(sum);
    }
}
