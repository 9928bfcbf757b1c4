using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR A, GM_ADDR B, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t N = t.A_d0;        // size of dimension 0 of A and B (now 384)
    const int64_t total = N * N;      // out[i, j] = sum over k of A[i, k] * B[k, j]
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> aGm, bGm, outGm;
    aGm.SetGlobalBuffer((__gm__ float*)A, N * N);
    bGm.SetGlobalBuffer((__gm__ float*)B, N * N);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t idx = begin; idx < end; ++idx) {
        const int64_t i = idx / N, j = idx % N;
        float sum = 0.0f;
        for (int64_t k = 0; k < N; ++k) {
            sum += aGm.GetValue(i * N + k) * bGm.GetValue(k * N + j);
        }
        outGm.SetValue(idx, sum);
    }
}
