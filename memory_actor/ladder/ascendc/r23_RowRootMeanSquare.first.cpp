// rung: first
// task: r23_RowRootMeanSquare
// summary: first rung, row reduction over a given dim, rank 2 to rank 1: GlobalTensor GetValue/SetValue, whole lines of output elements per block, one loop over the reduced axis each
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t axis = t.dim < 0 ? t.dim + 2 : t.dim;  // a negative dim counts from the end
    const int64_t len = axis == 0 ? t.x_d0 : t.x_d1;     // the reduced axis
    const int64_t step = axis == 0 ? t.x_d1 : 1;         // between neighbours along the reduced axis
    const int64_t stride = axis == 0 ? 1 : t.x_d1;       // between the starts of two outputs
    const int64_t total = t.out_d0;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, t.x_d0 * t.x_d1);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t r = begin; r < end; ++r) {
        float sum = 0.0f;
        for (int64_t k = 0; k < len; ++k) {
            const float v = xGm.GetValue(r * stride + k * step);
            sum += v * v;
        }
        outGm.SetValue(r, sqrtf(sum / (float)len));
    }
}
