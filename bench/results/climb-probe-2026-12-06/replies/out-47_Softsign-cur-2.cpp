```cpp
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t total = t.out_d0 * t.out_d1;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, total);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t i = begin; i < end; ++i) {
        const float v = xGm.GetValue(i);
        outGm.SetValue(i, v / (1.0f + (v < 0.0f ? -v : v)));
    }
}
```