// EvoKernel Ascend C twin: the host-side tiling helpers of the library, for a kernel's host half.
//
// Plain C++ run on the host before the launch (include "tiling/tiling_api.h", as with CANN):
// ge::Shape; gert::TilingContext (the op project's tiling function); platform_ascendc::PlatformAscendC (the modelled SoC's cores, UB size and library
// workspace); SoftMaxTilingFunc with GetSoftMaxMinTmpSize/MaxTmpSize; GetSigmoidMaxMinTmpSize;
// GetLayerNormMaxMinTmpSize with GetLayerNormNDTilingInfo; GetSumMaxMinTmpSize;
// GetReduceMaxMaxMinTmpSize; matmul_tiling::MultiCoreMatmulTiling. Temporary sizes are the
// twin's (twin_tiling_types.h), consistent with its kernel-side checks.
#pragma once

#include <initializer_list>

#include "twin_pipe.h"
#include "twin_tiling_types.h"

namespace ge {

class Shape {
public:
    Shape() = default;
    Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
    explicit Shape(const std::vector<int64_t>& dims) : dims_(dims) {}
    size_t GetDimNum() const { return dims_.size(); }
    int64_t GetDim(size_t i) const { return i < dims_.size() ? dims_[i] : 0; }
    int64_t GetShapeSize() const {
        int64_t n = 1;
        for (int64_t d : dims_) n *= d;
        return n;
    }
    std::vector<int64_t> GetDims() const { return dims_; }

private:
    std::vector<int64_t> dims_;
};

enum DataType { DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 6, DT_UINT16 = 7,
                DT_UINT32 = 8, DT_INT64 = 9, DT_UINT64 = 10, DT_DOUBLE = 11, DT_BOOL = 12, DT_BF16 = 27 };
enum graphStatus : uint32_t { GRAPH_SUCCESS = 0, GRAPH_FAILED = 0xFFFFFFFF };

}  // namespace ge

namespace fe {
class PlatFormInfos {};  // what gert::TilingContext::GetPlatformInfo hands PlatformAscendC
}  // namespace fe

