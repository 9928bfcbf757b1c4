// EvoKernel Ascend C twin: the platform query under the shorter include path some samples use
// (#include "platform/platform_ascendc.h"). See twin_host_tiling.h.
#pragma once

#include "../tiling/platform/platform_ascendc.h"
