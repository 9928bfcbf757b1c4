// EvoKernel Ascend C twin: vector-unit instructions on LocalTensors.
//
// Two forms, as on the device. Count form: op(dst, src..., count) over the first count
// elements. Mask/repeat form: op(dst, src..., mask, repeatTimes, repeatParams): each repeat
// reads 256 bytes as 8 data blocks of 32 bytes; `mask` picks elements inside a repeat
// (contiguous count, or two 64-bit words bit by bit), block strides and repeat strides are in
// 32-byte blocks. Operands must start 32-byte aligned; repeatTimes is at most 255. 16-bit
// floats compute in float and round once to the destination (round to nearest even).
#pragma once

#include "twin_pipe.h"

namespace AscendC {

struct UnaryRepeatParams {
    UnaryRepeatParams() {}
    UnaryRepeatParams(uint16_t dstBlk, uint16_t srcBlk, uint8_t dstRep, uint8_t srcRep)
        : dstBlkStride(dstBlk), srcBlkStride(srcBlk), dstRepStride(dstRep), srcRepStride(srcRep) {}
    uint16_t dstBlkStride = 1;
    uint16_t srcBlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t srcRepStride = 8;
};

struct BinaryRepeatParams {
    BinaryRepeatParams() {}
    BinaryRepeatParams(uint8_t dstBlk, uint8_t src0Blk, uint8_t src1Blk, uint8_t dstRep, uint8_t src0Rep, uint8_t src1Rep)
        : dstBlkStride(dstBlk), src0BlkStride(src0Blk), src1BlkStride(src1Blk), dstRepStride(dstRep),
          src0RepStride(src0Rep), src1RepStride(src1Rep) {}
    uint8_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
};

enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };

constexpr uint64_t MASK_PLACEHOLDER = 0;

// The instruction-shape constants the documentation and samples name.
constexpr int32_t ONE_BLK_SIZE = 32;            // bytes of a data block
constexpr int32_t ONE_REPEAT_BYTE_SIZE = 256;   // bytes a repeat reads
constexpr int32_t DEFAULT_BLK_NUM = 8;          // blocks a repeat
constexpr int32_t DEFAULT_BLK_STRIDE = 1;
constexpr uint8_t DEFAULT_REPEAT_STRIDE = 8;
constexpr uint8_t HALF_DEFAULT_REPEAT_STRIDE = 4;
constexpr int32_t MAX_REPEAT_TIMES = 255;
constexpr uint64_t FULL_MASK = ~uint64_t(0);
constexpr int32_t ONE_BYTE_BIT_SIZE = 8;
constexpr int32_t BLOCK_CUBE = 16;              // the cube's fractal edge
// UB bytes a kernel may hand the Matmul as its local workspace (SetLocalWorkspace, needed on
// Atlas inference cores): the twin's default SoC's UB (Ascend910B: 192 KiB), a compile-time
// constant as in the toolkit, where it depends on the target architecture.
constexpr int32_t TOTAL_VEC_LOCAL_SIZE = 192 * 1024;

}  // namespace AscendC

