// EvoKernel Ascend C twin: Compare and CompareScalar (one bit per element), Select by those
// bits, and Brcb (each source element fills a 32-byte block), in both instruction forms.
#pragma once

#include "twin_cast.h"

namespace AscendC {

// --- Compare: one bit per element (LSB first) into a uint8_t tensor ---------------------------
namespace twin_detail {
template <class C>
inline bool compare(C a, C b, CMPMODE m) {
    switch (m) {
        case CMPMODE::LT: return a < b;
        case CMPMODE::GT: return a > b;
        case CMPMODE::EQ: return a == b;
        case CMPMODE::LE: return a <= b;
        case CMPMODE::GE: return a >= b;
        default: return a != b;
    }
}
template <class T, class U, class Get>
inline void compare_into(const LocalTensor<U>& dst, const LocalTensor<T>& src0, uint32_t count, CMPMODE mode, Get rhs,
                         const char* api, evk_twin::Src s) {
    if ((uint64_t(count) * sizeof(T)) % 256 != 0) {
        evk_twin::fault("alignment", api, s,
                        "count * sizeof(T) = " + std::to_string(uint64_t(count) * sizeof(T)) +
                            " bytes is not a multiple of 256 (Compare works on whole repeats)");
    }
    src0.check(count, api, s);
    const uint32_t bytes = count / 8;
    dst.check_w((bytes + sizeof(U) - 1) / sizeof(U), api, s);
    uint8_t* out = reinterpret_cast<uint8_t*>(dst.data());
    std::memset(out, 0, bytes);
    for (uint32_t i = 0; i < count; ++i) {
        using C = evk_twin::calc_t<T>;
        if (compare<C>(static_cast<C>(src0.data()[i]), static_cast<C>(rhs(i)), mode)) out[i / 8] |= uint8_t(1u << (i % 8));
    }
    evk_twin::count_vector(evk_twin::kCompareSelect, evk_twin::count_repeats<T>(count));
}
}  // namespace twin_detail

template <class T, class U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE mode,
                    uint32_t count, evk_twin::Src s = {}) {
    src1.check(count, "Compare", s);
    twin_detail::compare_into(dst, src0, count, mode, [&](uint32_t i) { return src1.data()[i]; }, "Compare", s);
}

template <class T, class U>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const evk_twin::nondeduced<T> scalar,
                          CMPMODE mode, uint32_t count, evk_twin::Src s = {}) {
    twin_detail::compare_into(dst, src0, count, mode, [&](uint32_t) { return scalar; }, "CompareScalar", s);
}

// Mask/repeat form: each repeat compares the elements its mask selects (the sources strided as
// in Add) and writes their bits at bit r * (256 / sizeof(T)) + j of dst: the results of
// consecutive repeats are packed (dst's strides are not used). Bits of elements the mask
// leaves out keep their old value (the device does not document them: do not rely on it).
namespace twin_detail {
template <class T, class U, class Rhs>
inline void compare_masked(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const evk_twin::Mask& m,
                           uint32_t repeatTimes, uint32_t blk, uint32_t rep, CMPMODE mode, Rhs rhs, const char* api,
                           evk_twin::Src s) {
    evk_twin::check_repeat(repeatTimes, api, s);
    constexpr uint32_t epr = 256 / sizeof(T);
    src0.check(evk_twin::strided_extent<T>(repeatTimes, m, blk, rep), api, s);
    const uint64_t bytes = uint64_t(repeatTimes) * epr / 8;
    dst.check_w((bytes + sizeof(U) - 1) / sizeof(U), api, s);
    uint8_t* out = reinterpret_cast<uint8_t*>(dst.data());
    using C = evk_twin::calc_t<T>;
    for (uint32_t r = 0; r < repeatTimes; ++r)
        for (uint32_t j = 0; j < epr; ++j)
            if (m.test(j)) {
                const uint64_t bit = uint64_t(r) * epr + j;
                const T a = src0.data()[evk_twin::strided<T>(r, j, blk, rep)];
                if (compare<C>(static_cast<C>(a), static_cast<C>(rhs(r, j)), mode)) out[bit / 8] |= uint8_t(1u << (bit % 8));
                else out[bit / 8] &= uint8_t(~(1u << (bit % 8)));
            }
    evk_twin::count_vector(evk_twin::kCompareSelect, repeatTimes);
}

template <class T, class U>
inline void compare_tensors(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                            CMPMODE mode, const evk_twin::Mask& m, uint32_t repeatTimes, const BinaryRepeatParams& p,
                            evk_twin::Src s) {
    src1.check(evk_twin::strided_extent<T>(repeatTimes, m, p.src1BlkStride, p.src1RepStride), "Compare", s);
    compare_masked(dst, src0, m, repeatTimes, p.src0BlkStride, p.src0RepStride, mode,
                   [&](uint32_t r, uint32_t j) { return src1.data()[evk_twin::strided<T>(r, j, p.src1BlkStride, p.src1RepStride)]; },
                   "Compare", s);
}
}  // namespace twin_detail

