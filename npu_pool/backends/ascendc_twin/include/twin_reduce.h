// EvoKernel Ascend C twin: reductions.
//
// ReduceSum/ReduceMax/ReduceMin (count form and mask form) reduce a whole tensor into dst[0],
// with a work tensor for the first level's partial results whose minimum size is checked.
// Sums follow the A2 order: a pairwise tree inside each 256-byte repeat, then the repeats'
// results in sequence, each addition rounded to the element type. ReduceMax/Min with
// calIndex = true also store the index of the (first) extreme element in dst[1], as the bits
// of an unsigned integer of the element's width. WholeReduceSum/Max/Min reduce each repeat
// separately into dst (dstRepStride in units of one repeat's result: 1 element, or 2 for a
// value and index pair).
#pragma once

#include "twin_vector.h"

namespace AscendC {
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };
}  // namespace AscendC

namespace evk_twin {

// Pairwise tree sum of n values, each addition rounded to T.
template <class T>
inline T tree_sum(T* v, uint32_t n) {
    if (n == 0) return T(0);
    while (n > 1) {
        const uint32_t half_n = n / 2;
        for (uint32_t i = 0; i < half_n; ++i)
            v[i] = static_cast<T>(static_cast<calc_t<T>>(v[2 * i]) + static_cast<calc_t<T>>(v[2 * i + 1]));
        if (n % 2) v[half_n] = v[n - 1];
        n = (n + 1) / 2;
    }
    return v[0];
}

template <class T>
inline void check_work(const AscendC::LocalTensor<T>& work, uint64_t count, bool with_index, const char* api, Src s) {
    constexpr uint64_t epr = 256 / sizeof(T), epb = 32 / sizeof(T);
    const uint64_t first = (count + epr - 1) / epr * (with_index ? 2 : 1);
    const uint64_t need = (first + epb - 1) / epb * epb;
    if (work.GetSize() < need) {
        fault("local-bounds", api, s,
              "work tensor holds " + std::to_string(work.GetSize()) + " elements; " + std::to_string(count) +
                  " inputs need at least " + std::to_string(need));
    }
    work.check_w(need, api, s);
}

template <class T>
inline void store_index(T* at, uint64_t index) {
    if (sizeof(T) == 2) {
        uint16_t i16 = static_cast<uint16_t>(index);
        std::memcpy(at, &i16, 2);
    } else {
        uint32_t i32 = static_cast<uint32_t>(index);
        std::memcpy(at, &i32, 4);
    }
}

// Values of a tensor under a mask/repeat layout, in order.
template <class T>
inline std::vector<T> gather(const AscendC::LocalTensor<T>& src, const Mask& m, uint32_t repeat, uint32_t blk, uint32_t rep,
                             const char* api, Src s, std::vector<uint64_t>* positions = nullptr) {
    check_repeat(repeat, api, s);
    src.check(strided_extent<T>(repeat, m, blk, rep), api, s);
    std::vector<T> out;
    for (uint32_t r = 0; r < repeat; ++r)
        for (uint32_t j = 0; j < 256 / sizeof(T); ++j)
            if (m.test(j)) {
                out.push_back(src.data()[strided<T>(r, j, blk, rep)]);
                if (positions) positions->push_back(uint64_t(r) * (256 / sizeof(T)) + j);
            }
    return out;
}

template <class T>
inline T sum_by_repeats(const T* x, uint64_t count) {
    constexpr uint64_t epr = 256 / sizeof(T);
    T acc = T(0);
    std::vector<T> chunk(epr);
    for (uint64_t at = 0; at < count; at += epr) {
        const uint32_t n = static_cast<uint32_t>(count - at < epr ? count - at : epr);
        std::copy(x + at, x + at + n, chunk.begin());
        const T part = tree_sum(chunk.data(), n);
        acc = at == 0 ? part : static_cast<T>(static_cast<calc_t<T>>(acc) + static_cast<calc_t<T>>(part));
    }
    return acc;
}

template <class T>
inline void extreme(const AscendC::LocalTensor<T>& dst, const T* x, uint64_t count, bool is_max, bool calIndex,
                    const char* api, Src s) {
    if (count == 0) fault("invalid-argument", api, s, "count 0");
    uint64_t best = 0;
    for (uint64_t i = 1; i < count; ++i) {
        const auto v = static_cast<calc_t<T>>(x[i]), b = static_cast<calc_t<T>>(x[best]);
        if (is_max ? v > b : v < b) best = i;
    }
    dst.check_w(calIndex ? 2 : 1, api, s, false);
    dst.data()[0] = x[best];
    if (calIndex) store_index(dst.data() + 1, best);
}

}  // namespace evk_twin

