// tensors: 2
// Kernel-only form (no host half): y = x[1::2] + 1. GatherMask with the built-in pattern 2 (odd
// elements) packs a tile's odd elements, then counter mode (SetMaskCount, SetVectorMask,
// MASK_PLACEHOLDER with isSetMask = false) adds 1 to exactly the gathered count.
using namespace AscendC;

constexpr uint32_t TILE = 512;  // floats per tile: 8 repeats of 64

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    const uint32_t total = static_cast<uint32_t>(ReadTiling(tiling).n[0]);  // a multiple of TILE * GetBlockNum()
    const uint32_t per = total / GetBlockNum(), begin = per * GetBlockIdx();
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + begin, per);
    yGm.SetGlobalBuffer((__gm__ float*)y + begin / 2, per / 2);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> in;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(in, 1, TILE * sizeof(float));
    pipe.InitBuffer(outQ, 1, TILE / 2 * sizeof(float));
    for (uint32_t off = 0; off < per; off += TILE) {
        LocalTensor<float> a = in.AllocTensor<float>();
        DataCopy(a, xGm[off], TILE);
        in.EnQue(a);
        a = in.DeQue<float>();
        LocalTensor<float> b = outQ.AllocTensor<float>();
        uint64_t kept = 0;
        GatherMask(b, a, static_cast<uint8_t>(2), false, 0, GatherMaskParams{1, TILE / 64, 8, 0}, kept);
        SetMaskCount();
        SetVectorMask<float, MaskMode::COUNTER>(0, kept);
        Adds<float, false>(b, b, 1.0f, MASK_PLACEHOLDER, 1, UnaryRepeatParams{1, 1, 8, 8});
        SetMaskNorm();
        ResetMask();
        in.FreeTensor(a);
        outQ.EnQue(b);
        b = outQ.DeQue<float>();
        DataCopy(yGm[off / 2], b, TILE / 2);
        outQ.FreeTensor(b);
    }
}
