// EvoKernel Ascend C twin: data movement between global memory and the Unified Buffer.
//
// DataCopy moves whole 32-byte blocks, like the device's copy engines: the count form moves
// floor(count * sizeof(T) / 32) blocks and silently leaves a shorter tail behind (recorded in
// the profile's notes, never a fault, so a kernel that relies on it fails correctness as it
// would on an NPU). DataCopyPad moves exact byte lengths and pads each block to 32 bytes in UB.
#pragma once

#include "twin_pipe.h"

namespace AscendC {

struct DataCopyParams {
    DataCopyParams() {}
    DataCopyParams(uint16_t count, uint16_t len, uint16_t srcStrideIn, uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
    uint16_t blockCount = 1;  // number of blocks (bursts)
    uint16_t blockLen = 0;    // DataCopy: 32-byte units; DataCopyPad: bytes
    uint16_t srcStride = 0;   // gap between blocks at the source
    uint16_t dstStride = 0;   // gap between blocks at the destination
};

struct DataCopyExtParams {
    DataCopyExtParams() {}
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcStrideIn, uint32_t dstStrideIn, uint32_t rsvIn = 0)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;   // bytes
    uint32_t srcStride = 0;  // bytes on the GM side, 32-byte blocks on the UB side
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};

template <class T>
struct DataCopyPadExtParams {
    DataCopyPadExtParams() {}
    DataCopyPadExtParams(bool isPadIn, uint8_t left, uint8_t right, T value)
        : isPad(isPadIn), leftPadding(left), rightPadding(right), paddingValue(value) {}
    bool isPad = false;
    uint8_t leftPadding = 0;   // elements
    uint8_t rightPadding = 0;  // elements
    T paddingValue = T(0);
};

struct DataCopyPadParams {
    DataCopyPadParams() {}
    DataCopyPadParams(bool isPadIn, uint8_t left, uint8_t right, uint64_t value)
        : isPad(isPadIn), leftPadding(left), rightPadding(right), paddingValue(value) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
};

}  // namespace AscendC

namespace evk_twin {

// UB -> GM store of `bytes` at `dst`, adding instead of storing while SetAtomicAdd is on.
template <class T>
inline void store_gm(T* dst, const T* src, uint64_t bytes) {
    TrustedGm checked;  // the caller's check_gm covers these bytes (twin_raw_gm.h)
    if (!state().atomic_add) {
        std::memcpy(dst, src, bytes);
        return;
    }
    const uint64_t n = bytes / sizeof(T);
    for (uint64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<calc_t<T>>(dst[i]) + static_cast<calc_t<T>>(src[i]));
}

inline void drop_note(const char* api, Src src, uint64_t bytes) {
    const char* file = src.file ? std::strrchr(src.file, '/') : nullptr;
    note(std::string(api) + " at " + (file ? file + 1 : (src.file ? src.file : "?")) + ":" + std::to_string(src.line) +
         ": " + std::to_string(bytes % 32) + "-byte tail not copied (DataCopy moves whole 32-byte blocks; use DataCopyPad)");
}

// Strided block copy shared by the DataCopyParams forms: `count` blocks of `len` bytes.
template <class T>
inline void block_copy(uint8_t* dst, const uint8_t* src, uint32_t count, uint64_t len, uint64_t src_gap, uint64_t dst_gap,
                       int direction, const char* api, Src s) {
    for (uint32_t i = 0; i < count; ++i) {
        const uint8_t* from = src + i * (len + src_gap);
        uint8_t* to = dst + i * (len + dst_gap);
        if (direction == 0) {
            check_gm(from, len, false, api, s);
            std::memcpy(to, from, len);
        } else if (direction == 1) {
            check_gm(to, len, true, api, s);
            store_gm(reinterpret_cast<T*>(to), reinterpret_cast<const T*>(from), len);
        } else {
            std::memmove(to, from, len);
        }
    }
}

}  // namespace evk_twin

namespace AscendC {

// --- DataCopy, count form ---------------------------------------------------------------------
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count, evk_twin::Src s = {}) {
    const uint64_t bytes = uint64_t(count) * sizeof(T), moved = bytes / 32 * 32;
    dst.check(moved / sizeof(T), "DataCopy(GM->UB)", s, true, evk_twin::kWriteMTE2);
    if (moved != bytes) evk_twin::drop_note("DataCopy(GM->UB)", s, bytes);
    evk_twin::check_gm(src.GetPhyAddr(), moved, false, "DataCopy(GM->UB)", s);
    std::memcpy(dst.data(), src.GetPhyAddr(), moved);
    auto& c = evk_twin::state().counters;
    c.gm_to_ub += moved;
    ++c.copies_in;
}

