// expect-fault: matmul-tiling
// baseM x baseK = 256 x 128 floats (128 KiB) do not fit L0A (64 KiB)
#include "lib/matmul_intf.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    SetSysWorkspace(workspace);
    TCubeTiling cube;
    cube.M = 256; cube.N = 256; cube.Ka = 128; cube.Kb = 128;
    cube.singleCoreM = 256; cube.singleCoreN = 256; cube.singleCoreK = 128;
    cube.baseM = 256; cube.baseN = 64; cube.baseK = 128;
    TPipe pipe;
    using F = matmul::MatmulType<TPosition::GM, CubeFormat::ND, float>;
    matmul::Matmul<F, F, F> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &cube);  // FAULT
}
