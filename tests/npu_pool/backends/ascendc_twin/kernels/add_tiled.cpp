// c = a + b, each block a contiguous slice, tiles streamed through queues of n[2] buffers
// (2: double buffering, 1: each stage waits for the previous one).
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int64_t per = t.n[0] / GetBlockNum(), tile = t.n[1];
    const uint8_t buffers = static_cast<uint8_t>(t.n[2]);
    GlobalTensor<float> aGm, bGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a + per * GetBlockIdx(), per);
    bGm.SetGlobalBuffer((__gm__ float*)b + per * GetBlockIdx(), per);
    cGm.SetGlobalBuffer((__gm__ float*)c + per * GetBlockIdx(), per);
    TPipe pipe;
    TQue<TPosition::VECIN, 2> inA, inB;
    TQue<TPosition::VECOUT, 2> out;
    pipe.InitBuffer(inA, buffers, tile * sizeof(float));
    pipe.InitBuffer(inB, buffers, tile * sizeof(float));
    pipe.InitBuffer(out, buffers, tile * sizeof(float));
    for (int64_t off = 0; off < per; off += tile) {
        LocalTensor<float> x = inA.AllocTensor<float>();
        LocalTensor<float> y = inB.AllocTensor<float>();
        DataCopy(x, aGm[off], tile);
        DataCopy(y, bGm[off], tile);
        inA.EnQue(x);
        inB.EnQue(y);
        LocalTensor<float> xi = inA.DeQue<float>();
        LocalTensor<float> yi = inB.DeQue<float>();
        LocalTensor<float> z = out.AllocTensor<float>();
        Add(z, xi, yi, tile);
        out.EnQue<float>(z);
        inA.FreeTensor(xi);
        inB.FreeTensor(yi);
        LocalTensor<float> zo = out.DeQue<float>();
        DataCopy(cGm[off], zo, tile);
        out.FreeTensor(zo);
    }
}
