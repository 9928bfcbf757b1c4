// EvoKernel Ascend C twin: the vector mask set outside instructions, and GatherMask.
//
// SetVectorMask<T[, MaskMode]>(maskHigh, maskLow) or (len) sets the mask that mask/repeat
// instructions called with isSetMask = false use (their mask argument, MASK_PLACEHOLDER, is then
// ignored). SetMaskCount() switches to counter mode: the mask's low word is a count of
// elements, and such an instruction runs ceil(count / (256 / sizeof(T))) repeats, the last
// partial, whatever its repeatTimes; SetMaskNorm() switches back, ResetMask() selects all.
// The twin applies the preset mask in the arithmetic, scalar and unary instructions and in
// Duplicate (evk_twin::with_mask); other instructions take their own mask argument.
//
// GatherMask(dst, src0, pattern, reduceMode, mask, GatherMaskParams, rsvdCnt) copies the
// elements of src0 whose pattern bit is 1 to the start of dst, packed, and counts them:
// pattern 1..7 is a built-in pattern (even, odd, 1st/2nd/3rd/4th of every four, all), or a
// tensor of uint16_t (16-bit data) or uint32_t (32-bit data) whose bits each repeat consumes
// from src1RepeatStride blocks further (0: the same bits every repeat). reduceMode false: each
// of repeatTimes repeats reads 256 bytes; true (counter mode, as on Atlas A2): `mask` elements.
#pragma once

#include "twin_vector.h"

namespace AscendC {

enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

inline void SetMaskCount() { evk_twin::state().mask_counter = true; }
inline void SetMaskNorm() { evk_twin::state().mask_counter = false; }
inline void ResetMask() {
    evk_twin::State& s = evk_twin::state();
    s.mask_lo = s.mask_hi = ~uint64_t(0);
}

template <class T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow) {
    evk_twin::State& s = evk_twin::state();
    s.mask_lo = maskLow;
    s.mask_hi = maskHigh;
}

template <class T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(int32_t len, evk_twin::Src src = {}) {
    evk_twin::State& s = evk_twin::state();
    if (mode == MaskMode::COUNTER || s.mask_counter) {
        s.mask_lo = static_cast<uint64_t>(len);
        s.mask_hi = 0;
        return;
    }
    const evk_twin::Mask m = evk_twin::contiguous_mask<T>(static_cast<uint64_t>(len), "SetVectorMask", src);
    s.mask_lo = m.lo;
    s.mask_hi = m.hi;
}

struct GatherMaskParams {
    GatherMaskParams() {}
    GatherMaskParams(uint8_t src0BlockStrideIn, uint16_t repeatTimesIn, uint16_t src0RepeatStrideIn,
                     uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn) {}
    uint8_t src0BlockStride = 1;
    uint16_t repeatTimes = 1;
    uint16_t src0RepeatStride = 8;
    uint8_t src1RepeatStride = 8;
};

namespace twin_detail {
template <class T, class Bit>
inline void gather_mask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, bool reduceMode, uint32_t mask,
                        const GatherMaskParams& p, uint64_t& rsvdCnt, Bit bit, evk_twin::Src s) {
    evk_twin::check_repeat(p.repeatTimes, "GatherMask", s);
    constexpr uint32_t epr = 256 / sizeof(T);
    const uint32_t per_repeat = reduceMode ? mask : epr;
    if (reduceMode && mask == 0) evk_twin::fault("mask-range", "GatherMask", s, "counter-mode mask 0 selects nothing");
    if (p.repeatTimes == 0 || per_repeat == 0) {
        rsvdCnt = 0;
        return;
    }
    src0.check(evk_twin::strided<T>(p.repeatTimes - 1, per_repeat - 1, p.src0BlockStride, p.src0RepeatStride) + 1,
               "GatherMask", s);
    dst.check(0, "GatherMask", s);
    std::vector<T> kept;
    for (uint32_t r = 0; r < p.repeatTimes; ++r)
        for (uint32_t j = 0; j < per_repeat; ++j)
            if (bit(r, j)) kept.push_back(src0.data()[evk_twin::strided<T>(r, j, p.src0BlockStride, p.src0RepeatStride)]);
    dst.check_w(kept.size(), "GatherMask", s);
    std::copy(kept.begin(), kept.end(), dst.data());
    rsvdCnt = kept.size();
    evk_twin::count_vector(evk_twin::kCompareSelect, p.repeatTimes);
}
}  // namespace twin_detail

template <class T, class U, class... Mode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& p, uint64_t& rsvdCnt,
                       evk_twin::Src s = {}) {
    static_assert(sizeof(U) == sizeof(T) && std::is_unsigned<U>::value,
                  "GatherMask: the pattern is uint16_t for 16-bit data, uint32_t for 32-bit data");
    constexpr uint32_t epr = 256 / sizeof(T);
    const uint32_t per_repeat = reduceMode ? mask : epr;
    const uint64_t bits_per_stride = uint64_t(p.src1RepeatStride) * 256;  // src1RepeatStride blocks of 32 bytes
    const uint64_t last_bit = uint64_t(p.repeatTimes ? p.repeatTimes - 1 : 0) * bits_per_stride + per_repeat;
    src1Pattern.check((last_bit + 8 * sizeof(U) - 1) / (8 * sizeof(U)), "GatherMask", s);
    const uint8_t* bits = reinterpret_cast<const uint8_t*>(src1Pattern.data());
    twin_detail::gather_mask(dst, src0, reduceMode, mask, p, rsvdCnt, [&](uint32_t r, uint32_t j) {
        const uint64_t b = uint64_t(r) * bits_per_stride + j;
        return (bits[b / 8] >> (b % 8)) & 1;
    }, s);
}

template <class T, class... Mode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& p, uint64_t& rsvdCnt,
                       evk_twin::Src s = {}) {
    if (src1Pattern < 1 || src1Pattern > 7) {
        evk_twin::fault("invalid-argument", "GatherMask", s,
                        "built-in pattern " + std::to_string(src1Pattern) + " outside [1, 7]");
    }
    twin_detail::gather_mask(dst, src0, reduceMode, mask, p, rsvdCnt, [&](uint32_t, uint32_t j) {
        switch (src1Pattern) {
            case 1: return j % 2 == 0;
            case 2: return j % 2 == 1;
            case 7: return true;
            default: return j % 4 == uint32_t(src1Pattern - 3);
        }
    }, s);
}

}  // namespace AscendC
