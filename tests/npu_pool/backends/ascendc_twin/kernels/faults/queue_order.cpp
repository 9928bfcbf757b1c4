// expect-fault: queue-order
// FreeTensor of a tensor that is still in its queue (EnQue-d, never DeQue-d)
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 256);
    LocalTensor<float> x = in.AllocTensor<float>();
    DataCopy(x, aGm, 64);
    in.EnQue(x);
    in.FreeTensor(x);  // FAULT
}