// --- the op project's host tiling context (gert::TilingContext), as far as tiling functions use it
//
// The backend fills it from the task: input shapes (inputs, then parameters, in the signature's
// order), output shapes, and the scalars as attributes in the KernelTiling struct's order.
namespace gert {

class StorageShape {
public:
    StorageShape() = default;
    explicit StorageShape(const ge::Shape& shape) : origin_(shape), storage_(shape) {}
    const ge::Shape& GetOriginShape() const { return origin_; }
    const ge::Shape& GetStorageShape() const { return storage_; }

private:
    ge::Shape origin_, storage_;
};

class Tensor {
public:
    Tensor() = default;
    Tensor(const ge::Shape& shape, ge::DataType type) : shape_(shape), type_(type) {}
    const ge::Shape& GetOriginShape() const { return shape_.GetOriginShape(); }
    const ge::Shape& GetStorageShape() const { return shape_.GetStorageShape(); }
    int64_t GetShapeSize() const { return shape_.GetOriginShape().GetShapeSize(); }
    ge::DataType GetDataType() const { return type_; }

private:
    StorageShape shape_;
    ge::DataType type_ = ge::DT_FLOAT;
};

class RuntimeAttrs {
public:
    void Add(double value) { values_.push_back({static_cast<float>(value), static_cast<int64_t>(value), value != 0.0, value}); }
    template <class T>
    const T* GetAttrPointer(size_t i) const {
        if (i >= values_.size()) return nullptr;
        const Value& v = values_[i];
        if constexpr (std::is_same<T, float>::value) return &v.f;
        else if constexpr (std::is_same<T, bool>::value) return &v.b;
        else if constexpr (std::is_same<T, double>::value) return &v.d;
        else return reinterpret_cast<const T*>(&v.i);
    }
    const float* GetFloat(size_t i) const { return GetAttrPointer<float>(i); }
    const int64_t* GetInt(size_t i) const { return GetAttrPointer<int64_t>(i); }
    const bool* GetBool(size_t i) const { return GetAttrPointer<bool>(i); }
    size_t GetAttrNum() const { return values_.size(); }

private:
    struct Value {
        float f;
        int64_t i;
        bool b;
        double d;
    };
    std::vector<Value> values_;
};

class TilingData {
public:
    void* GetData() { return data_; }
    size_t GetCapacity() const { return sizeof data_; }
    void SetDataSize(size_t size) { size_ = size < sizeof data_ ? size : sizeof data_; }
    size_t GetDataSize() const { return size_; }

private:
    uint8_t data_[65536] = {};
    size_t size_ = 0;
};

class TilingContext {
public:
    // --- what a tiling function calls
    const StorageShape* GetInputShape(size_t i) const { return i < inputs_.size() ? &inputs_[i] : nullptr; }
    const StorageShape* GetOutputShape(size_t i) const { return i < outputs_.size() ? &outputs_[i] : nullptr; }
    const Tensor* GetInputTensor(size_t i) const { return i < tensors_.size() ? &tensors_[i] : nullptr; }
    const RuntimeAttrs* GetAttrs() const { return &attrs_; }
    void SetBlockDim(uint32_t blockDim) { block_dim_ = blockDim; }
    void SetSimdNumBlocks(uint32_t blocks) { block_dim_ = blocks; }  // the newer toolkits' name
    // the newer toolkits' tiling struct in place: a plain struct written straight into the raw data
    template <class T>
    T* GetTilingData() {
        static_assert(std::is_trivially_copyable<T>::value, "a tiling struct is plain data");
        tiling_.SetDataSize(sizeof(T));
        return reinterpret_cast<T*>(tiling_.GetData());
    }
    uint32_t GetBlockDim() const { return block_dim_; }
    void SetTilingKey(uint64_t key) { tiling_key_ = key; }
    uint64_t GetTilingKey() const { return tiling_key_; }
    TilingData* GetRawTilingData() { return &tiling_; }
    size_t* GetWorkspaceSizes(size_t count) {
        if (workspace_.size() < count) workspace_.resize(count, 0);
        return workspace_.data();
    }
    fe::PlatFormInfos* GetPlatformInfo() { return &platform_; }
    const char* GetNodeName() const { return "kernel"; }
    // --- what the backend fills and reads
    void AddInput(const ge::Shape& shape, ge::DataType type) {
        inputs_.emplace_back(shape);
        tensors_.emplace_back(shape, type);
    }
    void AddOutput(const ge::Shape& shape) { outputs_.emplace_back(shape); }
    void AddAttr(double value) { attrs_.Add(value); }
    uint64_t WorkspaceBytes() const {
        uint64_t total = 0;
        for (size_t bytes : workspace_) total += bytes;
        return total;
    }

private:
    std::vector<StorageShape> inputs_, outputs_;
    std::vector<Tensor> tensors_;
    RuntimeAttrs attrs_;
    uint32_t block_dim_ = 0;
    uint64_t tiling_key_ = 0;
    TilingData tiling_;
    std::vector<size_t> workspace_;
    fe::PlatFormInfos platform_;
};

}  // namespace gert

