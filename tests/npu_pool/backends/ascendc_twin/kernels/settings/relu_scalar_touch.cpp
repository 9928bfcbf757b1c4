// task: level1/4_ReLU.py
// 4_ReLU through TBufs with explicit MTE2/V/MTE3 flags, and the first element of every tile
// read back and rewritten by the scalar unit: correct as CANN builds by default (--cce-auto-sync
// inserts V_S and S_MTE3), a race as built with --cce-auto-sync=off (harness.npu_twin.auto_sync).
using namespace AscendC;

constexpr int64_t TILE = 2048;  // floats per tile (8 KiB)

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t total = t.x_d0 * t.x_d1;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + 7) / 8 * 8;
    const int64_t begin = GetBlockIdx() * per;
    const int64_t length = begin >= total ? 0 : (total - begin < per ? total - begin : per);
    if (length == 0) {
        return;
    }
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + begin, length);
    outGm.SetGlobalBuffer((__gm__ float*)out + begin, length);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb;
    pipe.InitBuffer(xb, TILE * sizeof(float));
    pipe.InitBuffer(yb, TILE * sizeof(float));
    LocalTensor<float> xLocal = xb.Get<float>(), yLocal = yb.Get<float>();
    for (int64_t off = 0; off < length; off += TILE) {
        const int64_t count = length - off < TILE ? length - off : TILE;
        DataCopyExtParams params{1, static_cast<uint32_t>(count * sizeof(float)), 0, 0, 0};
        DataCopyPad(xLocal, xGm[off], params, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
        Relu(yLocal, xLocal, static_cast<int32_t>((count + 7) / 8 * 8));
        yLocal.SetValue(0, yLocal.GetValue(0));  // SCALAR
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
        DataCopyPad(outGm[off], yLocal, params);
        SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
    }
}
