// rung: first
// task: r13_ParamSwish
// summary: first rung, elementwise family, a rank-2 input and a one-element parameter to a rank-2 output with a constructor scalar: the parameter read once by GetValue, then GlobalTensor GetValue/SetValue over each block's share of whole lines
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR beta, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t total = t.out_d0 * t.out_d1;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, betaGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, total);
    betaGm.SetGlobalBuffer((__gm__ float*)beta, t.beta_d0);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    const float w = betaGm.GetValue(0);  // the parameter's value now; t.init only started it
    for (int64_t i = begin; i < end; ++i) {
        const float v = xGm.GetValue(i);
        outGm.SetValue(i, v / (1.0f + expf(-w * v)));  // v * sigmoid(w * v)
    }
}
