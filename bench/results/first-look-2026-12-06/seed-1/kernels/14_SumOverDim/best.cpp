using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(
    GM_ADDR x,          // input, float32 [x_d0 x x_d1 x x_d2] (now 32x256x256)
    GM_ADDR out,        // output, float32 [out_d0 x out_d1 x out_d2] (now 32x1x256)
    GM_ADDR workspace,  // 16 MiB scratch (SetSysWorkspace(workspace) before Matmul)
    GM_ADDR tiling      // KernelTiling in global memory
) {
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t axis = t.dim;  // a negative dim counts from the end
    const int64_t len = axis == 0 ? t.x_d0 : (axis == 1 ? t.x_d1 : t.x_d2);  // the reduced axis
    const int64_t inner = axis == 0 ? t.x_d1 * t.x_d2 : (axis == 1 ? t.x_d2 : 1);  // elements after it
    const int64_t total = t.out_d0 * t.out_d1 * t.out_d2;  // keepdim: the reduced axis has length 1 in out
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, total * len);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t i = begin; i < end; ++i) {
        const int64_t start = (i / inner) * len * inner + i % inner;  // x's element k = 0 of output i
        float sum = 0.0f;
        for (int64_t k = 0; k < len; ++k) {
            const float v = xGm.GetValue(start + k * inner);
            sum += v;
        }
        outGm.SetValue(i, sum);
    }
}
