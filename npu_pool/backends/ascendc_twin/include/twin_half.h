// EvoKernel Ascend C twin: the 16-bit float types `half` (IEEE binary16) and `bfloat16_t`,
// stored as bits and converted with exact round-to-nearest-even (and the other rounding modes
// Cast offers). Arithmetic goes through float and rounds back once: for +, -, *, / of two
// 16-bit values this equals the correctly rounded 16-bit result (float keeps 2p+2 bits).
#pragma once

#include <cstdint>
#include <cstring>
#include <cmath>
#include <type_traits>

namespace evk_twin {

enum class Rounding { kRint, kFloor, kCeil, kRound, kTrunc, kOdd };

inline uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float bits_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// Rounds the magnitude `mant` (an integer holding the value scaled by 2^shift) right by `shift`
// bits under a rounding mode; `neg` is the sign of the value (floor/ceil depend on it).
inline uint32_t round_shift(uint64_t mant, int shift, bool neg, Rounding mode) {
    if (shift <= 0) return static_cast<uint32_t>(mant << -shift);
    if (shift > 63) shift = 63;  // everything shifted out: only the sticky bit remains
    const uint64_t kept = mant >> shift;
    const uint64_t rest = mant & ((uint64_t(1) << shift) - 1);
    const uint64_t halfway = uint64_t(1) << (shift - 1);
    bool up = false;
    switch (mode) {
        case Rounding::kRint: up = rest > halfway || (rest == halfway && (kept & 1)); break;
        case Rounding::kRound: up = rest >= halfway; break;
        case Rounding::kTrunc: up = false; break;
        case Rounding::kFloor: up = neg && rest != 0; break;
        case Rounding::kCeil: up = !neg && rest != 0; break;
        case Rounding::kOdd: return static_cast<uint32_t>(kept | (rest != 0 ? 1 : 0));
    }
    return static_cast<uint32_t>(kept + (up ? 1 : 0));
}

// float -> binary16 bits under a rounding mode (overflow: inf, or the largest finite value
// where the mode rounds toward zero).
inline uint16_t float_to_half_bits(float f, Rounding mode = Rounding::kRint) {
    const uint32_t u = float_bits(f);
    const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
    const bool neg = sign != 0;
    const int exp = static_cast<int>((u >> 23) & 0xFF);
    uint32_t mant = u & 0x7FFFFF;
    if (exp == 0xFF) return static_cast<uint16_t>(sign | 0x7C00 | (mant ? 0x200 | (mant >> 13) : 0));
    if (exp == 0 && mant == 0) return sign;
    // value = m * 2^(e) with m holding the implicit bit, 24 significant bits
    int e = exp == 0 ? -126 : exp - 127;
    uint64_t m = exp == 0 ? mant : (mant | 0x800000);
    // half: normal exponent range [-14, 15], 10 fraction bits; subnormal step 2^-24
    int shift;
    if (e >= -14) {
        shift = 13;  // keep 11 significant bits
    } else {
        shift = 13 + (-14 - e);  // subnormal: fixed step 2^-24
    }
    uint32_t r = round_shift(m, shift, neg, mode);
    uint32_t out;
    if (e >= -14) {
        // r has 11 (or 12 after carry) significant bits
        int he = e + 15;
        if (r >= 0x800) {
            r >>= 1;
            ++he;
        }
        if (he >= 31) {
            const bool to_inf = mode == Rounding::kRint || mode == Rounding::kRound ||
                                (mode == Rounding::kCeil && !neg) || (mode == Rounding::kFloor && neg);
            return static_cast<uint16_t>(sign | (to_inf ? 0x7C00 : 0x7BFF));
        }
        out = (static_cast<uint32_t>(he) << 10) | (r & 0x3FF);
    } else {
        out = r;  // subnormal (a carry into 0x400 becomes the smallest normal: same encoding)
    }
    return static_cast<uint16_t>(sign | out);
}

inline float half_bits_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1F;
    uint32_t mant = h & 0x3FF;
    if (exp == 0x1F) return bits_float(sign | 0x7F800000 | (mant << 13));
    if (exp == 0) {
        if (mant == 0) return bits_float(sign);
        float v = std::ldexp(static_cast<float>(mant), -24);
        return sign ? -v : v;
    }
    return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t float_to_bf16_bits(float f, Rounding mode = Rounding::kRint) {
    const uint32_t u = float_bits(f);
    if ((u & 0x7F800000) == 0x7F800000 && (u & 0x7FFFFF)) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
    const bool neg = (u >> 31) != 0;
    const uint32_t mag = u & 0x7FFFFFFF;
    uint32_t r = round_shift(mag, 16, neg, mode);  // carries into the exponent naturally
    if (r >= 0x7F80 && (mag >> 16) < 0x7F80) {
        const bool to_inf = mode == Rounding::kRint || mode == Rounding::kRound ||
                            (mode == Rounding::kCeil && !neg) || (mode == Rounding::kFloor && neg);
        r = to_inf ? 0x7F80 : 0x7F7F;
    }
    return static_cast<uint16_t>((neg ? 0x8000 : 0) | r);
}

inline float bf16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

}  // namespace evk_twin