template <class T, class U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE mode,
                    uint64_t mask, uint32_t repeatTimes, const BinaryRepeatParams& p, evk_twin::Src s = {}) {
    twin_detail::compare_tensors(dst, src0, src1, mode, evk_twin::contiguous_mask<T>(mask, "Compare", s), repeatTimes, p, s);
}

template <class T, class U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE mode,
                    const uint64_t mask[], uint32_t repeatTimes, const BinaryRepeatParams& p, evk_twin::Src s = {}) {
    twin_detail::compare_tensors(dst, src0, src1, mode, evk_twin::bit_mask<T>(mask, "Compare", s), repeatTimes, p, s);
}

template <class T, class U, bool isSetMask = true>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const evk_twin::nondeduced<T> scalar,
                          CMPMODE mode, uint64_t mask, uint32_t repeatTimes, const UnaryRepeatParams& p,
                          evk_twin::Src s = {}) {
    twin_detail::compare_masked(dst, src0, evk_twin::contiguous_mask<T>(mask, "CompareScalar", s), repeatTimes,
                                p.srcBlkStride, p.srcRepStride, mode, [&](uint32_t, uint32_t) { return scalar; },
                                "CompareScalar", s);
}

template <class T, class U, bool isSetMask = true>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const evk_twin::nondeduced<T> scalar,
                          CMPMODE mode, const uint64_t mask[], uint32_t repeatTimes, const UnaryRepeatParams& p,
                          evk_twin::Src s = {}) {
    twin_detail::compare_masked(dst, src0, evk_twin::bit_mask<T>(mask, "CompareScalar", s), repeatTimes,
                                p.srcBlkStride, p.srcRepStride, mode, [&](uint32_t, uint32_t) { return scalar; },
                                "CompareScalar", s);
}

// --- Select: dst[i] = bit i of selMask ? src0[i] : src1[i] (or the scalar) --------------------
template <class T, class U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE mode, uint32_t count, evk_twin::Src s = {}) {
    if (mode == SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        evk_twin::fault("invalid-argument", "Select", s, "VSEL_TENSOR_SCALAR_MODE takes a scalar as src1");
    }
    dst.check_w(count, "Select", s);
    src0.check(count, "Select", s);
    src1.check(count, "Select", s);
    selMask.check((count / 8 + sizeof(U) - 1) / sizeof(U), "Select", s);
    const uint8_t* bits = reinterpret_cast<const uint8_t*>(selMask.data());
    for (uint32_t i = 0; i < count; ++i) dst.data()[i] = (bits[i / 8] >> (i % 8)) & 1 ? src0.data()[i] : src1.data()[i];
    evk_twin::count_vector(evk_twin::kCompareSelect, evk_twin::count_repeats<T>(count));
}

template <class T, class U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   evk_twin::nondeduced<T> scalar, SELMODE mode, uint32_t count, evk_twin::Src s = {}) {
    dst.check_w(count, "Select", s);
    src0.check(count, "Select", s);
    selMask.check((count / 8 + sizeof(U) - 1) / sizeof(U), "Select", s);
    (void)mode;
    const uint8_t* bits = reinterpret_cast<const uint8_t*>(selMask.data());
    for (uint32_t i = 0; i < count; ++i) dst.data()[i] = (bits[i / 8] >> (i % 8)) & 1 ? src0.data()[i] : scalar;
    evk_twin::count_vector(evk_twin::kCompareSelect, evk_twin::count_repeats<T>(count));
}

