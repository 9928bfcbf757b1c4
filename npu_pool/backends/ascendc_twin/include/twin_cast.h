// EvoKernel Ascend C twin: Cast between element types, with the conversion's rounding mode
// (count form and mask/repeat form; a repeat converts 256 / the wider type's size elements).
#pragma once

#include "twin_vector.h"

namespace evk_twin {

inline Rounding rounding_of(AscendC::RoundMode m) {
    switch (m) {
        case AscendC::RoundMode::CAST_FLOOR: return Rounding::kFloor;
        case AscendC::RoundMode::CAST_CEIL: return Rounding::kCeil;
        case AscendC::RoundMode::CAST_ROUND: return Rounding::kRound;
        case AscendC::RoundMode::CAST_TRUNC: return Rounding::kTrunc;
        case AscendC::RoundMode::CAST_ODD: return Rounding::kOdd;
        default: return Rounding::kRint;  // CAST_NONE rounds to nearest even where the cast loses precision
    }
}

// Rounds a float-valued number to an integer under a mode (round-to-odd means: to nearest even
// for integers, the device defines CAST_ODD for float -> half only).
inline double round_integer(double v, Rounding r) {
    switch (r) {
        case Rounding::kFloor: return std::floor(v);
        case Rounding::kCeil: return std::ceil(v);
        case Rounding::kRound: return std::round(v);
        case Rounding::kTrunc: return std::trunc(v);
        default: return std::nearbyint(v);
    }
}

template <class D>
inline D convert(double v, Rounding r);

template <>
inline float convert<float>(double v, Rounding r) {
    // double -> float under a mode: the inputs here are exact in double (any 32-bit int or float)
    const float nearest = static_cast<float>(v);
    if (r == Rounding::kRint || std::isnan(v) || static_cast<double>(nearest) == v) return nearest;
    float lo = nearest, hi = nearest;
    if (static_cast<double>(nearest) > v) lo = std::nextafter(nearest, -INFINITY);
    else hi = std::nextafter(nearest, INFINITY);
    switch (r) {
        case Rounding::kFloor: return lo;
        case Rounding::kCeil: return hi;
        case Rounding::kTrunc: return v < 0 ? hi : lo;
        case Rounding::kRound: {
            const double dl = v - lo, dh = hi - v;
            return dl < dh ? lo : (dh < dl ? hi : (v < 0 ? lo : hi));
        }
        case Rounding::kOdd: return (float_bits(lo) & 1) ? lo : hi;
        default: return nearest;
    }
}
// v as a float for a second rounding to 16 bits: exact when v is a float, otherwise rounded to
// odd, so that the 16-bit rounding after it is not a double rounding
inline float float_for_narrowing(double v) {
    return static_cast<double>(static_cast<float>(v)) == v ? static_cast<float>(v) : convert<float>(v, Rounding::kOdd);
}
template <>
inline half convert<half>(double v, Rounding r) {
    half h;
    h.bits = float_to_half_bits(float_for_narrowing(v), r);
    return h;
}
template <>
inline bfloat16_t convert<bfloat16_t>(double v, Rounding r) {
    bfloat16_t b;
    b.bits = float_to_bf16_bits(float_for_narrowing(v), r);
    return b;
}

template <class I>
inline I saturate_integer(double v, Rounding r) {
    if (std::isnan(v)) return 0;
    const double x = round_integer(v, r);
    if (x <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    if (x >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
    return static_cast<I>(x);
}
template <>
inline int32_t convert<int32_t>(double v, Rounding r) { return saturate_integer<int32_t>(v, r); }
template <>
inline int16_t convert<int16_t>(double v, Rounding r) { return saturate_integer<int16_t>(v, r); }
template <>
inline int8_t convert<int8_t>(double v, Rounding r) { return saturate_integer<int8_t>(v, r); }
template <>
inline uint8_t convert<uint8_t>(double v, Rounding r) { return saturate_integer<uint8_t>(v, r); }
template <>
inline int64_t convert<int64_t>(double v, Rounding r) { return saturate_integer<int64_t>(v, r); }

template <class T>
inline double widen(T v) {
    return static_cast<double>(static_cast<calc_t<T>>(v));
}

}  // namespace evk_twin

namespace AscendC {

// --- Cast between element types, with the rounding mode of the conversion ---------------------
template <class D, class S>
inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, const RoundMode& mode, const uint32_t count,
                 evk_twin::Src s = {}) {
    static_assert(!std::is_same<D, double>::value && !std::is_same<S, double>::value,
                  "Cast: double is not an Ascend C vector type (not in the EvoKernel twin)");
    src.check(count, "Cast", s);
    dst.check_w(count, "Cast", s);
    const evk_twin::Rounding r = evk_twin::rounding_of(mode);
    for (uint32_t i = 0; i < count; ++i) dst.data()[i] = evk_twin::convert<D>(evk_twin::widen(src.data()[i]), r);
    evk_twin::count_vector(evk_twin::kCast, evk_twin::count_repeats<typename std::conditional<(sizeof(D) > sizeof(S)), D, S>::type>(count));
}

// Mask/repeat form: a repeat converts 256 / max(sizeof(D), sizeof(S)) elements; each side's
// block and repeat strides count 32-byte blocks of its own type (e.g. float -> half: source
// repeat stride 8, destination 4 for dense data). The mask counts elements of the wider type.
namespace twin_detail {
template <class D, class S>
inline void cast_masked(const LocalTensor<D>& dst, const LocalTensor<S>& src, RoundMode mode, const evk_twin::Mask& m,
                        uint32_t repeatTimes, const UnaryRepeatParams& p, evk_twin::Src s) {
    evk_twin::check_repeat(repeatTimes, "Cast", s);
    if (repeatTimes == 0) return;
    const uint32_t last = m.highest();
    src.check(evk_twin::strided<S>(repeatTimes - 1, last, p.srcBlkStride, p.srcRepStride) + 1, "Cast", s);
    dst.check_w(evk_twin::strided<D>(repeatTimes - 1, last, p.dstBlkStride, p.dstRepStride) + 1, "Cast", s);
    const evk_twin::Rounding r = evk_twin::rounding_of(mode);
    for (uint32_t rep = 0; rep < repeatTimes; ++rep)
        for (uint32_t j = 0; j <= last; ++j)
            if (m.test(j)) {
                const S v = src.data()[evk_twin::strided<S>(rep, j, p.srcBlkStride, p.srcRepStride)];
                dst.data()[evk_twin::strided<D>(rep, j, p.dstBlkStride, p.dstRepStride)] = evk_twin::convert<D>(evk_twin::widen(v), r);
            }
    evk_twin::count_vector(evk_twin::kCast, repeatTimes);
}
template <class D, class S>
using wider_t = typename std::conditional<(sizeof(D) > sizeof(S)), D, S>::type;
}  // namespace twin_detail

template <class D, class S>
inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, const RoundMode& mode, uint64_t mask,
                 const uint32_t repeatTimes, const UnaryRepeatParams& p, evk_twin::Src s = {}) {
    twin_detail::cast_masked(dst, src, mode, evk_twin::contiguous_mask<twin_detail::wider_t<D, S>>(mask, "Cast", s),
                             repeatTimes, p, s);
}

template <class D, class S>
inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, const RoundMode& mode, const uint64_t mask[],
                 const uint32_t repeatTimes, const UnaryRepeatParams& p, evk_twin::Src s = {}) {
    twin_detail::cast_masked(dst, src, mode, evk_twin::bit_mask<twin_detail::wider_t<D, S>>(mask, "Cast", s),
                             repeatTimes, p, s);
}

}  // namespace AscendC
