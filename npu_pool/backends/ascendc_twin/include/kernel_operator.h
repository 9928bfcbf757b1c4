// EvoKernel's CPU twin of the Ascend C programming model: the header kernels include.
//
// A kernel written for the real toolkit, within the subset listed in docs/ascendc_twin.md,
// compiles unchanged against this header with g++ -std=c++17:
//     #include "kernel_operator.h"
//     using namespace AscendC;
// Written by the EvoKernel authors from the public Ascend C API documentation; no CANN header
// or source was used. The launcher side lives in twin_runtime.h; the cube's high-level Matmul
// in lib/matmul_intf.h and the host tiling helpers in tiling/tiling_api.h (as in the toolkit).
#pragma once

#include "twin_core.h"
#include "twin_debug.h"
#include "twin_half.h"
#include "twin_pipe.h"
#include "twin_allocator.h"
#include "twin_copy.h"
#include "twin_sync.h"
#include "twin_vector.h"
#include "twin_cast.h"
#include "twin_compare.h"
#include "twin_mask.h"
#include "twin_reduce.h"
#include "twin_tiling_types.h"
#include "twin_library.h"
#include "twin_unsupported.h"
