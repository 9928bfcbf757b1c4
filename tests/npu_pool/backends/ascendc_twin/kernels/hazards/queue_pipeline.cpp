// hazard: pipe-race
// The classic double-buffered pipeline: VECIN and VECOUT queues carry every flag, so the
// synchronised form (n[0] = 1) has none of its own. The hazard form copies the result out
// without passing it through the VECOUT queue (V -> MTE3 unordered). c = 2 a + 1 over 8
// tiles of 128 floats.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TQue<TPosition::VECIN, 2> inQ;
    TQue<TPosition::VECOUT, 2> outQ;
    pipe.InitBuffer(inQ, 2, 128 * sizeof(float));
    pipe.InitBuffer(outQ, 2, 128 * sizeof(float));
    for (int32_t tile = 0; tile < 8; ++tile) {
        LocalTensor<float> x = inQ.AllocTensor<float>();
        DataCopy(x, aGm[tile * 128], 128);
        inQ.EnQue(x);
        x = inQ.DeQue<float>();
        LocalTensor<float> y = outQ.AllocTensor<float>();
        Muls(y, x, 2.0f, 128);
        Adds(y, y, 1.0f, 128);
        inQ.FreeTensor(x);
        if (sync) {
            outQ.EnQue(y);
            y = outQ.DeQue<float>();
        }
        DataCopy(cGm[tile * 128], y, 128);  // HAZARD
        outQ.FreeTensor(y);
    }
}
