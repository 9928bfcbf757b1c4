// Blocks exchange data through global memory across SyncAll: block b writes 8 floats of its
// own, waits at the barrier, then reads its neighbour's 8 and writes them beside its own.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const int64_t me = GetBlockIdx(), next = (GetBlockIdx() + 1) % GetBlockNum();
    GlobalTensor<float> cGm;
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 32);
    LocalTensor<float> x = buf.Get<float>();
    Duplicate(x, static_cast<float>(me + 1), 8);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(cGm[me * 16], x, 8);
    SyncAll();
    DataCopy(x, cGm[next * 16], 8);  // another block's bytes: ordered by the barrier
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(cGm[me * 16 + 8], x, 8);
}
