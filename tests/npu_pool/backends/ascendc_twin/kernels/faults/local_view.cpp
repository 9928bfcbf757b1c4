// expect-fault: local-bounds
// a view x[2048] past the end of a 1024-float tensor (reported at the API call before it)
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GlobalTensor<float> aGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb;
    pipe.InitBuffer(xb, 1024 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>();
    DataCopy(x, aGm, 1024);  // FAULT
    Adds(x[2048], x[2048], 1.0f, 8);
}
