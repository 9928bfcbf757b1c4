// tensors: 3
// SoftMax through the library, as the published sample does it: the host computes the rows
// per block and per tile, GetSoftMaxMinTmpSize and SoftMaxTilingFunc for one tile's shape; the
// kernel runs SoftMax (isBasicBlock when the tile allows it) and AdjustSoftMaxRes, and writes
// each row's maximum (one 32-byte block per row) besides the result. Rows: n[0], length n[1]
// (a multiple of 8).
#include "tiling/tiling_api.h"
using namespace AscendC;

struct SoftmaxTilingData {
    uint32_t rows, cols;
    uint32_t rowsPerBlock, rowsPerTile;
    uint32_t tmpBytes;
    SoftMaxTiling softmax;
};

void TilingFunc(const KernelTiling& shapes, HostTiling& host)
{
    SoftmaxTilingData t;
    t.rows = static_cast<uint32_t>(shapes.n[0]);
    t.cols = static_cast<uint32_t>(shapes.n[1]);
    host.blockDim = t.rows < host.coreNum ? t.rows : host.coreNum;
    t.rowsPerBlock = AscendC::DivCeil(t.rows, host.blockDim);
    host.blockDim = AscendC::DivCeil(t.rows, t.rowsPerBlock);  // no empty block
    t.rowsPerTile = t.rowsPerBlock < 8 ? t.rowsPerBlock : 8;
    ge::Shape tile({t.rowsPerTile, t.cols});
    t.tmpBytes = AscendC::GetSoftMaxMinTmpSize(tile, sizeof(float), false);
    AscendC::SoftMaxTilingFunc(tile, sizeof(float), t.tmpBytes, t.softmax);
    host.SetTiling(t);
}

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR maxima, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    SoftmaxTilingData t;
    CopyTiling(&t, tiling);
    const uint32_t first = t.rowsPerBlock * GetBlockIdx();
    const uint32_t rows = t.rows - first < t.rowsPerBlock ? t.rows - first : t.rowsPerBlock;
    GlobalTensor<float> xGm, maxGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + first * t.cols, rows * t.cols);
    yGm.SetGlobalBuffer((__gm__ float*)y + first * t.cols, rows * t.cols);
    maxGm.SetGlobalBuffer((__gm__ float*)maxima + first * 8, rows * 8);
    TPipe pipe;
    TQue<TPosition::VECIN, 2> queueX;
    TQue<TPosition::VECOUT, 1> queueMax, queueSum;
    TBuf<TPosition::VECCALC> tmp;
    pipe.InitBuffer(queueX, 2, t.rowsPerTile * t.cols * sizeof(float));
    pipe.InitBuffer(queueMax, 1, t.rowsPerTile * 8 * sizeof(float));
    pipe.InitBuffer(queueSum, 1, t.rowsPerTile * 8 * sizeof(float));
    pipe.InitBuffer(tmp, t.tmpBytes);
    for (uint32_t r = 0; r < rows; r += t.rowsPerTile) {
        const uint32_t n = rows - r < t.rowsPerTile ? rows - r : t.rowsPerTile;
        LocalTensor<float> xLocal = queueX.AllocTensor<float>();
        DataCopy(xLocal, xGm[r * t.cols], n * t.cols);
        queueX.EnQue(xLocal);
        xLocal = queueX.DeQue<float>();
        LocalTensor<float> maxLocal = queueMax.AllocTensor<float>();
        LocalTensor<float> sumLocal = queueSum.AllocTensor<float>();
        SoftMaxShapeInfo shape{n, t.cols, n, t.cols};
        if (n % 8 == 0 && t.cols % 64 == 0 && t.cols < 2048) {
            SoftMax<float, false, true>(xLocal, sumLocal, maxLocal, xLocal, tmp.Get<uint8_t>(), t.softmax, shape);
        } else {
            SoftMax<float>(xLocal, sumLocal, maxLocal, xLocal, tmp.Get<uint8_t>(), t.softmax, shape);
        }
        AdjustSoftMaxRes<float, float>(xLocal, maxLocal, 0xFF7FFFFF, 0.0f, shape);  // rows of -FLT_MAX: 0
        queueX.EnQue(xLocal);
        queueMax.EnQue(maxLocal);
        queueSum.FreeTensor(sumLocal);  // computed on, never enqueued: the device allows the release
        LocalTensor<float> yLocal = queueX.DeQue<float>();
        maxLocal = queueMax.DeQue<float>();
        DataCopy(yGm[r * t.cols], yLocal, n * t.cols);
        DataCopy(maxGm[r * 8], maxLocal, n * 8);
        queueX.FreeTensor(yLocal);
        queueMax.FreeTensor(maxLocal);
    }
}