namespace evk_twin {

template <class T>
struct Identity {
    using type = T;
};
template <class T>
using nondeduced = typename Identity<T>::type;

// Elements of a vector instruction's repeat selected by its mask.
struct Mask {
    uint64_t lo = 0, hi = 0;
    bool test(uint32_t j) const { return j < 64 ? (lo >> j) & 1 : (hi >> (j - 64)) & 1; }
    uint32_t highest() const {
        if (hi) return 127 - __builtin_clzll(hi);
        return lo ? 63 - __builtin_clzll(lo) : 0;
    }
};

template <class T>
Mask contiguous_mask(uint64_t count, const char* api, Src s) {
    const uint64_t per_repeat = 256 / sizeof(T);
    if (count == 0 || count > per_repeat) {
        fault("mask-range", api, s,
              "contiguous mask " + std::to_string(count) + " outside [1, " + std::to_string(per_repeat) + "] for " +
                  std::to_string(sizeof(T) * 8) + "-bit elements");
    }
    Mask m;
    m.lo = count >= 64 ? ~uint64_t(0) : ((uint64_t(1) << count) - 1);
    m.hi = count > 64 ? (count >= 128 ? ~uint64_t(0) : ((uint64_t(1) << (count - 64)) - 1)) : 0;
    return m;
}

template <class T>
Mask bit_mask(const uint64_t mask[], const char* api, Src s) {
    Mask m{mask[0], sizeof(T) == 2 ? mask[1] : 0};
    if (sizeof(T) >= 4 && mask[1] != 0) {
        fault("mask-range", api, s, "mask[1] must be 0 for 32-bit elements (64 per repeat)");
    }
    if (!m.lo && !m.hi) fault("mask-range", api, s, "mask selects no element");
    return m;
}

inline void check_repeat(uint64_t repeat, const char* api, Src s) {
    if (repeat > 255) {
        fault("repeat-limit", api, s,
              "repeatTimes " + std::to_string(repeat) +
                  " exceeds 255 (the instruction's 8-bit field; split the work or use the count form)");
    }
}

// The mask of a mask/repeat instruction: its own (isSetMask = true) or, with isSetMask = false
// (the mask argument then MASK_PLACEHOLDER), the one set before by SetVectorMask: in normal
// mode a bit mask for every repeat; in counter mode (SetMaskCount) a count of elements, whose
// whole repeats and tail the instruction runs whatever repeatTimes says. Calls
// body(mask, repeats, first repeat) once, or per run of at most 255 repeats plus the tail.
template <class T, bool isSetMask, class Body>
inline void with_mask(uint64_t mask, uint64_t repeatTimes, const char* api, Src s, Body body) {
    if constexpr (isSetMask) {
        body(contiguous_mask<T>(mask, api, s), repeatTimes, 0);
    } else {
        const State& st = state();
        if (!st.mask_counter) {
            const uint64_t preset[2] = {st.mask_lo, sizeof(T) >= 4 ? 0 : st.mask_hi};
            body(bit_mask<T>(preset, api, s), repeatTimes, 0);
            return;
        }
        constexpr uint64_t epr = 256 / sizeof(T);
        const uint64_t count = st.mask_lo, full = count / epr;
        for (uint64_t first = 0; first < full; first += 255) body(contiguous_mask<T>(epr, api, s), std::min<uint64_t>(255, full - first), first);
        if (count % epr) body(contiguous_mask<T>(count % epr, api, s), 1, full);
    }
}

inline void count_vector(VecClass cls, uint64_t repeats) {
    auto& c = state().counters;
    c.repeats[cls] += repeats;
    ++c.vector_instructions;
}

template <class T>
uint64_t count_repeats(uint64_t count) {
    return (count * sizeof(T) + 255) / 256;
}

// Offset (in elements) of element j of repeat r with the given strides (in 32-byte blocks).
template <class T>
inline uint64_t strided(uint32_t r, uint32_t j, uint32_t blk, uint32_t rep) {
    constexpr uint32_t epb = 32 / sizeof(T);
    return uint64_t(r) * rep * epb + uint64_t(j / epb) * blk * epb + j % epb;
}

template <class T>
inline uint64_t strided_extent(uint32_t repeat, const Mask& m, uint32_t blk, uint32_t rep) {
    if (repeat == 0) return 0;
    return strided<T>(repeat - 1, m.highest(), blk, rep) + 1;
}

template <class T, class F>
void unary_count(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, int64_t count, F f,
                 const char* api, Src s, VecClass cls) {
    if (count < 0) fault("invalid-argument", api, s, "negative count " + std::to_string(count));
    src.check(count, api, s);
    dst.check_w(count, api, s);
    T* d = dst.data();
    const T* x = src.data();
    for (int64_t i = 0; i < count; ++i) d[i] = static_cast<T>(f(static_cast<calc_t<T>>(x[i])));
    count_vector(cls, count_repeats<T>(count));
}

template <class T, class F>
void unary_masked(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, const Mask& m, uint64_t repeat,
                  const AscendC::UnaryRepeatParams& p, F f, const char* api, Src s, VecClass cls) {
    check_repeat(repeat, api, s);
    src.check(strided_extent<T>(repeat, m, p.srcBlkStride, p.srcRepStride), api, s);
    dst.check_w(strided_extent<T>(repeat, m, p.dstBlkStride, p.dstRepStride), api, s);
    constexpr uint32_t epr = 256 / sizeof(T);
    for (uint32_t r = 0; r < repeat; ++r)
        for (uint32_t j = 0; j < epr; ++j)
            if (m.test(j)) {
                const T v = src.data()[strided<T>(r, j, p.srcBlkStride, p.srcRepStride)];
                dst.data()[strided<T>(r, j, p.dstBlkStride, p.dstRepStride)] = static_cast<T>(f(static_cast<calc_t<T>>(v)));
            }
    count_vector(cls, repeat);
}

template <class T, class F>
void binary_count(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a, const AscendC::LocalTensor<T>& b,
                  int64_t count, F f, const char* api, Src s, VecClass cls) {
    if (count < 0) fault("invalid-argument", api, s, "negative count " + std::to_string(count));
    a.check(count, api, s);
    b.check(count, api, s);
    dst.check_w(count, api, s);
    T* d = dst.data();
    const T* x = a.data();
    const T* y = b.data();
    for (int64_t i = 0; i < count; ++i)
        d[i] = static_cast<T>(f(static_cast<calc_t<T>>(x[i]), static_cast<calc_t<T>>(y[i])));
    count_vector(cls, count_repeats<T>(count));
}

template <class T, class F>
void binary_masked(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a, const AscendC::LocalTensor<T>& b,
                   const Mask& m, uint64_t repeat, const AscendC::BinaryRepeatParams& p, F f, const char* api, Src s,
                   VecClass cls) {
    check_repeat(repeat, api, s);
    a.check(strided_extent<T>(repeat, m, p.src0BlkStride, p.src0RepStride), api, s);
    b.check(strided_extent<T>(repeat, m, p.src1BlkStride, p.src1RepStride), api, s);
    dst.check_w(strided_extent<T>(repeat, m, p.dstBlkStride, p.dstRepStride), api, s);
    constexpr uint32_t epr = 256 / sizeof(T);
    for (uint32_t r = 0; r < repeat; ++r)
        for (uint32_t j = 0; j < epr; ++j)
            if (m.test(j)) {
                const T x = a.data()[strided<T>(r, j, p.src0BlkStride, p.src0RepStride)];
                const T y = b.data()[strided<T>(r, j, p.src1BlkStride, p.src1RepStride)];
                dst.data()[strided<T>(r, j, p.dstBlkStride, p.dstRepStride)] =
                    static_cast<T>(f(static_cast<calc_t<T>>(x), static_cast<calc_t<T>>(y)));
            }
    count_vector(cls, repeat);
}

}  // namespace evk_twin

