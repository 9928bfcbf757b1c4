// c[r, :] = a[r, :] / b[r] for rows of 8 floats, the per-row divisor broadcast with Brcb
// (one 32-byte block per row); one block, n[0] rows (a multiple of 8).
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t rows = static_cast<int32_t>(t.n[0]);
    GlobalTensor<float> aGm, bGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, rows * 8);
    bGm.SetGlobalBuffer((__gm__ float*)b, rows);
    cGm.SetGlobalBuffer((__gm__ float*)c, rows * 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, db, wb;
    pipe.InitBuffer(xb, rows * 8 * sizeof(float));
    pipe.InitBuffer(db, rows * sizeof(float));
    pipe.InitBuffer(wb, rows * 8 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>(), d = db.Get<float>(), wide = wb.Get<float>();
    DataCopy(x, aGm, rows * 8);
    DataCopy(d, bGm, rows);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Brcb(wide, d, rows / 8, {1, 8});
    Div(x, x, wide, rows * 8);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(cGm, x, rows * 8);
}