// Mask/repeat form: selection as above, then the mask filters it (elements it leaves out keep
// dst's old value); dst, src0 and src1 strided by the BinaryRepeatParams. Which selMask bits a
// repeat uses depends on the mode: VSEL_CMPMASK_SPR, the first 256 / sizeof(T) bits for every
// repeat; VSEL_TENSOR_TENSOR_MODE and the scalar form (VSEL_TENSOR_SCALAR_MODE), consecutive
// runs of 256 / sizeof(T) bits, one per repeat.
namespace twin_detail {
template <class T, class U, class Other>
inline void select_masked(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                          bool same_bits_each_repeat, const evk_twin::Mask& m, uint32_t repeatTimes,
                          const BinaryRepeatParams& p, Other other, evk_twin::Src s) {
    evk_twin::check_repeat(repeatTimes, "Select", s);
    constexpr uint32_t epr = 256 / sizeof(T);
    dst.check_w(evk_twin::strided_extent<T>(repeatTimes, m, p.dstBlkStride, p.dstRepStride), "Select", s);
    src0.check(evk_twin::strided_extent<T>(repeatTimes, m, p.src0BlkStride, p.src0RepStride), "Select", s);
    const uint64_t bits = same_bits_each_repeat ? epr : uint64_t(repeatTimes) * epr;
    selMask.check((bits / 8 + sizeof(U) - 1) / sizeof(U), "Select", s);
    const uint8_t* sel = reinterpret_cast<const uint8_t*>(selMask.data());
    for (uint32_t r = 0; r < repeatTimes; ++r)
        for (uint32_t j = 0; j < epr; ++j)
            if (m.test(j)) {
                const uint64_t bit = same_bits_each_repeat ? j : uint64_t(r) * epr + j;
                dst.data()[evk_twin::strided<T>(r, j, p.dstBlkStride, p.dstRepStride)] =
                    (sel[bit / 8] >> (bit % 8)) & 1 ? src0.data()[evk_twin::strided<T>(r, j, p.src0BlkStride, p.src0RepStride)]
                                                    : other(r, j);
            }
    evk_twin::count_vector(evk_twin::kCompareSelect, repeatTimes);
}

template <class T, class U>
inline void select_tensors(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                           const LocalTensor<T>& src1, SELMODE mode, const evk_twin::Mask& m, uint32_t repeatTimes,
                           const BinaryRepeatParams& p, evk_twin::Src s) {
    if (mode == SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        evk_twin::fault("invalid-argument", "Select", s, "VSEL_TENSOR_SCALAR_MODE takes a scalar as src1");
    }
    src1.check(evk_twin::strided_extent<T>(repeatTimes, m, p.src1BlkStride, p.src1RepStride), "Select", s);
    select_masked(dst, selMask, src0, mode == SELMODE::VSEL_CMPMASK_SPR, m, repeatTimes, p,
                  [&](uint32_t r, uint32_t j) { return src1.data()[evk_twin::strided<T>(r, j, p.src1BlkStride, p.src1RepStride)]; }, s);
}

template <class T, class U>
inline void select_scalar(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                          T scalar, SELMODE mode, const evk_twin::Mask& m, uint32_t repeatTimes,
                          const BinaryRepeatParams& p, evk_twin::Src s) {
    if (mode != SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        evk_twin::fault("invalid-argument", "Select", s, "a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE");
    }
    select_masked(dst, selMask, src0, false, m, repeatTimes, p, [&](uint32_t, uint32_t) { return scalar; }, s);
}
}  // namespace twin_detail

template <class T, class U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE mode, uint64_t mask, uint32_t repeatTimes,
                   const BinaryRepeatParams& p, evk_twin::Src s = {}) {
    twin_detail::select_tensors(dst, selMask, src0, src1, mode, evk_twin::contiguous_mask<T>(mask, "Select", s),
                                repeatTimes, p, s);
}

template <class T, class U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE mode, const uint64_t mask[], uint32_t repeatTimes,
                   const BinaryRepeatParams& p, evk_twin::Src s = {}) {
    twin_detail::select_tensors(dst, selMask, src0, src1, mode, evk_twin::bit_mask<T>(mask, "Select", s), repeatTimes,
                                p, s);
}

template <class T, class U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   evk_twin::nondeduced<T> scalar, SELMODE mode, uint64_t mask, uint32_t repeatTimes,
                   const BinaryRepeatParams& p, evk_twin::Src s = {}) {
    twin_detail::select_scalar(dst, selMask, src0, static_cast<T>(scalar), mode,
                               evk_twin::contiguous_mask<T>(mask, "Select", s), repeatTimes, p, s);
}

template <class T, class U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   evk_twin::nondeduced<T> scalar, SELMODE mode, const uint64_t mask[], uint32_t repeatTimes,
                   const BinaryRepeatParams& p, evk_twin::Src s = {}) {
    twin_detail::select_scalar(dst, selMask, src0, static_cast<T>(scalar), mode, evk_twin::bit_mask<T>(mask, "Select", s),
                               repeatTimes, p, s);
}

// --- Brcb: each of 8 source elements per repeat fills one 32-byte block of dst ----------------
struct BrcbRepeatParams {
    BrcbRepeatParams() {}
    BrcbRepeatParams(uint16_t dstBlk, uint16_t dstRep) : dstBlkStride(dstBlk), dstRepStride(dstRep) {}
    uint16_t dstBlkStride = 1;  // 32-byte blocks between the 8 blocks of a repeat
    uint16_t dstRepStride = 8;  // 32-byte blocks between repeats
};

template <class T>
inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t repeatTimes,
                 const BrcbRepeatParams& p, evk_twin::Src s = {}) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Brcb takes 16- or 32-bit elements");
    constexpr uint32_t epb = 32 / sizeof(T);
    evk_twin::check_repeat(repeatTimes, "Brcb", s);
    if (repeatTimes == 0) return;
    src.check(uint64_t(repeatTimes) * 8, "Brcb", s);
    dst.check_w((uint64_t(repeatTimes - 1) * p.dstRepStride + 7ull * p.dstBlkStride + 1) * epb, "Brcb", s);
    for (uint32_t r = 0; r < repeatTimes; ++r)
        for (uint32_t k = 0; k < 8; ++k) {
            const T v = src.data()[r * 8 + k];
            T* block = dst.data() + (uint64_t(r) * p.dstRepStride + uint64_t(k) * p.dstBlkStride) * epb;
            for (uint32_t e = 0; e < epb; ++e) block[e] = v;
        }
    evk_twin::count_vector(evk_twin::kDuplicate, repeatTimes);
}

}  // namespace AscendC