namespace evk_twin {
// Div is a floating-point instruction: integer tensors (and their division by zero) are refused
// at compile time.
template <class C>
inline C float_only_div(C a, C b) {
    static_assert(std::is_floating_point<C>::value, "Div on integer tensors is not in the EvoKernel twin");
    return a / b;
}
}  // namespace evk_twin

// --- the instruction set: one macro per shape writes the count form and both mask forms ------
#define EVK_TWIN_BINARY(NAME, CLASS, EXPR)                                                                              \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,               \
                     const int32_t& count, evk_twin::Src s = {}) {                                                    \
        evk_twin::binary_count(dst, src0, src1, count, [](auto a, auto b) { return EXPR; }, #NAME, s, CLASS);         \
    }                                                                                                                  \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask, \
                     const uint32_t repeatTimes, const BinaryRepeatParams& p, evk_twin::Src s = {}) {                  \
        constexpr uint32_t epb = 32 / sizeof(T);                                                                       \
        evk_twin::with_mask<T, isSetMask>(mask, repeatTimes, #NAME, s, [&](const evk_twin::Mask& m, uint64_t n, uint64_t r) { \
            evk_twin::binary_masked(dst[r * p.dstRepStride * epb], src0[r * p.src0RepStride * epb],                   \
                                    src1[r * p.src1RepStride * epb], m, n, p, [](auto a, auto b) { return EXPR; },     \
                                    #NAME, s, CLASS);                                                                  \
        });                                                                                                            \
    }                                                                                                                  \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,               \
                     const uint64_t mask[], const uint32_t repeatTimes, const BinaryRepeatParams& p,                   \
                     evk_twin::Src s = {}) {                                                                           \
        evk_twin::binary_masked(dst, src0, src1, evk_twin::bit_mask<T>(mask, #NAME, s), repeatTimes, p,                \
                                [](auto a, auto b) { return EXPR; }, #NAME, s, CLASS);                                 \
    }

#define EVK_TWIN_UNARY(NAME, CLASS, EXPR)                                                                              \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, evk_twin::Src s = {}) { \
        evk_twin::unary_count(dst, src, count, [](auto a) { return EXPR; }, #NAME, s, CLASS);                         \
    }                                                                                                                  \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask, const uint32_t repeatTimes,  \
                     const UnaryRepeatParams& p, evk_twin::Src s = {}) {                                               \
        constexpr uint32_t epb = 32 / sizeof(T);                                                                       \
        evk_twin::with_mask<T, isSetMask>(mask, repeatTimes, #NAME, s, [&](const evk_twin::Mask& m, uint64_t n, uint64_t r) { \
            evk_twin::unary_masked(dst[r * p.dstRepStride * epb], src[r * p.srcRepStride * epb], m, n, p,             \
                                   [](auto a) { return EXPR; }, #NAME, s, CLASS);                                      \
        });                                                                                                            \
    }                                                                                                                  \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],                      \
                     const uint32_t repeatTimes, const UnaryRepeatParams& p, evk_twin::Src s = {}) {                   \
        evk_twin::unary_masked(dst, src, evk_twin::bit_mask<T>(mask, #NAME, s), repeatTimes, p,                        \
                               [](auto a) { return EXPR; }, #NAME, s, CLASS);                                          \
    }

// scalar operand: converted to the tensor's element type first (as the instruction reads it)
#define EVK_TWIN_SCALAR(NAME, CLASS, EXPR)                                                                             \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const evk_twin::nondeduced<T>& scalar,      \
                     const int32_t& count, evk_twin::Src s = {}) {                                                    \
        const evk_twin::calc_t<T> k = static_cast<evk_twin::calc_t<T>>(scalar);                                        \
        evk_twin::unary_count(dst, src, count, [k](auto a) { return EXPR; }, #NAME, s, CLASS);                        \
    }                                                                                                                  \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const evk_twin::nondeduced<T>& scalar,      \
                     uint64_t mask, const uint32_t repeatTimes, const UnaryRepeatParams& p, evk_twin::Src s = {}) {    \
        const evk_twin::calc_t<T> k = static_cast<evk_twin::calc_t<T>>(scalar);                                        \
        constexpr uint32_t epb = 32 / sizeof(T);                                                                       \
        evk_twin::with_mask<T, isSetMask>(mask, repeatTimes, #NAME, s, [&](const evk_twin::Mask& m, uint64_t n, uint64_t r) { \
            evk_twin::unary_masked(dst[r * p.dstRepStride * epb], src[r * p.srcRepStride * epb], m, n, p,             \
                                   [k](auto a) { return EXPR; }, #NAME, s, CLASS);                                     \
        });                                                                                                            \
    }                                                                                                                  \
    template <class T, bool isSetMask = true>                                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const evk_twin::nondeduced<T>& scalar,      \
                     const uint64_t mask[], const uint32_t repeatTimes, const UnaryRepeatParams& p,                    \
                     evk_twin::Src s = {}) {                                                                           \
        const evk_twin::calc_t<T> k = static_cast<evk_twin::calc_t<T>>(scalar);                                        \
        evk_twin::unary_masked(dst, src, evk_twin::bit_mask<T>(mask, #NAME, s), repeatTimes, p,                        \
                               [k](auto a) { return EXPR; }, #NAME, s, CLASS);                                         \
    }

namespace AscendC {

EVK_TWIN_BINARY(Add, evk_twin::kArith, a + b)
EVK_TWIN_BINARY(Sub, evk_twin::kArith, a - b)
EVK_TWIN_BINARY(Mul, evk_twin::kArith, a * b)
EVK_TWIN_BINARY(Div, evk_twin::kTranscendental, evk_twin::float_only_div(a, b))
EVK_TWIN_BINARY(Max, evk_twin::kArith, (a > b ? a : b))
EVK_TWIN_BINARY(Min, evk_twin::kArith, (a < b ? a : b))
EVK_TWIN_BINARY(AddRelu, evk_twin::kArith, (a + b > 0 ? a + b : decltype(a + b)(0)))
EVK_TWIN_BINARY(SubRelu, evk_twin::kArith, (a - b > 0 ? a - b : decltype(a - b)(0)))
// dst = src0 * src1 + dst needs dst as an input: written out below
EVK_TWIN_UNARY(Exp, evk_twin::kTranscendental, std::exp(a))
EVK_TWIN_UNARY(Ln, evk_twin::kTranscendental, std::log(a))
EVK_TWIN_UNARY(Abs, evk_twin::kArith, std::abs(a))
EVK_TWIN_UNARY(Sqrt, evk_twin::kTranscendental, std::sqrt(a))
EVK_TWIN_UNARY(Rsqrt, evk_twin::kTranscendental, decltype(a)(1) / std::sqrt(a))
EVK_TWIN_UNARY(Reciprocal, evk_twin::kTranscendental, decltype(a)(1) / a)
EVK_TWIN_UNARY(Relu, evk_twin::kArith, (a > 0 ? a : decltype(a)(0)))
EVK_TWIN_SCALAR(Adds, evk_twin::kArith, a + k)
EVK_TWIN_SCALAR(Muls, evk_twin::kArith, a * k)
EVK_TWIN_SCALAR(Maxs, evk_twin::kArith, (a > k ? a : k))
EVK_TWIN_SCALAR(Mins, evk_twin::kArith, (a < k ? a : k))
EVK_TWIN_SCALAR(LeakyRelu, evk_twin::kArith, (a >= 0 ? a : a * k))

// Axpy: dst = src * scalar + dst.
template <class T, class U = T, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const evk_twin::nondeduced<U>& scalar,
                 const int32_t& count, evk_twin::Src s = {}) {
    dst.check(count, "Axpy", s);
    src.check(count, "Axpy", s);
    dst.check_w(count, "Axpy", s);
    const float k = static_cast<float>(scalar);
    for (int32_t i = 0; i < count; ++i)
        dst.data()[i] = static_cast<T>(static_cast<float>(src.data()[i]) * k + static_cast<float>(dst.data()[i]));
    evk_twin::count_vector(evk_twin::kArith, evk_twin::count_repeats<T>(count));
}

// MulAddDst: dst = src0 * src1 + dst.
template <class T, bool isSetMask = true>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                      const int32_t& count, evk_twin::Src s = {}) {
    dst.check(count, "MulAddDst", s);
    src0.check(count, "MulAddDst", s);
    src1.check(count, "MulAddDst", s);
    dst.check_w(count, "MulAddDst", s);
    for (int32_t i = 0; i < count; ++i)
        dst.data()[i] = static_cast<T>(static_cast<evk_twin::calc_t<T>>(src0.data()[i]) * static_cast<evk_twin::calc_t<T>>(src1.data()[i]) +
                                       static_cast<evk_twin::calc_t<T>>(dst.data()[i]));
    evk_twin::count_vector(evk_twin::kArith, evk_twin::count_repeats<T>(count));
}

// --- Duplicate: fill with a scalar ------------------------------------------------------------
template <class T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const evk_twin::nondeduced<T>& scalar, const int32_t& count,
                      evk_twin::Src s = {}) {
    if (count < 0) evk_twin::fault("invalid-argument", "Duplicate", s, "negative count");
    dst.check_w(count, "Duplicate", s);
    for (int32_t i = 0; i < count; ++i) dst.data()[i] = scalar;
    evk_twin::count_vector(evk_twin::kDuplicate, evk_twin::count_repeats<T>(count));
}

