// EvoKernel Ascend C twin: high-level library APIs that take host tiling or shape structs.
//
// Sigmoid, SoftMax (+ AdjustSoftMaxRes), LayerNorm, Sum and the reduce-pattern ReduceSum/Max/Min.
// Each computes in float and rounds once to the element type. Checked as on the device: rows
// 32-byte aligned (rule `alignment`), tensors large enough (`local-bounds`), the temporary
// buffer at least the minimum its host helper reports (`local-bounds`), a SoftMax/LayerNorm
// tiling computed for the row length of the call (`library-tiling`). The temporary buffer is
// scribbled (0xFF bytes) as the library's scratch: its content afterwards is undefined.
#pragma once

#include "twin_reduce.h"
#include "twin_tiling_types.h"

namespace AscendC {
namespace Pattern {
namespace Reduce {
struct AR {};  // two axes, reduce the inner one: one result per row
struct RA {};  // two axes, reduce the outer one: one result per column
}  // namespace Reduce
}  // namespace Pattern
}  // namespace AscendC

namespace evk_twin {

inline void scratch(const AscendC::LocalTensor<uint8_t>& tmp, uint64_t min_bytes, const char* api, Src s) {
    if (tmp.GetSize() < min_bytes) {
        fault("local-bounds", api, s,
              "the temporary buffer holds " + std::to_string(tmp.GetSize()) + " bytes; this call needs at least " +
                  std::to_string(min_bytes) + " (the host helper's minimum)");
    }
    tmp.check_w(min_bytes, api, s);
    std::memset(tmp.data(), 0xFF, min_bytes);
}

template <class T>
inline void aligned_rows(uint64_t row, const char* what, const char* api, Src s) {
    if (row * sizeof(T) % 32 != 0) {
        fault("alignment", api, s,
              std::string(what) + " of " + std::to_string(row) + " elements is not a multiple of 32 bytes (pad the "
                                  "row to " + std::to_string(align32(row * sizeof(T)) / sizeof(T)) + ")");
    }
}

template <class T, class F>
inline void rowwise(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint64_t count, F f,
                    const char* api, Src s) {
    dst.check_w(count, api, s);
    src.check(count, api, s);
    for (uint64_t i = 0; i < count; ++i) dst.data()[i] = static_cast<T>(f(static_cast<float>(src.data()[i])));
    count_vector(kTranscendental, 3 * count_repeats<T>(count));
}

}  // namespace evk_twin

namespace AscendC {

// --- Sigmoid: 1 / (1 + exp(-x)) ------------------------------------------------------------------
template <class T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                    const uint32_t calCount, evk_twin::Src s = {}) {
    evk_twin::scratch(sharedTmpBuffer, evk_twin::sigmoid_min_tmp(), "Sigmoid", s);
    evk_twin::rowwise(dst, src, calCount, [](float x) { return 1.0f / (1.0f + std::exp(-x)); }, "Sigmoid", s);
}
template <class T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount, evk_twin::Src s = {}) {
    evk_twin::rowwise(dst, src, calCount, [](float x) { return 1.0f / (1.0f + std::exp(-x)); }, "Sigmoid", s);
}
template <class T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                    evk_twin::Src s = {}) {
    Sigmoid<T, isReuseSource>(dst, src, sharedTmpBuffer, src.GetSize(), s);
}
template <class T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src, evk_twin::Src s = {}) {
    Sigmoid<T, isReuseSource>(dst, src, src.GetSize(), s);
}

