// EvoKernel Ascend C twin: the library's host tiling helpers, included as in the toolkit
// (#include "tiling/tiling_api.h"). See twin_host_tiling.h.
#pragma once

#include "../kernel_operator.h"
#include "../twin_host_tiling.h"
