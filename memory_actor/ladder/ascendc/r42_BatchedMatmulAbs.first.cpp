// rung: first
// task: r42_BatchedMatmulAbs
// summary: first rung, matmul family, two rank-3 inputs to a rank-3 output (batched): GlobalTensor GetValue/SetValue, one dot product per output element, whole lines of output per block
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR A, GM_ADDR B, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t batch = t.A_d0, M = t.A_d1, K = t.A_d2, N = t.B_d2;  // out[b, i, j] = |sum over k of A[b, i, k] * B[b, k, j]|
    const int64_t total = batch * M * N;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> aGm, bGm, outGm;
    aGm.SetGlobalBuffer((__gm__ float*)A, batch * M * K);
    bGm.SetGlobalBuffer((__gm__ float*)B, batch * K * N);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t idx = begin; idx < end; ++idx) {
        const int64_t b = idx / (M * N), i = idx / N % M, j = idx % N;
        const int64_t aRow = (b * M + i) * K, bCol = b * K * N + j;  // where A[b, i, 0] and B[b, 0, j] are
        float sum = 0.0f;
        for (int64_t k = 0; k < K; ++k) {
            sum += aGm.GetValue(aRow + k) * bGm.GetValue(bCol + k * N);
        }
        outGm.SetValue(idx, sum < 0.0f ? -sum : sum);
    }
}
