// rung: first
// task: ex6_GramMatrix
// summary: first rung, matmul family: ex6_GramMatrix, GlobalTensor GetValue/SetValue, one dot product per output element
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t M = t.x_d0, K = t.x_d1;  // out[i, j] = sum over k of x[i, k] * x[j, k]
    const int64_t total = M * M;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, M * K);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t idx = begin; idx < end; ++idx) {
        const int64_t i = idx / M, j = idx % M;
        float sum = 0.0f;
        for (int64_t k = 0; k < K; ++k) {
            sum += xGm.GetValue(i * K + k) * xGm.GetValue(j * K + k);
        }
        outGm.SetValue(idx, sum);
    }
}
