// EvoKernel Ascend C twin: the tiling structs that host code fills and kernels read, and the
// twin's temporary-buffer sizes of the library APIs (one definition for the host helpers of
// twin_host_tiling.h and the kernel-side checks of twin_library.h).
//
// The structs carry the field names of the public documentation; the twin's library reads
// only the fields named in each API's comment. The minimum temporary sizes are the twin's own
// (a float row of scratch plus a 256-byte reduction area): kernels that take them from the
// Get...MinTmpSize helpers, as the samples do, get consistent numbers; a device's differ.
#pragma once

#include "twin_core.h"

namespace AscendC {

// Matrix layouts: the kernel's MatmulType and the host's tiling (matmul_tiling) name this one enum.
enum class CubeFormat : uint8_t { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR };

namespace tiling {

// The cube's tiling (lib/matmul_intf.h): M, N, Ka, Kb are the matrices' shapes; singleCoreM/N/K
// one core's share; baseM/N/K the block one Iterate computes.
struct TCubeTiling {
    int32_t usedCoreNum = 1;
    int32_t M = 0, N = 0, Ka = 0, Kb = 0;
    int32_t singleCoreM = 0, singleCoreN = 0, singleCoreK = 0;
    int32_t baseM = 0, baseN = 0, baseK = 0;
    int32_t depthA1 = 1, depthB1 = 1, stepM = 1, stepN = 1, stepKa = 1, stepKb = 1;
    int32_t isBias = 0, transLength = 0, iterateOrder = 0;
    int32_t shareMode = 0, shareL1Size = 0, shareL0CSize = 0, shareUbSize = 0;
    int32_t batchM = 1, batchN = 1, singleBatchM = 1, singleBatchN = 1;
    int32_t depthAL1CacheUB = 0, depthBL1CacheUB = 0, dbL0A = 1, dbL0B = 1, dbL0C = 1;
};

// SoftMax's tiling: the twin reads srcM, srcK (the shape it was computed for) and splitM (rows
// one pass of the temporary buffer holds).
struct SoftMaxTiling {
    uint32_t srcM = 0, srcK = 0, srcSize = 0, outMaxM = 0, outMaxK = 0, outMaxSize = 0, splitM = 0, splitK = 0,
             splitSize = 0, reduceM = 0, reduceK = 0, reduceSize = 0, rangeM = 0, tailM = 0, tailSplitSize = 0,
             tailReduceSize = 0;
};

// LayerNorm's tiling: the twin reads bLength, sLength, hLength (the padded row),
// originalHLength (the row's valid elements) and tmpBufSize.
struct LayerNormTiling {
    uint32_t bLength = 0, sLength = 0, hLength = 0, originalHLength = 0, inputXSize = 0, meanVarSize = 0,
             numberOfTmpBuf = 0, meanTmpTensorPos = 0, meanTmpTensorSize = 0, varianceTmpTensorPos = 0,
             varianceTmpTensorSize = 0, tmpBufSize = 0, oneTmpSize = 0, firstTmpStartPos = 0, secondTmpStartPos = 0,
             thirdTmpStartPos = 0, loopRound = 0, inputRoundSize = 0, inputTailSize = 0, inputTailPos = 0,
             meanVarRoundSize = 0, meanVarTailSize = 0, meanVarTailPos = 0, bshCurLength = 0, bsCurLength = 0;
    float lastDimValueBack = 0.0f;
};

}  // namespace tiling

using tiling::LayerNormTiling;
using tiling::SoftMaxTiling;
using tiling::TCubeTiling;

// The rows a SoftMax call computes: srcM rows of srcK elements (the padded, 32-byte aligned
// row), of which oriSrcK are valid; zero fields take the tiling's shape.
struct SoftMaxShapeInfo {
    uint32_t srcM = 0, srcK = 0, oriSrcM = 0, oriSrcK = 0;
};

// Sum: outter rows of inner elements (32-byte aligned), of which the first n are summed.
struct SumParams {
    uint32_t outter = 1;
    uint32_t inner = 0;
    uint32_t n = 0;
};

}  // namespace AscendC

// Kernels of the samples name the structs at global scope, host code also as optiling::.
using AscendC::tiling::LayerNormTiling;
using AscendC::tiling::SoftMaxTiling;
using AscendC::tiling::TCubeTiling;
namespace optiling {
using AscendC::tiling::LayerNormTiling;
using AscendC::tiling::SoftMaxTiling;
using AscendC::tiling::TCubeTiling;
}  // namespace optiling

