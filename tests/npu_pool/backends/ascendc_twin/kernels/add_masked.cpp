// c = a + b in the mask/repeat form (64 floats per repeat), then even elements doubled with a
// bit-by-bit mask. One block; n[0] a multiple of 64.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t n = static_cast<int32_t>(t.n[0]);
    GlobalTensor<float> aGm, bGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, n);
    bGm.SetGlobalBuffer((__gm__ float*)b, n);
    cGm.SetGlobalBuffer((__gm__ float*)c, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb;
    pipe.InitBuffer(xb, n * sizeof(float));
    pipe.InitBuffer(yb, n * sizeof(float));
    LocalTensor<float> x = xb.Get<float>(), y = yb.Get<float>();
    DataCopy(x, aGm, n);
    DataCopy(y, bGm, n);
    PipeBarrier<PIPE_ALL>();
    Add(x, x, y, 64, n / 64, {1, 1, 1, 8, 8, 8});
    uint64_t even[2] = {0x5555555555555555ull, 0};
    Muls(x, x, 2.0f, even, n / 64, {1, 1, 8, 8});
    PipeBarrier<PIPE_ALL>();
    DataCopy(cGm, x, n);
}