// --- SoftMax over rows: max and sum per row, each broadcast over one 32-byte block ---------------
namespace twin_detail {
template <class T, class U>
inline void softmax(const LocalTensor<T>& dst, const LocalTensor<U>* sum, const LocalTensor<U>* max,
                    const LocalTensor<T>& src, const LocalTensor<uint8_t>* tmp, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& shape, bool basic_block, evk_twin::Src s) {
    const char* api = "SoftMax";
    const uint32_t m = shape.srcM ? shape.srcM : tiling.srcM, k = shape.srcK ? shape.srcK : tiling.srcK;
    const uint32_t valid = shape.oriSrcK ? shape.oriSrcK : k;
    if (m == 0 || k == 0) evk_twin::fault("library-tiling", api, s, "no shape: an empty SoftMaxTiling and SoftMaxShapeInfo");
    if (tiling.srcK != k || m > tiling.srcM) {
        evk_twin::fault("library-tiling", api, s,
                        "the SoftMaxTiling was computed for " + std::to_string(tiling.srcM) + " rows of " +
                            std::to_string(tiling.srcK) + " elements; this call has " + std::to_string(m) + " rows of " +
                            std::to_string(k) + " (SoftMaxTilingFunc on the call's shape)");
    }
    if (valid > k) evk_twin::fault("invalid-argument", api, s, "oriSrcK exceeds srcK");
    if (basic_block && (m % 8 != 0 || k % 64 != 0 || k >= 2048)) {
        evk_twin::fault("invalid-argument", api, s,
                        "isBasicBlock needs rows a multiple of 8 and a row length a multiple of 64 below 2048");
    }
    evk_twin::aligned_rows<T>(k, "a row", api, s);
    src.check(uint64_t(m) * k, api, s);
    dst.check_w(uint64_t(m) * k, api, s);
    constexpr uint32_t per_block = 32 / sizeof(U);
    if (sum) sum->check_w(uint64_t(m) * per_block, api, s);
    if (max) max->check_w(uint64_t(m) * per_block, api, s);
    if (tmp) evk_twin::scratch(*tmp, evk_twin::softmax_min_tmp(k), api, s);
    std::vector<float> row(valid);
    for (uint32_t i = 0; i < m; ++i) {
        const T* x = src.data() + uint64_t(i) * k;
        float hi = -INFINITY, total = 0.0f;
        for (uint32_t j = 0; j < valid; ++j) hi = std::max(hi, static_cast<float>(x[j]));
        for (uint32_t j = 0; j < valid; ++j) total += row[j] = std::exp(static_cast<float>(x[j]) - hi);
        T* y = dst.data() + uint64_t(i) * k;
        for (uint32_t j = 0; j < valid; ++j) y[j] = static_cast<T>(row[j] / total);
        for (uint32_t e = 0; e < per_block; ++e) {
            if (sum) sum->data()[uint64_t(i) * per_block + e] = static_cast<U>(total);
            if (max) max->data()[uint64_t(i) * per_block + e] = static_cast<U>(hi);
        }
    }
    evk_twin::count_vector(evk_twin::kTranscendental, 4 * evk_twin::count_repeats<T>(uint64_t(m) * k));
}
}  // namespace twin_detail

template <class T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false, class U = T>
inline void SoftMax(const LocalTensor<T>& dst, const LocalTensor<U>& sum, const LocalTensor<U>& max,
                    const LocalTensor<T>& src, const SoftMaxTiling& tiling, const SoftMaxShapeInfo& shape = {},
                    evk_twin::Src s = {}) {
    twin_detail::softmax<T, U>(dst, &sum, &max, src, nullptr, tiling, shape, isBasicBlock, s);
}
template <class T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false, class U = T>
inline void SoftMax(const LocalTensor<T>& dst, const LocalTensor<U>& sum, const LocalTensor<U>& max,
                    const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& shape = {}, evk_twin::Src s = {}) {
    twin_detail::softmax<T, U>(dst, &sum, &max, src, &sharedTmpBuffer, tiling, shape, isBasicBlock, s);
}
template <class T, bool isReuseSource = false, bool isBasicBlock = false>
inline void SoftMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& shape = {}, evk_twin::Src s = {}) {
    twin_detail::softmax<T, T>(dst, nullptr, nullptr, src, nullptr, tiling, shape, isBasicBlock, s);
}
template <class T, bool isReuseSource = false, bool isBasicBlock = false>
inline void SoftMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                    const SoftMaxTiling& tiling, const SoftMaxShapeInfo& shape = {}, evk_twin::Src s = {}) {
    twin_detail::softmax<T, T>(dst, nullptr, nullptr, src, &sharedTmpBuffer, tiling, shape, isBasicBlock, s);
}

