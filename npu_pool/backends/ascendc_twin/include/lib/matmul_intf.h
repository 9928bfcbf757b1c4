// EvoKernel Ascend C twin: the high-level Matmul API, included as in the toolkit
// (#include "lib/matmul_intf.h"). See twin_matmul.h.
#pragma once

#include "../twin_matmul.h"