namespace AscendC {

// --- count form ---------------------------------------------------------------------------------
template <class T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work,
                      const int32_t count, evk_twin::Src s = {}) {
    if (count <= 0) evk_twin::fault("invalid-argument", "ReduceSum", s, "count must be positive");
    src.check(count, "ReduceSum", s);
    evk_twin::check_work(work, count, false, "ReduceSum", s);
    dst.check_w(1, "ReduceSum", s, false);
    const T total = evk_twin::sum_by_repeats(src.data(), count);
    const uint64_t repeats = evk_twin::count_repeats<T>(count);
    for (uint64_t i = 0; i < (repeats < work.GetSize() ? repeats : 0); ++i) work.data()[i] = T(0);  // scratch, like the device
    dst.data()[0] = total;
    evk_twin::count_vector(evk_twin::kReduce, repeats + 1);
}

template <class T>
inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work,
                      const int32_t count, bool calIndex = false, evk_twin::Src s = {}) {
    src.check(count, "ReduceMax", s);
    evk_twin::check_work(work, count, calIndex, "ReduceMax", s);
    evk_twin::extreme(dst, src.data(), count, true, calIndex, "ReduceMax", s);
    evk_twin::count_vector(evk_twin::kReduce, evk_twin::count_repeats<T>(count) + 1);
}

template <class T>
inline void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work,
                      const int32_t count, bool calIndex = false, evk_twin::Src s = {}) {
    src.check(count, "ReduceMin", s);
    evk_twin::check_work(work, count, calIndex, "ReduceMin", s);
    evk_twin::extreme(dst, src.data(), count, false, calIndex, "ReduceMin", s);
    evk_twin::count_vector(evk_twin::kReduce, evk_twin::count_repeats<T>(count) + 1);
}

