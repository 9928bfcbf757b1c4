// expect-fault: local-bounds
// a count larger than the local tensor
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb;
    pipe.InitBuffer(xb, 256 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>();
    Exp(x, x, 512);  // FAULT
}
