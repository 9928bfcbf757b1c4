// rung: first
// task: r43_AbsMatVec1d
// summary: first rung, matmul family, a rank-2 and a rank-1 input to a rank-1 output (matrix-vector): GlobalTensor GetValue/SetValue, one dot product per output element, whole lines of output per block
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR A, GM_ADDR v, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t M = t.A_d0, K = t.A_d1;  // out[i] = |sum over k of A[i, k] * v[k]|
    const int64_t per = ((M + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < M ? begin + per : M;  // the last block's share ends at the tail
    GlobalTensor<float> aGm, vGm, outGm;
    aGm.SetGlobalBuffer((__gm__ float*)A, M * K);
    vGm.SetGlobalBuffer((__gm__ float*)v, K);
    outGm.SetGlobalBuffer((__gm__ float*)out, M);
    for (int64_t i = begin; i < end; ++i) {
        float sum = 0.0f;
        for (int64_t k = 0; k < K; ++k) {
            sum += aGm.GetValue(i * K + k) * vGm.GetValue(k);
        }
        outGm.SetValue(i, sum < 0.0f ? -sum : sum);
    }
}
