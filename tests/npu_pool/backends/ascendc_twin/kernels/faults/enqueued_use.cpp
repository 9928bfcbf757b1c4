// expect-fault: queue-order
// computing on a tensor after EnQue, before DeQue
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> out;
    pipe.InitBuffer(out, 1, 256);
    LocalTensor<float> y = out.AllocTensor<float>();
    out.EnQue(y);
    Duplicate(y, 0.0f, 64);  // FAULT
}
