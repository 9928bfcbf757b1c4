// expect-fault: assert
// ascendc_assert with a false condition: the device traps and prints the message
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const int64_t blocks = GetBlockNum();
    ascendc_assert(blocks > 1, "needs at least 2 blocks, got %d", static_cast<int>(blocks));  // FAULT
}