// Rows whose max (its bits, as the element type's) equals `from` get `to` in every valid element.
template <class T1, class T2, bool isDataFormatNZ = false, uint8_t stepSizeMode = 0>
inline bool AdjustSoftMaxRes(const LocalTensor<T1>& softMaxRes, const LocalTensor<T2>& maxTensor, const uint32_t from,
                             const T1 to, const SoftMaxShapeInfo& shape, evk_twin::Src s = {}) {
    constexpr uint32_t per_block = 32 / sizeof(T2);
    const uint32_t k = shape.srcK, valid = shape.oriSrcK ? shape.oriSrcK : shape.srcK;
    softMaxRes.check(uint64_t(shape.srcM) * k, "AdjustSoftMaxRes", s);
    maxTensor.check(uint64_t(shape.srcM) * per_block, "AdjustSoftMaxRes", s);
    softMaxRes.check_w(uint64_t(shape.srcM) * k, "AdjustSoftMaxRes", s);
    bool any = false;
    for (uint32_t i = 0; i < shape.srcM; ++i) {
        uint32_t bits = 0;
        std::memcpy(&bits, maxTensor.data() + uint64_t(i) * per_block, sizeof(T2));
        if (bits != (sizeof(T2) == 2 ? (from & 0xFFFFu) : from)) continue;
        any = true;
        for (uint32_t j = 0; j < valid; ++j) softMaxRes.data()[uint64_t(i) * k + j] = to;
    }
    evk_twin::count_vector(evk_twin::kCompareSelect, evk_twin::count_repeats<T1>(uint64_t(shape.srcM) * k));
    return any;
}

// --- LayerNorm over the last axis of [B, S, H]: mean and variance out (B * S each) ---------------
template <class T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean, const LocalTensor<T>& outputVariance,
                      const LocalTensor<T>& inputX, const LocalTensor<T>& gamma, const LocalTensor<T>& beta,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon, LayerNormTiling& tiling,
                      evk_twin::Src s = {}) {
    evk_twin::scratch(sharedTmpBuffer, evk_twin::layernorm_min_tmp(tiling.hLength), "LayerNorm", s);
    LayerNorm<T, isReuseSource>(output, outputMean, outputVariance, inputX, gamma, beta, epsilon, tiling, s);
}
template <class T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean, const LocalTensor<T>& outputVariance,
                      const LocalTensor<T>& inputX, const LocalTensor<T>& gamma, const LocalTensor<T>& beta,
                      const T epsilon, LayerNormTiling& tiling, evk_twin::Src s = {}) {
    const char* api = "LayerNorm";
    const uint64_t rows = uint64_t(tiling.bLength) * tiling.sLength, h = tiling.hLength;
    const uint32_t valid = tiling.originalHLength ? tiling.originalHLength : tiling.hLength;
    if (rows == 0 || h == 0) evk_twin::fault("library-tiling", api, s, "an empty LayerNormTiling (GetLayerNormNDTilingInfo)");
    evk_twin::aligned_rows<T>(h, "hLength", api, s);
    inputX.check(rows * h, api, s);
    output.check_w(rows * h, api, s);
    gamma.check(h, api, s);
    beta.check(h, api, s);
    outputMean.check_w(rows, api, s, false);
    outputVariance.check_w(rows, api, s, false);
    for (uint64_t r = 0; r < rows; ++r) {
        const T* x = inputX.data() + r * h;
        float mean = 0.0f, var = 0.0f;
        for (uint32_t j = 0; j < valid; ++j) mean += static_cast<float>(x[j]);
        mean /= static_cast<float>(valid);
        for (uint32_t j = 0; j < valid; ++j) var += (static_cast<float>(x[j]) - mean) * (static_cast<float>(x[j]) - mean);
        var /= static_cast<float>(valid);
        const float rstd = 1.0f / std::sqrt(var + static_cast<float>(epsilon));
        T* y = output.data() + r * h;
        for (uint32_t j = 0; j < valid; ++j)
            y[j] = static_cast<T>((static_cast<float>(x[j]) - mean) * rstd * static_cast<float>(gamma.data()[j]) +
                                  static_cast<float>(beta.data()[j]));
        outputMean.data()[r] = static_cast<T>(mean);
        outputVariance.data()[r] = static_cast<T>(var);
    }
    evk_twin::count_vector(evk_twin::kTranscendental, 6 * evk_twin::count_repeats<T>(rows * h));
}

