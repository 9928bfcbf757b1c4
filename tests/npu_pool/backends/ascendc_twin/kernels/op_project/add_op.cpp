// task: level1/1_Add.py
// An elementwise sum in the op project's newer form, written by us in the published samples'
// layout: a plain tiling struct written in place by the host (GetTilingData<T>,
// SetSimdNumBlocks), the operator's registration (OpDef, InferShape, InferDataType, OP_ADD),
// and a kernel typed through the op build's DTYPE_<NAME> macros that names its struct with
// REGISTER_TILING_DEFAULT. The tail of each block is copied with DataCopyPad.
#include "kernel_operator.h"
#include "register/op_def_registry.h"

struct SumTiling {
    uint32_t total;
    uint32_t perBlock;
    uint32_t tile;
};

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    SumTiling* t = context->GetTilingData<SumTiling>();
    const uint32_t total = static_cast<uint32_t>(context->GetInputShape(0)->GetStorageShape().GetShapeSize());
    const uint32_t blocks = 6;
    context->SetSimdNumBlocks(blocks);
    t->total = total;
    t->perBlock = (total + blocks * 8 - 1) / (blocks * 8) * 8;
    t->tile = 4096;
    *context->GetWorkspaceSizes(1) = 0;
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus InferShape(gert::InferShapeContext* context)
{
    *context->GetOutputShape(0) = *context->GetInputShape(0);
    return GRAPH_SUCCESS;
}
static graphStatus InferDataType(gert::InferDataTypeContext* context)
{
    return context->SetOutputDataType(0, context->GetInputDataType(0));
}
}  // namespace ge

namespace ops {
class SumOp : public OpDef {
public:
    explicit SumOp(const char* name) : OpDef(name)
    {
        this->Input("first").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Input("second").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("total").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Attr("unused").AttrType(OPTIONAL).Float(0.0f);
        this->SetInferShape(ge::InferShape).SetInferDataType(ge::InferDataType);
        this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
    }
};
OP_ADD(SumOp);
}  // namespace ops

extern "C" __global__ __aicore__ void kernel(GM_ADDR first, GM_ADDR second, GM_ADDR total, GM_ADDR workspace,
                                             GM_ADDR tiling)
{
    REGISTER_TILING_DEFAULT(SumTiling);
    GET_TILING_DATA(t, tiling);
    const uint32_t begin = t.perBlock * AscendC::GetBlockIdx();
    const uint32_t length = begin >= t.total ? 0 : (t.total - begin < t.perBlock ? t.total - begin : t.perBlock);
    AscendC::GlobalTensor<DTYPE_FIRST> aGm;
    AscendC::GlobalTensor<DTYPE_SECOND> bGm;
    AscendC::GlobalTensor<DTYPE_TOTAL> cGm;
    aGm.SetGlobalBuffer((__gm__ DTYPE_FIRST*)first + begin, length);
    bGm.SetGlobalBuffer((__gm__ DTYPE_SECOND*)second + begin, length);
    cGm.SetGlobalBuffer((__gm__ DTYPE_TOTAL*)total + begin, length);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 3 * t.tile * sizeof(DTYPE_TOTAL));
    AscendC::LocalTensor<DTYPE_TOTAL> a = buf.Get<DTYPE_TOTAL>();
    AscendC::LocalTensor<DTYPE_TOTAL> b = a[t.tile];
    AscendC::LocalTensor<DTYPE_TOTAL> c = b[t.tile];
    for (uint32_t off = 0; off < length; off += t.tile) {
        const uint32_t n = length - off < t.tile ? length - off : t.tile;
        AscendC::DataCopyExtParams copy{1, static_cast<uint32_t>(n * sizeof(DTYPE_TOTAL)), 0, 0, 0};
        AscendC::DataCopyPad(a, aGm[off], copy, AscendC::DataCopyPadExtParams<DTYPE_FIRST>{false, 0, 0, 0});
        AscendC::DataCopyPad(b, bGm[off], copy, AscendC::DataCopyPadExtParams<DTYPE_SECOND>{false, 0, 0, 0});
        AscendC::PipeBarrier<PIPE_ALL>();
        AscendC::Add(c, a, b, static_cast<int32_t>((n + 7) / 8 * 8));
        AscendC::PipeBarrier<PIPE_ALL>();
        AscendC::DataCopyPad(cGm[off], c, copy);
        AscendC::PipeBarrier<PIPE_ALL>();
    }
}
