// expect-fault: queue-depth
// a third AllocTensor from a queue of two buffers without freeing one
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TQue<TPosition::VECIN, 2> in;
    pipe.InitBuffer(in, 2, 256);
    LocalTensor<float> x0 = in.AllocTensor<float>();
    LocalTensor<float> x1 = in.AllocTensor<float>();
    LocalTensor<float> x2 = in.AllocTensor<float>();  // FAULT
}
