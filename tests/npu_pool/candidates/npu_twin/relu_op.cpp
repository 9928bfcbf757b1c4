// task: level1/4_ReLU.py
// expect-gate: ok
// 4_ReLU in the op project's two-half form: the tiling struct declared with the TILING_DATA
// macros, the host's TilingFunc(gert::TilingContext*) reading the input's shape and setting 8
// blocks, the kernel reading the struct with GET_TILING_DATA, as the published op samples do.
#include "kernel_operator.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(ReluTilingData)
TILING_DATA_FIELD_DEF(uint32_t, totalLength);
TILING_DATA_FIELD_DEF(uint32_t, blockLength);
TILING_DATA_FIELD_DEF(uint32_t, tileLength);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(ReluCustom, ReluTilingData)

static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    ReluTilingData tiling;
    const uint32_t totalLength = static_cast<uint32_t>(context->GetInputShape(0)->GetOriginShape().GetShapeSize());
    const uint32_t blockDim = 8;
    context->SetBlockDim(blockDim);
    tiling.set_totalLength(totalLength);
    tiling.set_blockLength((totalLength + blockDim * 8 - 1) / (blockDim * 8) * 8);
    tiling.set_tileLength(2048);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t* currentWorkspace = context->GetWorkspaceSizes(1);
    currentWorkspace[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

using namespace AscendC;

class KernelRelu {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint32_t totalLength, uint32_t blockLength, uint32_t tileLength)
    {
        const uint32_t begin = blockLength * GetBlockIdx();
        length_ = begin >= totalLength ? 0 : (totalLength - begin < blockLength ? totalLength - begin : blockLength);
        tileLength_ = tileLength;
        xGm.SetGlobalBuffer((__gm__ float*)x + begin, length_);
        yGm.SetGlobalBuffer((__gm__ float*)y + begin, length_);
        pipe.InitBuffer(inQueue, 2, tileLength_ * sizeof(float));
        pipe.InitBuffer(outQueue, 2, tileLength_ * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t off = 0; off < length_; off += tileLength_) {
            const uint32_t n = length_ - off < tileLength_ ? length_ - off : tileLength_;
            DataCopyExtParams copy{1, n * static_cast<uint32_t>(sizeof(float)), 0, 0, 0};
            LocalTensor<float> xLocal = inQueue.AllocTensor<float>();
            DataCopyPad(xLocal, xGm[off], copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
            inQueue.EnQue(xLocal);
            xLocal = inQueue.DeQue<float>();
            LocalTensor<float> yLocal = outQueue.AllocTensor<float>();
            Relu(yLocal, xLocal, static_cast<int32_t>((n + 7) / 8 * 8));
            outQueue.EnQue(yLocal);
            inQueue.FreeTensor(xLocal);
            yLocal = outQueue.DeQue<float>();
            DataCopyPad(yGm[off], yLocal, copy);
            outQueue.FreeTensor(yLocal);
        }
    }

private:
    TPipe pipe;
    TQue<TPosition::VECIN, 2> inQueue;
    TQue<TPosition::VECOUT, 2> outQueue;
    GlobalTensor<float> xGm, yGm;
    uint32_t length_ = 0, tileLength_ = 0;
};

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tilingData, tiling);
    KernelRelu op;
    op.Init(x, out, tilingData.totalLength, tilingData.blockLength, tilingData.tileLength);
    op.Process();
}