// --- mask form: the masked elements of `repeat` repeats (srcRepStride in 32-byte blocks) -------
#define EVK_TWIN_REDUCE_MASKED(NAME, MASKTYPE, MAKE, BODY)                                                            \
    template <class T>                                                                                                 \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, MASKTYPE mask,  \
                     const int32_t repeat, const int32_t srcRepStride, bool calIndex = false, evk_twin::Src s = {}) {  \
        std::vector<uint64_t> at;                                                                                      \
        std::vector<T> v = evk_twin::gather(src, MAKE, repeat, 1, srcRepStride, #NAME, s, &at);                        \
        evk_twin::check_work(work, uint64_t(repeat) * (256 / sizeof(T)), calIndex, #NAME, s);                          \
        BODY;                                                                                                          \
        evk_twin::count_vector(evk_twin::kReduce, uint64_t(repeat) + 1);                                               \
    }

#define EVK_TWIN_SUM_BODY                                                                 \
    (void)calIndex;                                                                       \
    dst.check_w(1, "ReduceSum", s, false);                                                  \
    dst.data()[0] = evk_twin::sum_by_repeats(v.data(), v.size())
#define EVK_TWIN_EXT_BODY(IS_MAX, API)                                                    \
    evk_twin::extreme(dst, v.data(), v.size(), IS_MAX, false, API, s);                    \
    if (calIndex) {                                                                       \
        uint64_t best = 0;                                                                \
        for (uint64_t i = 0; i < v.size(); ++i)                                           \
            if (static_cast<float>(v[i]) == static_cast<float>(dst.data()[0])) {          \
                best = at[i];                                                             \
                break;                                                                    \
            }                                                                             \
        dst.check_w(2, API, s, false);                                                      \
        evk_twin::store_index(dst.data() + 1, best);                                      \
    }

EVK_TWIN_REDUCE_MASKED(ReduceSum, uint64_t, evk_twin::contiguous_mask<T>(mask, "ReduceSum", s), EVK_TWIN_SUM_BODY)
EVK_TWIN_REDUCE_MASKED(ReduceSum, const uint64_t*, evk_twin::bit_mask<T>(mask, "ReduceSum", s), EVK_TWIN_SUM_BODY)
EVK_TWIN_REDUCE_MASKED(ReduceMax, uint64_t, evk_twin::contiguous_mask<T>(mask, "ReduceMax", s), EVK_TWIN_EXT_BODY(true, "ReduceMax"))
EVK_TWIN_REDUCE_MASKED(ReduceMax, const uint64_t*, evk_twin::bit_mask<T>(mask, "ReduceMax", s), EVK_TWIN_EXT_BODY(true, "ReduceMax"))
EVK_TWIN_REDUCE_MASKED(ReduceMin, uint64_t, evk_twin::contiguous_mask<T>(mask, "ReduceMin", s), EVK_TWIN_EXT_BODY(false, "ReduceMin"))
EVK_TWIN_REDUCE_MASKED(ReduceMin, const uint64_t*, evk_twin::bit_mask<T>(mask, "ReduceMin", s), EVK_TWIN_EXT_BODY(false, "ReduceMin"))

// --- WholeReduce: one result per repeat ---------------------------------------------------------
namespace twin_detail {
template <class T>
inline void whole_reduce(const LocalTensor<T>& dst, const LocalTensor<T>& src, const evk_twin::Mask& m, int32_t repeat,
                         int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride, int kind, ReduceOrder order,
                         const char* api, evk_twin::Src s) {
    evk_twin::check_repeat(repeat, api, s);
    if (repeat <= 0) return;
    src.check(evk_twin::strided_extent<T>(repeat, m, srcBlkStride, srcRepStride), api, s);
    const bool pair = kind != 0 && (order == ReduceOrder::ORDER_VALUE_INDEX || order == ReduceOrder::ORDER_INDEX_VALUE);
    const uint32_t width = pair ? 2 : 1;
    dst.check_w(uint64_t(repeat - 1) * dstRepStride * width + width, api, s, false);
    constexpr uint32_t epr = 256 / sizeof(T);
    std::vector<T> v;
    for (int32_t r = 0; r < repeat; ++r) {
        v.clear();
        uint32_t best_j = 0;
        for (uint32_t j = 0; j < epr; ++j)
            if (m.test(j)) {
                const T x = src.data()[evk_twin::strided<T>(r, j, srcBlkStride, srcRepStride)];
                if (!v.empty() && kind != 0) {
                    const float a = static_cast<float>(x), b = static_cast<float>(v[0]);
                    if (kind == 1 ? a > b : a < b) {
                        v[0] = x;
                        best_j = j;
                    }
                } else if (v.empty()) {
                    v.push_back(x);
                    best_j = j;
                } else {
                    v.push_back(x);
                }
            }
        T* out = dst.data() + uint64_t(r) * dstRepStride * width;
        if (kind == 0) {
            out[0] = evk_twin::tree_sum(v.data(), static_cast<uint32_t>(v.size()));
        } else if (order == ReduceOrder::ORDER_ONLY_INDEX) {
            evk_twin::store_index(out, best_j);
        } else if (order == ReduceOrder::ORDER_INDEX_VALUE) {
            evk_twin::store_index(out, best_j);
            out[1] = v[0];
        } else {
            out[0] = v[0];
            if (pair) evk_twin::store_index(out + 1, best_j);
        }
    }
    evk_twin::count_vector(evk_twin::kReduce, repeat);
}
}  // namespace twin_detail

template <class T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask, const int32_t repeat,
                           const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                           evk_twin::Src s = {}) {
    twin_detail::whole_reduce(dst, src, evk_twin::contiguous_mask<T>(mask, "WholeReduceSum", s), repeat, dstRepStride,
                              srcBlkStride, srcRepStride, 0, ReduceOrder::ORDER_ONLY_VALUE, "WholeReduceSum", s);
}
template <class T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const int32_t repeat,
                           const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                           evk_twin::Src s = {}) {
    twin_detail::whole_reduce(dst, src, evk_twin::bit_mask<T>(mask, "WholeReduceSum", s), repeat, dstRepStride,
                              srcBlkStride, srcRepStride, 0, ReduceOrder::ORDER_ONLY_VALUE, "WholeReduceSum", s);
}

