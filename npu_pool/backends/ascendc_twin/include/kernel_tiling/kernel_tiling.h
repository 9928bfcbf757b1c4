// EvoKernel Ascend C twin: the tiling structs kernels read (TCubeTiling, SoftMaxTiling, ...),
// included as in the toolkit (#include "kernel_tiling/kernel_tiling.h"). See twin_tiling_types.h.
#pragma once

#include "../kernel_operator.h"
