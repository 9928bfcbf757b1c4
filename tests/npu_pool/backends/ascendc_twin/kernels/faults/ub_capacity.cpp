// expect-fault: ub-capacity
// two 128 KiB queues do not fit a 192 KiB Unified Buffer
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> in;
    TQue<TPosition::VECOUT, 1> out;
    pipe.InitBuffer(in, 1, 128 * 1024);
    pipe.InitBuffer(out, 1, 128 * 1024);  // FAULT
}