namespace platform_ascendc {

enum class CoreMemType { L0_A = 0, L0_B, L0_C, L1, L2, UB, HBM };
enum class SocVersion { ASCEND910 = 0, ASCEND910B, ASCEND910_93, ASCEND310P, ASCEND310B, RESERVED_VERSION = 99999 };

class PlatformAscendC {
public:
    PlatformAscendC() = default;
    explicit PlatformAscendC(const fe::PlatFormInfos*) {}
    // separated SoCs (Atlas A2): GetCoreNum and GetCoreNumAiv count vector cores, GetCoreNumAic cube cores
    uint32_t GetCoreNum() const { return evk_twin::vector_cores(); }
    uint32_t GetCoreNumAic() const { return evk_twin::state().soc.ai_cores; }
    uint32_t GetCoreNumAiv() const { return evk_twin::vector_cores(); }
    void GetCoreMemSize(CoreMemType type, uint64_t& size) const {
        const evk_twin::SocParams& soc = evk_twin::state().soc;
        switch (type) {
            case CoreMemType::UB: size = soc.ub_bytes; break;
            case CoreMemType::L1: size = soc.l1_bytes; break;
            case CoreMemType::L0_A: size = soc.l0a_bytes; break;
            case CoreMemType::L0_B: size = soc.l0b_bytes; break;
            case CoreMemType::L0_C: size = soc.l0c_bytes; break;
            default: size = 0;
        }
    }
    uint32_t GetLibApiWorkSpaceSize() const { return 16u << 20; }  // the system workspace (16 MiB)
    // the family of the modelled SoC (EVOKERNEL_TWIN_SOC), by its name's prefix
    SocVersion GetSocVersion() const {
        const std::string& name = evk_twin::state().soc.name;
        if (name.rfind("Ascend910B", 0) == 0) return SocVersion::ASCEND910B;
        if (name.rfind("Ascend910_93", 0) == 0) return SocVersion::ASCEND910_93;
        if (name.rfind("Ascend910", 0) == 0) return SocVersion::ASCEND910;
        if (name.rfind("Ascend310P", 0) == 0) return SocVersion::ASCEND310P;
        if (name.rfind("Ascend310B", 0) == 0) return SocVersion::ASCEND310B;
        return SocVersion::ASCEND910B;  // unknown names take the Ascend910B1 row (twin_core.h)
    }
};

class PlatformAscendCManager {
public:
    static PlatformAscendC* GetInstance(const char* = nullptr) {
        static PlatformAscendC platform;
        return &platform;
    }
};

}  // namespace platform_ascendc

namespace AscendC {

inline uint32_t GetSoftMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t, const bool) {
    return evk_twin::softmax_min_tmp(static_cast<uint32_t>(srcShape.GetDim(srcShape.GetDimNum() - 1)));
}
inline uint32_t GetSoftMaxMaxTmpSize(const ge::Shape& srcShape, const uint32_t, const bool) {
    const uint32_t k = static_cast<uint32_t>(srcShape.GetDim(srcShape.GetDimNum() - 1));
    return evk_twin::softmax_max_tmp(static_cast<uint32_t>(srcShape.GetShapeSize() / (k ? k : 1)), k);
}

// srcShape {rows, row length}: the tiling for calls on up to `rows` rows of that length.
inline void SoftMaxTilingFunc(const ge::Shape& srcShape, const uint32_t dataTypeSize, const uint32_t localWorkSpaceSize,
                              tiling::SoftMaxTiling& t) {
    const uint32_t k = static_cast<uint32_t>(srcShape.GetDim(srcShape.GetDimNum() - 1));
    const uint32_t m = static_cast<uint32_t>(srcShape.GetShapeSize() / (k ? k : 1));
    t = tiling::SoftMaxTiling{};
    t.srcM = m;
    t.srcK = k;
    t.srcSize = m * k;
    t.outMaxM = t.reduceM = m;
    t.outMaxK = t.reduceK = 32 / (dataTypeSize ? dataTypeSize : 4);
    t.outMaxSize = t.reduceSize = m * t.outMaxK;
    const uint32_t per_row = evk_twin::softmax_min_tmp(k);
    t.splitM = std::max<uint32_t>(1, std::min<uint32_t>(m, localWorkSpaceSize / per_row));
    t.splitK = k;
    t.splitSize = t.splitM * k;
    t.rangeM = (m + t.splitM - 1) / t.splitM;
    t.tailM = m % t.splitM;
    t.tailSplitSize = t.tailM * k;
    t.tailReduceSize = t.tailM * t.outMaxK;
}

inline void GetSigmoidMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t typeSize, const bool,
                                    uint32_t& maxValue, uint32_t& minValue) {
    minValue = evk_twin::sigmoid_min_tmp();
    maxValue = static_cast<uint32_t>(std::max<uint64_t>(minValue, evk_twin::align32(srcShape.GetShapeSize() * typeSize)));
}