namespace twin_detail {
template <class T>
inline void duplicate_masked(const LocalTensor<T>& dst, const T& scalar, const evk_twin::Mask& m, uint32_t repeatTimes,
                             uint16_t dstBlockStride, uint8_t dstRepeatStride, evk_twin::Src s) {
    evk_twin::check_repeat(repeatTimes, "Duplicate", s);
    dst.check_w(evk_twin::strided_extent<T>(repeatTimes, m, dstBlockStride, dstRepeatStride), "Duplicate", s);
    for (uint32_t r = 0; r < repeatTimes; ++r)
        for (uint32_t j = 0; j < 256 / sizeof(T); ++j)
            if (m.test(j)) dst.data()[evk_twin::strided<T>(r, j, dstBlockStride, dstRepeatStride)] = scalar;
    evk_twin::count_vector(evk_twin::kDuplicate, repeatTimes);
}
}  // namespace twin_detail

template <class T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const evk_twin::nondeduced<T>& scalar, uint64_t mask,
                      const uint32_t repeatTimes, const uint16_t dstBlockStride, const uint8_t dstRepeatStride,
                      evk_twin::Src s = {}) {
    evk_twin::with_mask<T, isSetMask>(mask, repeatTimes, "Duplicate", s, [&](const evk_twin::Mask& m, uint64_t n, uint64_t r) {
        twin_detail::duplicate_masked(dst[r * dstRepeatStride * (32 / sizeof(T))], static_cast<T>(scalar), m,
                                      static_cast<uint32_t>(n), dstBlockStride, dstRepeatStride, s);
    });
}

template <class T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const evk_twin::nondeduced<T>& scalar, const uint64_t mask[],
                      const uint32_t repeatTimes, const uint16_t dstBlockStride, const uint8_t dstRepeatStride,
                      evk_twin::Src s = {}) {
    twin_detail::duplicate_masked(dst, scalar, evk_twin::bit_mask<T>(mask, "Duplicate", s), repeatTimes,
                                  dstBlockStride, dstRepeatStride, s);
}

}  // namespace AscendC