// The two 16-bit types (binary operators go through float: `a + b` is a float, rounded once
// when stored back), by value like the device's (2 bytes, trivially copyable).
struct bfloat16_t;
struct half {
    uint16_t bits;
    half() = default;
    constexpr explicit half(uint16_t raw, bool) : bits(raw) {}
    template <class U, class = typename std::enable_if<std::is_arithmetic<U>::value>::type>
    half(U v) : bits(evk_twin::float_to_half_bits(static_cast<float>(v))) {}
    half(bfloat16_t v);
    operator float() const { return evk_twin::half_bits_to_float(bits); }
    half& operator+=(half o) { return *this = half(float(*this) + float(o)); }
    half& operator-=(half o) { return *this = half(float(*this) - float(o)); }
    half& operator*=(half o) { return *this = half(float(*this) * float(o)); }
    half& operator/=(half o) { return *this = half(float(*this) / float(o)); }
    half operator-() const { return half(static_cast<uint16_t>(bits ^ 0x8000), true); }
};

struct bfloat16_t {
    uint16_t bits;
    bfloat16_t() = default;
    constexpr explicit bfloat16_t(uint16_t raw, bool) : bits(raw) {}
    template <class U, class = typename std::enable_if<std::is_arithmetic<U>::value>::type>
    bfloat16_t(U v) : bits(evk_twin::float_to_bf16_bits(static_cast<float>(v))) {}
    bfloat16_t(half v) : bits(evk_twin::float_to_bf16_bits(float(v))) {}
    operator float() const { return evk_twin::bf16_bits_to_float(bits); }
    bfloat16_t& operator+=(bfloat16_t o) { return *this = bfloat16_t(float(*this) + float(o)); }
    bfloat16_t& operator-=(bfloat16_t o) { return *this = bfloat16_t(float(*this) - float(o)); }
    bfloat16_t& operator*=(bfloat16_t o) { return *this = bfloat16_t(float(*this) * float(o)); }
    bfloat16_t operator-() const { return bfloat16_t(static_cast<uint16_t>(bits ^ 0x8000), true); }
};

inline half::half(bfloat16_t v) : bits(evk_twin::float_to_half_bits(float(v))) {}

static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "16-bit float types are 2 bytes");

namespace evk_twin {
// Arithmetic view of an element: float for the 16-bit types, the type itself otherwise.
template <class T>
struct Calc {
    using type = T;
};
template <>
struct Calc<half> {
    using type = float;
};
template <>
struct Calc<bfloat16_t> {
    using type = float;
};
template <class T>
using calc_t = typename Calc<T>::type;

template <class T>
constexpr bool is_float_like = std::is_floating_point<T>::value || std::is_same<T, half>::value ||
                               std::is_same<T, bfloat16_t>::value;
}  // namespace evk_twin
