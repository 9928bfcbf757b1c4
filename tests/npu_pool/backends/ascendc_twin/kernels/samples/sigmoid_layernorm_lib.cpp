// tensors: 6
// LayerNorm of [B, S, H] rows through the library, then Sigmoid on its result, in one kernel:
// the host half fills LayerNormTiling (GetLayerNormNDTilingInfo) for one block's rows and
// sizes both temporary buffers (GetLayerNormMaxMinTmpSize, GetSigmoidMaxMinTmpSize); each block
// takes n[1] / blockDim whole sequences. Inputs x [n[0], n[1], n[2]], gamma, beta [n[2]];
// outputs y, mean and variance [n[0] * n[1]]; epsilon f[0].
#include "tiling/tiling_api.h"
using namespace AscendC;

struct NormTiling {
    uint32_t rowsPerBlock, h, tmpBytes;
    float epsilon;
    LayerNormTiling layernorm;
};

void TilingFunc(const KernelTiling& shapes, HostTiling& host)
{
    NormTiling t;
    const uint32_t b = static_cast<uint32_t>(shapes.n[0]), s = static_cast<uint32_t>(shapes.n[1]);
    t.h = static_cast<uint32_t>(shapes.n[2]);
    host.blockDim = b;  // one batch per block
    t.rowsPerBlock = s;
    ge::Shape shape({1, s, t.h});
    uint32_t maxNorm = 0, minNorm = 0, maxSigmoid = 0, minSigmoid = 0;
    AscendC::GetLayerNormMaxMinTmpSize(shape, sizeof(float), false, maxNorm, minNorm);
    AscendC::GetSigmoidMaxMinTmpSize(ge::Shape({s * t.h}), sizeof(float), false, maxSigmoid, minSigmoid);
    t.tmpBytes = minNorm > minSigmoid ? minNorm : minSigmoid;
    AscendC::GetLayerNormNDTilingInfo(shape, t.tmpBytes, sizeof(float), false, t.layernorm);
    t.epsilon = shapes.f[0];
    host.SetTiling(t);
}

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean,
                                             GM_ADDR variance, GM_ADDR workspace, GM_ADDR tiling)
{
    NormTiling t;
    CopyTiling(&t, tiling);
    ascendc_assert(t.h % 8 == 0, "rows of %u floats are not 32-byte multiples", t.h);
    const uint32_t rows = t.rowsPerBlock, first = rows * GetBlockIdx();
    GlobalTensor<float> xGm, gammaGm, betaGm, yGm, meanGm, varGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + first * t.h, rows * t.h);
    yGm.SetGlobalBuffer((__gm__ float*)y + first * t.h, rows * t.h);
    gammaGm.SetGlobalBuffer((__gm__ float*)gamma, t.h);
    betaGm.SetGlobalBuffer((__gm__ float*)beta, t.h);
    meanGm.SetGlobalBuffer((__gm__ float*)mean + first, rows);
    varGm.SetGlobalBuffer((__gm__ float*)variance + first, rows);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inX, inGamma, inBeta;
    TQue<TPosition::VECOUT, 1> outY, outMean, outVar;
    TBuf<TPosition::VECCALC> tmp;
    pipe.InitBuffer(inX, 1, rows * t.h * sizeof(float));
    pipe.InitBuffer(inGamma, 1, t.h * sizeof(float));
    pipe.InitBuffer(inBeta, 1, t.h * sizeof(float));
    pipe.InitBuffer(outY, 1, rows * t.h * sizeof(float));
    pipe.InitBuffer(outMean, 1, AscendC::DivCeil(rows, 8u) * 32);
    pipe.InitBuffer(outVar, 1, AscendC::DivCeil(rows, 8u) * 32);
    pipe.InitBuffer(tmp, t.tmpBytes);
    LocalTensor<float> xLocal = inX.AllocTensor<float>(), gLocal = inGamma.AllocTensor<float>(),
                       bLocal = inBeta.AllocTensor<float>();
    DataCopy(xLocal, xGm, rows * t.h);
    DataCopy(gLocal, gammaGm, t.h);
    DataCopy(bLocal, betaGm, t.h);
    inX.EnQue(xLocal);
    inGamma.EnQue(gLocal);
    inBeta.EnQue(bLocal);
    xLocal = inX.DeQue<float>();
    gLocal = inGamma.DeQue<float>();
    bLocal = inBeta.DeQue<float>();
    LocalTensor<float> yLocal = outY.AllocTensor<float>(), mLocal = outMean.AllocTensor<float>(),
                       vLocal = outVar.AllocTensor<float>();
    LayerNorm<float, false>(yLocal, mLocal, vLocal, xLocal, gLocal, bLocal, tmp.Get<uint8_t>(), t.epsilon, t.layernorm);
    Sigmoid<float, false>(yLocal, yLocal, tmp.Get<uint8_t>(), rows * t.h);
    outY.EnQue(yLocal);
    outMean.EnQue(mLocal);
    outVar.EnQue(vLocal);
    inX.FreeTensor(xLocal);
    inGamma.FreeTensor(gLocal);
    inBeta.FreeTensor(bLocal);
    yLocal = outY.DeQue<float>();
    mLocal = outMean.DeQue<float>();
    vLocal = outVar.DeQue<float>();
    DataCopy(yGm, yLocal, rows * t.h);
    DataCopyExtParams small{1, rows * static_cast<uint32_t>(sizeof(float)), 0, 0, 0};
    DataCopyPad(meanGm, mLocal, small);
    DataCopyPad(varGm, vLocal, small);
    outY.FreeTensor(yLocal);
    outMean.FreeTensor(mLocal);
    outVar.FreeTensor(vLocal);
}