template <class T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, evk_twin::Src s = {}) {
    const uint64_t bytes = uint64_t(count) * sizeof(T), moved = bytes / 32 * 32;
    src.check(moved / sizeof(T), "DataCopy(UB->GM)", s, true, evk_twin::kReadMTE3);
    if (moved != bytes) evk_twin::drop_note("DataCopy(UB->GM)", s, bytes);
    evk_twin::check_gm(dst.GetPhyAddr(), moved, true, "DataCopy(UB->GM)", s);
    evk_twin::store_gm(dst.GetPhyAddr(), src.data(), moved);
    auto& c = evk_twin::state().counters;
    c.ub_to_gm += moved;
    ++c.copies_out;
}

template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, evk_twin::Src s = {}) {
    const uint64_t bytes = uint64_t(count) * sizeof(T), moved = bytes / 32 * 32;
    src.check(moved / sizeof(T), "DataCopy(UB->UB)", s);
    dst.check_w(moved / sizeof(T), "DataCopy(UB->UB)", s);
    if (moved != bytes) evk_twin::drop_note("DataCopy(UB->UB)", s, bytes);
    std::memmove(dst.data(), src.data(), moved);
    auto& c = evk_twin::state().counters;
    c.ub_to_ub += moved;
    ++c.copies_local;
}

// --- DataCopy, DataCopyParams form: blockCount blocks of blockLen * 32 bytes, gaps in 32 bytes --
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p, evk_twin::Src s = {}) {
    const uint64_t len = uint64_t(p.blockLen) * 32, dst_gap = uint64_t(p.dstStride) * 32;
    if (p.blockCount == 0 || len == 0) return;
    dst.check(((len + dst_gap) * (p.blockCount - 1) + len) / sizeof(T), "DataCopy(GM->UB)", s, true, evk_twin::kWriteMTE2);
    evk_twin::block_copy<T>(reinterpret_cast<uint8_t*>(dst.data()), reinterpret_cast<const uint8_t*>(src.GetPhyAddr()),
                            p.blockCount, len, uint64_t(p.srcStride) * 32, dst_gap, 0, "DataCopy(GM->UB)", s);
    auto& c = evk_twin::state().counters;
    c.gm_to_ub += len * p.blockCount;
    ++c.copies_in;
}

template <class T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p, evk_twin::Src s = {}) {
    const uint64_t len = uint64_t(p.blockLen) * 32, src_gap = uint64_t(p.srcStride) * 32;
    if (p.blockCount == 0 || len == 0) return;
    src.check(((len + src_gap) * (p.blockCount - 1) + len) / sizeof(T), "DataCopy(UB->GM)", s, true, evk_twin::kReadMTE3);
    evk_twin::block_copy<T>(reinterpret_cast<uint8_t*>(dst.GetPhyAddr()), reinterpret_cast<const uint8_t*>(src.data()),
                            p.blockCount, len, src_gap, uint64_t(p.dstStride) * 32, 1, "DataCopy(UB->GM)", s);
    auto& c = evk_twin::state().counters;
    c.ub_to_gm += len * p.blockCount;
    ++c.copies_out;
}

template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p, evk_twin::Src s = {}) {
    const uint64_t len = uint64_t(p.blockLen) * 32, src_gap = uint64_t(p.srcStride) * 32, dst_gap = uint64_t(p.dstStride) * 32;
    if (p.blockCount == 0 || len == 0) return;
    src.check(((len + src_gap) * (p.blockCount - 1) + len) / sizeof(T), "DataCopy(UB->UB)", s);
    dst.check_w(((len + dst_gap) * (p.blockCount - 1) + len) / sizeof(T), "DataCopy(UB->UB)", s);
    evk_twin::block_copy<T>(reinterpret_cast<uint8_t*>(dst.data()), reinterpret_cast<const uint8_t*>(src.data()),
                            p.blockCount, len, src_gap, dst_gap, 2, "DataCopy(UB->UB)", s);
    auto& c = evk_twin::state().counters;
    c.ub_to_ub += len * p.blockCount;
    ++c.copies_local;
}

