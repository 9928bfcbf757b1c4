// rung: first
// task: r22_ArgmaxAbsOverDim
// summary: first rung, row reduction over a given dim to an int64 index, rank 3 to rank 2: GlobalTensor GetValue/SetValue, whole lines of output elements per block, one loop over the reduced axis each keeping the first best
using namespace AscendC;
constexpr int64_t LINE = 16;  // 16 outputs: whole 64-byte cache lines (two of int64), so each block writes lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t axis = t.dim < 0 ? t.dim + 3 : t.dim;  // a negative dim counts from the end
    const int64_t len = axis == 0 ? t.x_d0 : (axis == 1 ? t.x_d1 : t.x_d2);  // the reduced axis
    const int64_t inner = axis == 0 ? t.x_d1 * t.x_d2 : (axis == 1 ? t.x_d2 : 1);  // elements after it
    const int64_t total = t.out_d0 * t.out_d1;  // one output index per (outer, inner) pair
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm;
    GlobalTensor<int64_t> outGm;  // the indices are int64
    xGm.SetGlobalBuffer((__gm__ float*)x, total * len);
    outGm.SetGlobalBuffer((__gm__ int64_t*)out, total);
    for (int64_t i = begin; i < end; ++i) {
        const int64_t start = (i / inner) * len * inner + i % inner;  // x's element k = 0 of output i
        int64_t best = 0;
        float first = xGm.GetValue(start);
        float bestValue = first < 0.0f ? -first : first;
        for (int64_t k = 1; k < len; ++k) {
            const float v = xGm.GetValue(start + k * inner);
            const float a = v < 0.0f ? -v : v;
            if (a > bestValue) {  // strictly greater: the first position wins a tie
                bestValue = a;
                best = k;
            }
        }
        outGm.SetValue(i, best);
    }
}
