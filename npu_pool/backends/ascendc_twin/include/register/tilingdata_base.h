// EvoKernel Ascend C twin: the op project's tiling-data macros, included as in the toolkit
// (#include "register/tilingdata_base.h"). See twin_tiling_types.h and twin_host_tiling.h.
#pragma once

#include "../tiling/tiling_api.h"