// srcShape {B, S, H} or {B, S, H, original H}.
inline void GetLayerNormMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t, const bool, uint32_t& maxValue,
                                      uint32_t& minValue) {
    const uint32_t h = static_cast<uint32_t>(srcShape.GetDim(2));
    minValue = evk_twin::layernorm_min_tmp(h);
    maxValue = static_cast<uint32_t>(srcShape.GetDim(0) * srcShape.GetDim(1)) * minValue;
}
inline void GetLayerNormNDTilingInfo(const ge::Shape& srcShape, const uint32_t stackBufferSize, const uint32_t typeSize,
                                     const bool, tiling::LayerNormTiling& t) {
    t = tiling::LayerNormTiling{};
    t.bLength = static_cast<uint32_t>(srcShape.GetDim(0));
    t.sLength = static_cast<uint32_t>(srcShape.GetDim(1));
    t.hLength = static_cast<uint32_t>(srcShape.GetDim(2));
    t.originalHLength = srcShape.GetDimNum() > 3 ? static_cast<uint32_t>(srcShape.GetDim(3)) : t.hLength;
    t.inputXSize = t.bLength * t.sLength * t.hLength;
    t.meanVarSize = t.bLength * t.sLength;
    t.tmpBufSize = stackBufferSize / (typeSize ? typeSize : 4);
    t.lastDimValueBack = t.originalHLength ? 1.0f / static_cast<float>(t.originalHLength) : 0.0f;
    t.bshCurLength = t.inputXSize;
    t.bsCurLength = t.meanVarSize;
    t.loopRound = 1;
}

inline void GetSumMaxMinTmpSize(const uint32_t n, const uint32_t, const bool, uint32_t& maxSize, uint32_t& minSize) {
    minSize = maxSize = evk_twin::sum_min_tmp(n);
}

enum class ReducePattern : uint32_t { AR = 0, RA };
inline void GetReduceMaxMaxMinTmpSize(const ge::Shape& srcShape, const ge::DataType, ReducePattern, bool, bool,
                                      uint32_t& maxValue, uint32_t& minValue) {
    minValue = maxValue = evk_twin::reduce_min_tmp(static_cast<uint32_t>(srcShape.GetDim(1)));
}

}  // namespace AscendC

// --- the cube's tiling: MultiCoreMatmulTiling -----------------------------------------------------
namespace matmul_tiling {

// The kernel's enums: the twin compiles both halves in one unit, where a host half's `using
// namespace matmul_tiling;` beside the kernel's `using namespace matmul;` must not make
// TPosition or CubeFormat ambiguous (CANN compiles the halves apart).
using AscendC::TPosition;
using AscendC::CubeFormat;
enum class DataType : int32_t { DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_BF16 = 27, DT_BFLOAT16 = 27 };

// Splits M over the cores first (then N with the cores left), each core's share a multiple of 16;
// base blocks of at most 128 x 128 with baseK of 64 (16-bit) or 32 (float) elements, so that
// L0A/L0B hold one block and L0C one float accumulator; GetTiling returns 0, or -1 for a
// shape it cannot tile (a non-positive size).
class MultiCoreMatmulTiling {
public:
    MultiCoreMatmulTiling() = default;
    explicit MultiCoreMatmulTiling(const platform_ascendc::PlatformAscendC& platform) : dim_(platform.GetCoreNumAic()) {}
    int32_t SetDim(int32_t dim) { dim_ = dim; return 0; }
    int32_t SetAType(TPosition, CubeFormat, DataType t, bool transpose = false) { a_ = t; transA_ = transpose; return 0; }
    int32_t SetBType(TPosition, CubeFormat, DataType t, bool transpose = false) { b_ = t; transB_ = transpose; return 0; }
    int32_t SetCType(TPosition, CubeFormat, DataType) { return 0; }
    int32_t SetBiasType(TPosition, CubeFormat, DataType) { return 0; }
    int32_t SetShape(int32_t m, int32_t n, int32_t k) { m_ = m; n_ = n; k_ = k; return 0; }
    int32_t SetOrgShape(int32_t m, int32_t n, int32_t k) { return SetOrgShape(m, n, k, k); }
    int32_t SetOrgShape(int32_t m, int32_t n, int32_t ka, int32_t kb) { om_ = m; on_ = n; oka_ = ka; okb_ = kb; return 0; }
    int32_t SetSingleShape(int32_t m, int32_t n, int32_t k) { sm_ = m; sn_ = n; sk_ = k; return 0; }
    int32_t EnableBias(bool bias) { bias_ = bias; return 0; }
    int32_t SetBias(bool bias) { bias_ = bias; return 0; }
    int32_t SetBufferSpace(int32_t = -1, int32_t = -1, int32_t = -1, int32_t = -1) { return 0; }
    int32_t SetFixSplit(int32_t baseM = -1, int32_t baseN = -1, int32_t baseK = -1) {
        fixM_ = baseM; fixN_ = baseN; fixK_ = baseK; return 0;
    }

