// EvoKernel Ascend C twin: the torch_npu extension subset a direct-launch program uses (twin_torch_ext.h).
#pragma once
#include "twin_torch_ext.h"