// --- DataCopyPad: exact byte lengths; in UB each block starts on a 32-byte boundary ----------
namespace twin_detail {
template <class T>
inline void pad_in(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count, uint64_t len, uint64_t src_gap,
                   uint64_t dst_gap_blocks, bool isPad, uint32_t left, uint32_t right, T value, evk_twin::Src s) {
    const char* api = "DataCopyPad(GM->UB)";
    if (count == 0) return;
    const uint64_t left_b = uint64_t(left) * sizeof(T), right_b = uint64_t(right) * sizeof(T);
    if (left_b > 32 || right_b > 32) {
        evk_twin::fault("invalid-argument", api, s, "leftPadding/rightPadding may pad at most 32 bytes");
    }
    const uint64_t row = (left_b + len + right_b + 31) / 32 * 32;
    const uint64_t pitch = row + dst_gap_blocks * 32;
    // the bytes written: data and padding (the rest of the last 32-byte block is left alone, so a
    // tensor of exactly the copied length, e.g. TBuf::Get<T>(len), is enough)
    dst.check((pitch * (count - 1) + left_b + len + (isPad ? right_b : 0) + sizeof(T) - 1) / sizeof(T), api, s, true,
              evk_twin::kWriteMTE2);
    uint8_t* to = reinterpret_cast<uint8_t*>(dst.data());
    const uint8_t* from = reinterpret_cast<const uint8_t*>(src.GetPhyAddr());
    for (uint32_t i = 0; i < count; ++i) {
        const uint8_t* f = from + i * (len + src_gap);
        uint8_t* t = to + i * pitch;
        evk_twin::check_gm(f, len, false, api, s);
        std::memcpy(t + left_b, f, len);
        if (isPad) {
            T* head = reinterpret_cast<T*>(t);
            for (uint32_t k = 0; k < left; ++k) head[k] = value;
            T* tail = reinterpret_cast<T*>(t + left_b + len);
            for (uint32_t k = 0; k < right; ++k) tail[k] = value;
        }
    }
    auto& c = evk_twin::state().counters;
    c.gm_to_ub += len * count;
    ++c.copies_in;
}

template <class T>
inline void pad_out(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count, uint64_t len,
                    uint64_t src_gap_blocks, uint64_t dst_gap, evk_twin::Src s) {
    const char* api = "DataCopyPad(UB->GM)";
    if (count == 0) return;
    const uint64_t row = (len + 31) / 32 * 32;
    const uint64_t pitch = row + src_gap_blocks * 32;
    src.check((pitch * (count - 1) + len + sizeof(T) - 1) / sizeof(T), api, s, true, evk_twin::kReadMTE3);
    const uint8_t* from = reinterpret_cast<const uint8_t*>(src.data());
    uint8_t* to = reinterpret_cast<uint8_t*>(dst.GetPhyAddr());
    for (uint32_t i = 0; i < count; ++i) {
        uint8_t* t = to + i * (len + dst_gap);
        evk_twin::check_gm(t, len, true, api, s);
        evk_twin::store_gm(reinterpret_cast<T*>(t), reinterpret_cast<const T*>(from + i * pitch), len);
    }
    auto& c = evk_twin::state().counters;
    c.ub_to_gm += len * count;
    ++c.copies_out;
}
}  // namespace twin_detail

template <class T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<T>& pad, evk_twin::Src s = {}) {
    twin_detail::pad_in(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, pad.isPad, pad.leftPadding,
                        pad.rightPadding, pad.paddingValue, s);
}

template <class T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p,
                        evk_twin::Src s = {}) {
    twin_detail::pad_out(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, s);
}

template <class T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                        const DataCopyPadParams& pad, evk_twin::Src s = {}) {
    T value;
    uint64_t raw = pad.paddingValue;
    std::memcpy(&value, &raw, sizeof(T));  // the device reads the low bytes of the 64-bit value
    twin_detail::pad_in(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, pad.isPad, pad.leftPadding,
                        pad.rightPadding, value, s);
}

template <class T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                        evk_twin::Src s = {}) {
    twin_detail::pad_out(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, s);
}

// --- atomic accumulation of UB -> GM copies (several blocks adding into the same output) ----
template <class T>
inline void SetAtomicAdd() {
    evk_twin::state().atomic_add = true;
}
inline void SetAtomicNone() { evk_twin::state().atomic_add = false; }

}  // namespace AscendC
