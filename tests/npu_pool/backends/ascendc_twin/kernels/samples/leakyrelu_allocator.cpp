// tensors: 2
// The static-tensor style: LocalMemAllocator hands out UB, the pipelines are ordered by hand
// (SetFlag/WaitFlag between MTE2 -> V -> MTE3 and back). The host computes the block count
// from the length (one block per n[1] elements, at most the AI cores) and the slope f[0].
using namespace AscendC;

struct LeakyTiling {
    uint32_t totalLength;
    uint32_t blockLength;
    uint32_t tileLength;
    float alpha;
};

void TilingFunc(const KernelTiling& shapes, HostTiling& host)
{
    LeakyTiling t;
    t.totalLength = static_cast<uint32_t>(shapes.n[0]);
    t.tileLength = 1024;
    const uint32_t wanted = AscendC::DivCeil(t.totalLength, static_cast<uint32_t>(shapes.n[1]));
    host.blockDim = wanted < host.coreNum ? wanted : host.coreNum;
    t.blockLength = AscendC::DivCeil(AscendC::DivCeil(t.totalLength, host.blockDim), 8u) * 8;
    t.alpha = shapes.f[0];
    host.SetTiling(t);
}

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    LeakyTiling t;
    CopyTiling(&t, tiling);
    const uint32_t begin = t.blockLength * GetBlockIdx();
    if (begin >= t.totalLength) {
        return;
    }
    const uint32_t length = t.totalLength - begin < t.blockLength ? t.totalLength - begin : t.blockLength;
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + begin, length);
    yGm.SetGlobalBuffer((__gm__ float*)y + begin, length);
    AscendC::LocalMemAllocator<AscendC::Hardware::UB> allocator;
    LocalTensor<float> in = allocator.Alloc<TPosition::VECIN, float>(t.tileLength);
    LocalTensor<float> out = allocator.Alloc<TPosition::VECOUT, float>(t.tileLength);
    for (uint32_t off = 0; off < length; off += t.tileLength) {
        const uint32_t n = length - off < t.tileLength ? length - off : t.tileLength;
        DataCopyExtParams copy{1, n * static_cast<uint32_t>(sizeof(float)), 0, 0, 0};
        if (off > 0) {
            WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);  // the previous tile left UB
        }
        DataCopyPad(in, xGm[off], copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
        LeakyRelu(out, in, t.alpha, static_cast<int32_t>(AscendC::DivCeil(n, 8u) * 8));
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
        DataCopyPad(yGm[off], out, copy);
        SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
    }
    WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
}