namespace evk_twin {

inline uint64_t align32(uint64_t bytes) { return (bytes + 31) / 32 * 32; }

// The twin's temporary-buffer minimum of each library API, in bytes: one float row of the
// widest row the call reads, plus 256 bytes for the reduction's partial results.
inline uint32_t softmax_min_tmp(uint32_t srcK) { return static_cast<uint32_t>(align32(uint64_t(srcK) * 4) + 256); }
inline uint32_t softmax_max_tmp(uint32_t srcM, uint32_t srcK) { return srcM * softmax_min_tmp(srcK); }
inline uint32_t sigmoid_min_tmp() { return 256; }
inline uint32_t layernorm_min_tmp(uint32_t hLength) { return static_cast<uint32_t>(align32(uint64_t(hLength) * 4) + 256); }
inline uint32_t sum_min_tmp(uint32_t n) { return static_cast<uint32_t>(align32(uint64_t(n) * 4) / 8 + 256); }
inline uint32_t reduce_min_tmp(uint32_t inner) { return static_cast<uint32_t>(align32(uint64_t(inner) * 4) + 256); }

}  // namespace evk_twin

// --- the op project's tiling data: BEGIN_TILING_DATA_DEF on the host, GET_TILING_DATA in the kernel
//
// One struct serves both halves (the twin compiles them together): fields with set_/get_
// accessors, SaveToBuffer and GetDataSize for the host; REGISTER_TILING_DATA_CLASS(Op, Name)
// makes it the struct GET_TILING_DATA(var, tiling) copies from the kernel's tiling argument
// (found from the kernel's scope, or in namespace optiling where the samples declare it).
namespace optiling {
struct EvkAnchor {};
}  // namespace optiling

namespace evk_twin {
template <class Anchor>
struct TilingTag {};

template <class T>
inline void copy_tiling(T* local, const uint8_t* tiling) {
    static_assert(std::is_trivially_copyable<T>::value, "a tiling struct is plain data");
    std::memcpy(local, tiling, sizeof(T));
}
}  // namespace evk_twin

#define BEGIN_TILING_DATA_DEF(NAME) \
    struct NAME {                   \
        using EvkSelf = NAME;
#define TILING_DATA_FIELD_DEF(TYPE, FIELD)          \
    TYPE FIELD = TYPE();                            \
    void set_##FIELD(TYPE value) { FIELD = value; } \
    TYPE get_##FIELD() const { return FIELD; }
#define TILING_DATA_FIELD_DEF_ARR(TYPE, COUNT, FIELD)                                              \
    TYPE FIELD[COUNT] = {};                                                                        \
    void set_##FIELD(const TYPE* value) { std::memcpy(FIELD, value, sizeof(TYPE) * (COUNT)); }     \
    const TYPE* get_##FIELD() const { return FIELD; }
#define TILING_DATA_FIELD_DEF_STRUCT(TYPE, FIELD) TYPE FIELD;
#define END_TILING_DATA_DEF                                                                            \
    void SaveToBuffer(void* buffer, size_t capacity) const {                                           \
        std::memcpy(buffer, this, sizeof(EvkSelf) < capacity ? sizeof(EvkSelf) : capacity);           \
    }                                                                                                  \
    size_t GetDataSize() const { return sizeof(EvkSelf); }                                             \
    }
#define REGISTER_TILING_DATA_CLASS(OP, NAME) \
    inline NAME evk_registered_tiling(evk_twin::TilingTag<::optiling::EvkAnchor>) { return NAME(); }
// REGISTER_TILING_DEFAULT(Name) in the kernel (newer samples, a plain struct): a block-scope
// declaration naming the struct GET_TILING_DATA copies (unevaluated: no definition needed).
#define REGISTER_TILING_DEFAULT(NAME) NAME evk_registered_tiling(evk_twin::TilingTag<::optiling::EvkAnchor>)
#define GET_TILING_DATA(VAR, TILING)                                                  \
    decltype(evk_registered_tiling(evk_twin::TilingTag<::optiling::EvkAnchor>())) VAR; \
    evk_twin::copy_tiling(&VAR, reinterpret_cast<const uint8_t*>(TILING))
#define GET_TILING_DATA_WITH_STRUCT(TYPE, VAR, TILING) \
    TYPE VAR;                                          \
    evk_twin::copy_tiling(&VAR, reinterpret_cast<const uint8_t*>(TILING))
#define TILING_KEY_IS(KEY) (evk_twin::state().tiling_key == static_cast<uint64_t>(KEY))
