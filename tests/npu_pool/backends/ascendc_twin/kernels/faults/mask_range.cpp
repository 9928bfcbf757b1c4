// expect-fault: mask-range
// a contiguous mask of 65 for 32-bit elements (64 per repeat)
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb;
    pipe.InitBuffer(xb, 1024 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>();
    Adds(x, x, 1.0f, 65, 1, {1, 1, 8, 8});  // FAULT
}
