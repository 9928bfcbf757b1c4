// expect-fault: sync-all
// block 1 returns before the SyncAll that block 0 waits at: the device would wait forever
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    if (GetBlockIdx() == 1) {
        return;
    }
    SyncAll();  // FAULT
}