    int64_t GetTiling(AscendC::tiling::TCubeTiling& t) const {
        const int32_t M = om_ > 0 ? om_ : m_, N = on_ > 0 ? on_ : n_, Ka = oka_ > 0 ? oka_ : k_, Kb = okb_ > 0 ? okb_ : k_;
        const int32_t m = m_ > 0 ? m_ : M, n = n_ > 0 ? n_ : N, k = k_ > 0 ? k_ : Ka;
        if (M <= 0 || N <= 0 || Ka <= 0 || m <= 0 || n <= 0 || k <= 0 || dim_ <= 0) return -1;
        auto up16 = [](int32_t v) { return (v + 15) / 16 * 16; };
        const int32_t mDim = std::max(1, std::min(dim_, (m + 15) / 16));
        const int32_t nDim = std::max(1, std::min(dim_ / mDim, (n + 15) / 16));
        t = AscendC::tiling::TCubeTiling{};
        t.M = M;
        t.N = N;
        t.Ka = Ka;
        t.Kb = Kb;
        t.singleCoreM = sm_ > 0 ? sm_ : std::min(m, up16((m + mDim - 1) / mDim));
        t.singleCoreN = sn_ > 0 ? sn_ : std::min(n, up16((n + nDim - 1) / nDim));
        t.singleCoreK = sk_ > 0 ? sk_ : k;
        t.usedCoreNum = ((m + t.singleCoreM - 1) / t.singleCoreM) * ((n + t.singleCoreN - 1) / t.singleCoreN);
        const bool wide = a_ == DataType::DT_FLOAT;
        t.baseM = fixM_ > 0 ? fixM_ : std::min(128, up16(t.singleCoreM));
        t.baseN = fixN_ > 0 ? fixN_ : std::min(128, up16(t.singleCoreN));
        t.baseK = fixK_ > 0 ? fixK_ : std::min(wide ? 32 : 64, (t.singleCoreK + 15) / 16 * 16);
        t.isBias = bias_ ? 1 : 0;
        t.depthA1 = t.depthB1 = 1;
        t.stepM = t.stepN = t.stepKa = t.stepKb = 1;
        t.dbL0A = t.dbL0B = t.dbL0C = 1;
        return 0;
    }

private:
    int32_t dim_ = 1;
    DataType a_ = DataType::DT_FLOAT16, b_ = DataType::DT_FLOAT16;
    bool transA_ = false, transB_ = false, bias_ = false;
    int32_t m_ = 0, n_ = 0, k_ = 0, om_ = 0, on_ = 0, oka_ = 0, okb_ = 0, sm_ = 0, sn_ = 0, sk_ = 0;
    int32_t fixM_ = -1, fixN_ = -1, fixK_ = -1;
};

using MatmulApiTiling = MultiCoreMatmulTiling;

}  // namespace matmul_tiling

// --- EvoKernel's host half: what a candidate's TilingFunc fills --------------------------------
//
//     void TilingFunc(const KernelTiling& shapes, HostTiling& host);
//
// runs on the host before every launch (as CANN's host tiling does), with the task's sizes and
// scalars in `shapes`; it sets the kernel's tiling struct (host.SetTiling(myTiling): the bytes
// the kernel's `tiling` argument then holds), the blocks to launch and the user workspace.
struct HostTiling {
    uint32_t coreNum = 0;            // in: the device's AI cores
    uint32_t blockDim = 0;           // out: blocks to launch (starts as coreNum)
    uint64_t userWorkspaceSize = 0;  // out: workspace bytes after the system workspace (GetUserWorkspace)
    template <class T>
    void SetTiling(const T& data) {
        static_assert(std::is_trivially_copyable<T>::value, "SetTiling takes a plain struct (trivially copyable)");
        static_assert(sizeof(T) <= sizeof(tilingData), "the tiling struct is larger than 64 KiB");
        std::memcpy(tilingData, &data, sizeof(T));
        tilingSize = sizeof(T);
    }
    uint8_t tilingData[65536] = {};
    uint32_t tilingSize = 0;
};
