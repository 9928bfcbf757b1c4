// expect-fault: matmul-workspace
// Matmul registered without SetSysWorkspace(workspace)
#include "lib/matmul_intf.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TCubeTiling cube;
    cube.M = 64; cube.N = 64; cube.Ka = 64; cube.Kb = 64;
    cube.singleCoreM = 64; cube.singleCoreN = 64; cube.singleCoreK = 64;
    cube.baseM = 64; cube.baseN = 64; cube.baseK = 64;
    TPipe pipe;
    using F = matmul::MatmulType<TPosition::GM, CubeFormat::ND, float>;
    matmul::Matmul<F, F, F> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &cube);  // FAULT
}