// --- Sum: one sum per row ------------------------------------------------------------------------
template <class T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const SumParams& p, evk_twin::Src s = {}) {
    if (p.n == 0 || p.n > p.inner) evk_twin::fault("invalid-argument", "Sum", s, "SumParams needs 0 < n <= inner");
    evk_twin::aligned_rows<T>(p.inner, "inner", "Sum", s);
    src.check(uint64_t(p.outter) * p.inner, "Sum", s);
    dst.check_w(evk_twin::align32(uint64_t(p.outter) * sizeof(T)) / sizeof(T), "Sum", s);
    for (uint32_t i = 0; i < p.outter; ++i) dst.data()[i] = evk_twin::sum_by_repeats(src.data() + uint64_t(i) * p.inner, p.n);
    evk_twin::count_vector(evk_twin::kReduce, evk_twin::count_repeats<T>(uint64_t(p.outter) * p.inner) + p.outter);
}
template <class T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                const SumParams& p, evk_twin::Src s = {}) {
    evk_twin::scratch(sharedTmpBuffer, evk_twin::sum_min_tmp(p.n), "Sum", s);
    Sum<T, reduceDim, isReuseSource, isBasicBlock>(dst, src, p, s);
}

// --- ReduceSum/Max/Min with a reduce pattern: srcShape {rows, cols}, rows padded to 32 bytes ----
namespace twin_detail {
template <class T, class pattern, class Op>
inline void reduce_pattern(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>* tmp,
                           const uint32_t srcShape[], bool srcInnerPad, Op op, const char* api, evk_twin::Src s) {
    static_assert(std::is_same<pattern, Pattern::Reduce::AR>::value || std::is_same<pattern, Pattern::Reduce::RA>::value,
                  "the EvoKernel twin's reduce patterns are Pattern::Reduce::AR and RA");
    if (!srcInnerPad) evk_twin::fault("invalid-argument", api, s, "srcInnerPad must be true on Atlas A2/A3");
    const uint64_t outer = srcShape[0], inner = srcShape[1];
    evk_twin::aligned_rows<T>(inner, "the inner axis", api, s);
    src.check(outer * inner, api, s);
    if (tmp) evk_twin::scratch(*tmp, evk_twin::reduce_min_tmp(static_cast<uint32_t>(inner)), api, s);
    const bool by_row = std::is_same<pattern, Pattern::Reduce::AR>::value;
    const uint64_t results = by_row ? outer : inner, length = by_row ? inner : outer;
    dst.check_w(results, api, s);
    std::vector<T> line(length);
    for (uint64_t i = 0; i < results; ++i) {
        for (uint64_t j = 0; j < length; ++j) line[j] = src.data()[by_row ? i * inner + j : j * inner + i];
        dst.data()[i] = op(line);
    }
    evk_twin::count_vector(evk_twin::kReduce, evk_twin::count_repeats<T>(outer * inner) + 1);
}
template <class T>
inline T line_max(const std::vector<T>& v) {
    T best = v[0];
    for (const T& x : v) best = static_cast<float>(x) > static_cast<float>(best) ? x : best;
    return best;
}
template <class T>
inline T line_min(const std::vector<T>& v) {
    T best = v[0];
    for (const T& x : v) best = static_cast<float>(x) < static_cast<float>(best) ? x : best;
    return best;
}
}  // namespace twin_detail

#define EVK_TWIN_REDUCE_PATTERN(NAME, OP)                                                                              \
    template <class T, class pattern, bool isReuseSource = false>                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
                     const uint32_t srcShape[], bool srcInnerPad, evk_twin::Src s = {}) {                              \
        twin_detail::reduce_pattern<T, pattern>(dst, src, &sharedTmpBuffer, srcShape, srcInnerPad, OP, #NAME, s);      \
    }                                                                                                                  \
    template <class T, class pattern, bool isReuseSource = false>                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t srcShape[], bool srcInnerPad, \
                     evk_twin::Src s = {}) {                                                                           \
        twin_detail::reduce_pattern<T, pattern>(dst, src, nullptr, srcShape, srcInnerPad, OP, #NAME, s);              \
    }

EVK_TWIN_REDUCE_PATTERN(ReduceMax, twin_detail::line_max<T>)
EVK_TWIN_REDUCE_PATTERN(ReduceMin, twin_detail::line_min<T>)
EVK_TWIN_REDUCE_PATTERN(ReduceSum, [](std::vector<T>& v) { return evk_twin::sum_by_repeats(v.data(), v.size()); })

}  // namespace AscendC
