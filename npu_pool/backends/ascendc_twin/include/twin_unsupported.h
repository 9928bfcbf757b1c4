// EvoKernel Ascend C twin: real Ascend C APIs that the twin does not implement.
//
// Calling one is a compile error whose message names the API and says it is not in the twin,
// instead of a cryptic template error. An API missing from this list too fails with g++'s own
// "'X' is not a member of 'AscendC'" / "'X' was not declared in this scope", which also names it.
#pragma once

#include "twin_core.h"

// Two shapes per name: plain calls (types deduced) and calls with explicit template arguments
// such as Sigmoid<float, false>(...).
#define EVK_TWIN_NOT_IN_TWIN(NAME)                                                                               \
    template <class... Args>                                                                                     \
    inline void NAME(Args&&...) {                                                                                \
        static_assert(evk_twin::always_false<Args...>,                                                           \
                      "AscendC::" #NAME " is not in the EvoKernel twin (see docs/ascendc_twin.md for the subset)"); \
    }                                                                                                            \
    template <class T, bool B, class... Args>                                                                    \
    inline void NAME(Args&&...) {                                                                                \
        static_assert(evk_twin::always_false<T, Args...>,                                                        \
                      "AscendC::" #NAME " is not in the EvoKernel twin (see docs/ascendc_twin.md for the subset)"); \
    }

namespace AscendC {
// activation and math library functions
EVK_TWIN_NOT_IN_TWIN(Tanh)
EVK_TWIN_NOT_IN_TWIN(Gelu)
EVK_TWIN_NOT_IN_TWIN(FasterGelu)
EVK_TWIN_NOT_IN_TWIN(Silu)
EVK_TWIN_NOT_IN_TWIN(Swish)
EVK_TWIN_NOT_IN_TWIN(Erf)
EVK_TWIN_NOT_IN_TWIN(Erfc)
EVK_TWIN_NOT_IN_TWIN(Sin)
EVK_TWIN_NOT_IN_TWIN(Cos)
EVK_TWIN_NOT_IN_TWIN(Tan)
EVK_TWIN_NOT_IN_TWIN(Asin)
EVK_TWIN_NOT_IN_TWIN(Acos)
EVK_TWIN_NOT_IN_TWIN(Atan)
EVK_TWIN_NOT_IN_TWIN(Sinh)
EVK_TWIN_NOT_IN_TWIN(Cosh)
EVK_TWIN_NOT_IN_TWIN(Power)
EVK_TWIN_NOT_IN_TWIN(Log)
EVK_TWIN_NOT_IN_TWIN(Log2)
EVK_TWIN_NOT_IN_TWIN(Log10)
EVK_TWIN_NOT_IN_TWIN(Sign)
EVK_TWIN_NOT_IN_TWIN(Floor)
EVK_TWIN_NOT_IN_TWIN(Ceil)
EVK_TWIN_NOT_IN_TWIN(Round)
EVK_TWIN_NOT_IN_TWIN(Trunc)
EVK_TWIN_NOT_IN_TWIN(Frac)
EVK_TWIN_NOT_IN_TWIN(ClampMax)
EVK_TWIN_NOT_IN_TWIN(ClampMin)
// normalisation and softmax library functions
EVK_TWIN_NOT_IN_TWIN(SimpleSoftMax)
EVK_TWIN_NOT_IN_TWIN(LogSoftMax)
EVK_TWIN_NOT_IN_TWIN(RmsNorm)
EVK_TWIN_NOT_IN_TWIN(BatchNorm)
EVK_TWIN_NOT_IN_TWIN(GroupNorm)
EVK_TWIN_NOT_IN_TWIN(DeepNorm)
EVK_TWIN_NOT_IN_TWIN(CumSum)
// bitwise and integer vector instructions
EVK_TWIN_NOT_IN_TWIN(Not)
EVK_TWIN_NOT_IN_TWIN(And)
EVK_TWIN_NOT_IN_TWIN(Or)
EVK_TWIN_NOT_IN_TWIN(Xor)
EVK_TWIN_NOT_IN_TWIN(ShiftLeft)
EVK_TWIN_NOT_IN_TWIN(ShiftRight)
// data rearrangement
EVK_TWIN_NOT_IN_TWIN(Transpose)
EVK_TWIN_NOT_IN_TWIN(ConfusionTranspose)
EVK_TWIN_NOT_IN_TWIN(TransDataTo5HD)
EVK_TWIN_NOT_IN_TWIN(Gather)
EVK_TWIN_NOT_IN_TWIN(Gatherb)
EVK_TWIN_NOT_IN_TWIN(Scatter)
EVK_TWIN_NOT_IN_TWIN(Sort)
EVK_TWIN_NOT_IN_TWIN(Sort32)
EVK_TWIN_NOT_IN_TWIN(MrgSort)
EVK_TWIN_NOT_IN_TWIN(TopK)
EVK_TWIN_NOT_IN_TWIN(Concat)
EVK_TWIN_NOT_IN_TWIN(Extract)
EVK_TWIN_NOT_IN_TWIN(Broadcast)
EVK_TWIN_NOT_IN_TWIN(Pad)
EVK_TWIN_NOT_IN_TWIN(UnPad)
EVK_TWIN_NOT_IN_TWIN(ArithProgression)
EVK_TWIN_NOT_IN_TWIN(CreateVecIndex)
// reductions in other shapes (BlockReduceSum/Max/Min are in twin_reduce.h)
EVK_TWIN_NOT_IN_TWIN(PairReduceSum)
EVK_TWIN_NOT_IN_TWIN(RepeatReduceSum)
// the cube unit's low-level path (the high-level Matmul is in lib/matmul_intf.h)
EVK_TWIN_NOT_IN_TWIN(Mmad)
EVK_TWIN_NOT_IN_TWIN(LoadData)
EVK_TWIN_NOT_IN_TWIN(LoadDataWithTranspose)
EVK_TWIN_NOT_IN_TWIN(Fixpipe)
EVK_TWIN_NOT_IN_TWIN(InitConstValue)
// masks set outside the instruction, cross-core synchronisation, other atomics
EVK_TWIN_NOT_IN_TWIN(IBSet)
EVK_TWIN_NOT_IN_TWIN(IBWait)
EVK_TWIN_NOT_IN_TWIN(CrossCoreSetFlag)
EVK_TWIN_NOT_IN_TWIN(CrossCoreWaitFlag)
EVK_TWIN_NOT_IN_TWIN(SetAtomicMax)
EVK_TWIN_NOT_IN_TWIN(SetAtomicMin)
EVK_TWIN_NOT_IN_TWIN(SetAtomicType)
}  // namespace AscendC

#undef EVK_TWIN_NOT_IN_TWIN
