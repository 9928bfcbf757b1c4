// expect-fault: repeat-limit
// a mask-form Add with 300 repeats
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb;
    pipe.InitBuffer(xb, 160 * 1024);
    LocalTensor<float> x = xb.Get<float>();
    Add(x, x, x, 64, 300, {1, 1, 1, 8, 8, 8});  // FAULT
}
