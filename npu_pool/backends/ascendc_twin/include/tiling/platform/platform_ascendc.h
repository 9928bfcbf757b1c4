// EvoKernel Ascend C twin: the platform query of host tiling code, included as in the toolkit
// (#include "tiling/platform/platform_ascendc.h"). See twin_host_tiling.h.
#pragma once

#include "../../twin_host_tiling.h"
