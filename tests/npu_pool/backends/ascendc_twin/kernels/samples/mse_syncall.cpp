// tensors: 3
// MSELoss, mean((x - y)^2) into out[0], across blocks: each block sums its squared differences
// and stores the partial sum in the user workspace (the host half asks for 32 bytes a block);
// SyncAll waits for every block; block 0 adds the partials. The difference tensor comes from a
// VECCALC queue and is freed without ever being enqueued, which the device allows.
using namespace AscendC;

struct MseTiling {
    uint32_t totalLength, blockLength, tileLength;
};

void TilingFunc(const KernelTiling& shapes, HostTiling& host)
{
    MseTiling t;
    t.totalLength = static_cast<uint32_t>(shapes.n[0]);
    host.blockDim = host.coreNum < 8 ? host.coreNum : 8;
    t.blockLength = AscendC::DivCeil(AscendC::DivCeil(t.totalLength, host.blockDim), 64u) * 64;
    t.tileLength = 1024;
    host.userWorkspaceSize = host.blockDim * 32;
    host.SetTiling(t);
}

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    MseTiling t;
    CopyTiling(&t, tiling);
    const uint32_t begin = t.blockLength * GetBlockIdx();
    const uint32_t length = begin >= t.totalLength ? 0
                            : (t.totalLength - begin < t.blockLength ? t.totalLength - begin : t.blockLength);
    GlobalTensor<float> xGm, yGm, outGm, partialGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + begin, length);
    yGm.SetGlobalBuffer((__gm__ float*)y + begin, length);
    outGm.SetGlobalBuffer((__gm__ float*)out, 8);
    partialGm.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), GetBlockNum() * 8);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inX, inY;
    TQue<TPosition::VECCALC, 1> calc;
    TBuf<TPosition::VECCALC> work, partial;
    pipe.InitBuffer(inX, 1, t.tileLength * sizeof(float));
    pipe.InitBuffer(inY, 1, t.tileLength * sizeof(float));
    pipe.InitBuffer(calc, 1, t.tileLength * sizeof(float));
    pipe.InitBuffer(work, t.tileLength * sizeof(float));
    pipe.InitBuffer(partial, GetBlockNum() * 32);
    LocalTensor<float> acc = partial.Get<float>();
    float sum = 0.0f;
    for (uint32_t off = 0; off < length; off += t.tileLength) {
        const uint32_t n = length - off < t.tileLength ? length - off : t.tileLength;
        DataCopyExtParams copy{1, n * static_cast<uint32_t>(sizeof(float)), 0, 0, 0};
        DataCopyPadExtParams<float> zero{true, 0, static_cast<uint8_t>(AscendC::DivCeil(n, 8u) * 8 - n), 0.0f};
        LocalTensor<float> a = inX.AllocTensor<float>(), b = inY.AllocTensor<float>();
        DataCopyPad(a, xGm[off], copy, zero);
        DataCopyPad(b, yGm[off], copy, zero);
        inX.EnQue(a);
        inY.EnQue(b);
        a = inX.DeQue<float>();
        b = inY.DeQue<float>();
        LocalTensor<float> d = calc.AllocTensor<float>();
        const int32_t padded = static_cast<int32_t>(AscendC::DivCeil(n, 8u) * 8);
        Sub(d, a, b, padded);
        Mul(d, d, d, padded);
        ReduceSum(acc, d, work.Get<float>(), padded);
        SetFlag<HardEvent::V_S>(EVENT_ID0);  // the scalar reads the vector unit's result
        WaitFlag<HardEvent::V_S>(EVENT_ID0);
        sum += acc.GetValue(0);
        SetFlag<HardEvent::S_V>(EVENT_ID0);  // read before the next tile's ReduceSum rewrites it
        WaitFlag<HardEvent::S_V>(EVENT_ID0);
        calc.FreeTensor(d);  // allocated and computed on, never enqueued
        inX.FreeTensor(a);
        inY.FreeTensor(b);
    }
    Duplicate(acc, sum, 8);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(partialGm[GetBlockIdx() * 8], acc, 8);
    if (GetBlockIdx() == 0) {
        InitGlobalMemory(outGm, 8, 0.0f);
    }
    SyncAll();
    if (GetBlockIdx() == 0) {
        DataCopy(acc, partialGm, GetBlockNum() * 8);
        SetFlag<HardEvent::MTE2_S>(EVENT_ID0);  // the partials are in UB before the scalar reads them
        WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
        float total = 0.0f;
        for (int64_t blk = 0; blk < GetBlockNum(); ++blk) {
            total += acc.GetValue(blk * 8);
        }
        outGm.SetValue(0, total / static_cast<float>(t.totalLength));
    }
}