#define EVK_TWIN_WHOLE_EXT(NAME, KIND)                                                                                  \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask, const int32_t repeat,    \
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,               \
                     ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, evk_twin::Src s = {}) {                       \
        twin_detail::whole_reduce(dst, src, evk_twin::contiguous_mask<T>(mask, #NAME, s), repeat, dstRepStride,        \
                                  srcBlkStride, srcRepStride, KIND, order, #NAME, s);                                  \
    }                                                                                                                  \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const int32_t repeat, \
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,               \
                     ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, evk_twin::Src s = {}) {                       \
        twin_detail::whole_reduce(dst, src, evk_twin::bit_mask<T>(mask, #NAME, s), repeat, dstRepStride, srcBlkStride, \
                                  srcRepStride, KIND, order, #NAME, s);                                                \
    }

EVK_TWIN_WHOLE_EXT(WholeReduceMax, 1)
EVK_TWIN_WHOLE_EXT(WholeReduceMin, 2)

// --- BlockReduce: one result per 32-byte block, 8 per repeat written side by side ---------------
// dst of repeat r starts at r * dstRepStride * 8 elements; blocks with no selected element
// leave their result unwritten.
namespace twin_detail {
template <class T>
inline void block_reduce(const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t repeat, const evk_twin::Mask& m,
                         int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride, int kind, const char* api,
                         evk_twin::Src s) {
    evk_twin::check_repeat(repeat, api, s);
    if (repeat <= 0) return;
    constexpr uint32_t epb = 32 / sizeof(T);
    src.check(evk_twin::strided_extent<T>(repeat, m, srcBlkStride, srcRepStride), api, s);
    dst.check_w(uint64_t(repeat - 1) * dstRepStride * 8 + m.highest() / epb + 1, api, s, false);
    T v[epb];
    for (int32_t r = 0; r < repeat; ++r)
        for (uint32_t blk = 0; blk < 8; ++blk) {
            uint32_t n = 0;
            for (uint32_t e = 0; e < epb; ++e)
                if (m.test(blk * epb + e)) v[n++] = src.data()[evk_twin::strided<T>(r, blk * epb + e, srcBlkStride, srcRepStride)];
            if (n == 0) continue;
            T out = v[0];
            if (kind == 0) {
                out = evk_twin::tree_sum(v, n);
            } else {
                for (uint32_t i = 1; i < n; ++i) {
                    const float a = static_cast<float>(v[i]), b = static_cast<float>(out);
                    if (kind == 1 ? a > b : a < b) out = v[i];
                }
            }
            dst.data()[uint64_t(r) * dstRepStride * 8 + blk] = out;
        }
    evk_twin::count_vector(evk_twin::kReduce, repeat);
}
}  // namespace twin_detail

#define EVK_TWIN_BLOCK_REDUCE(NAME, KIND)                                                                              \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeat, const int32_t mask,    \
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,               \
                     evk_twin::Src s = {}) {                                                                           \
        twin_detail::block_reduce(dst, src, repeat, evk_twin::contiguous_mask<T>(mask, #NAME, s), dstRepStride,        \
                                  srcBlkStride, srcRepStride, KIND, #NAME, s);                                         \
    }                                                                                                                  \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeat, const uint64_t mask[], \
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,               \
                     evk_twin::Src s = {}) {                                                                           \
        twin_detail::block_reduce(dst, src, repeat, evk_twin::bit_mask<T>(mask, #NAME, s), dstRepStride, srcBlkStride, \
                                  srcRepStride, KIND, #NAME, s);                                                       \
    }

EVK_TWIN_BLOCK_REDUCE(BlockReduceSum, 0)
EVK_TWIN_BLOCK_REDUCE(BlockReduceMax, 1)
EVK_TWIN_BLOCK_REDUCE(BlockReduceMin, 2)

}  // namespace AscendC
