// EvoKernel Ascend C twin: the cube unit through the high-level Matmul API.
//
// C[m x n] = A[m x k] @ B[k x n] (+ bias[n]) for one core's share, described by a TCubeTiling
// (M, N, Ka, Kb: the whole matrices' shapes, row strides of A, B and C; singleCoreM/N/K: this
// core's share, SetTail for a shorter last share; baseM/N/K: the block the cube computes per
// Iterate). Products accumulate in float (like L0C) and round once to C's type. The tiling is
// checked against the SoC's L0A/L0B/L0C sizes, and every global access against the registered
// regions. Kernels include "lib/matmul_intf.h", as with the toolkit.
#pragma once

#include "kernel_operator.h"

namespace AscendC {

enum class LayoutMode : uint8_t { NONE = 0, BSNGD, SBNGD, BNGS1S2, NORMAL };
enum class IterateOrder : uint8_t { ORDER_M = 0, ORDER_N, UNDEF };

struct MatmulConfig {
    bool doNorm = true;
    bool doMultiDataLoad = false;
};
inline constexpr MatmulConfig CFG_NORM{true, false};
inline constexpr MatmulConfig CFG_MDL{false, true};

}  // namespace AscendC

// Global, as in the toolkit: `matmul::Matmul<...>`, `using namespace matmul;` and, through the
// using-declarations at the end, `AscendC::Matmul` all name the same class.
namespace matmul {

using namespace AscendC;
using AscendC::CubeFormat;
using AscendC::LayoutMode;
using AscendC::CFG_NORM;
using AscendC::CFG_MDL;
using AscendC::MatmulConfig;

template <TPosition POSITION, CubeFormat FORMAT, class TYPE, bool ISTRANS = false, LayoutMode LAYOUT = LayoutMode::NONE,
          bool IBSHARE = false>
struct MatmulType {
    using T = TYPE;
    static constexpr TPosition pos = POSITION;
    static constexpr CubeFormat format = FORMAT;
    static constexpr bool isTrans = ISTRANS;
};

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = C_TYPE, const auto& MM_CFG = CFG_NORM,
          class... Rest>
class Matmul {
    using A = typename A_TYPE::T;
    using B = typename B_TYPE::T;
    using C = typename C_TYPE::T;
    using Bias = typename BIAS_TYPE::T;
    static_assert(A_TYPE::format == CubeFormat::ND && B_TYPE::format == CubeFormat::ND && C_TYPE::format == CubeFormat::ND,
                  "Matmul: only CubeFormat::ND is in the EvoKernel twin");

public:
    void Init(const TCubeTiling* tiling, TPipe* = nullptr, evk_twin::Src s = {}) {
        if (!tiling) evk_twin::fault("matmul-tiling", "Matmul::Init", s, "no TCubeTiling");
        t_ = *tiling;
        const auto& soc = evk_twin::state().soc;
        auto bad = [&](bool cond, const std::string& why) {
            if (cond) evk_twin::fault("matmul-tiling", "Matmul::Init", s, why);
        };
        bad(t_.M <= 0 || t_.N <= 0 || t_.Ka <= 0 || t_.Kb <= 0, "M, N, Ka and Kb must be positive");
        bad(t_.Ka != t_.Kb, "Ka and Kb differ");
        bad(t_.singleCoreM <= 0 || t_.singleCoreN <= 0 || t_.singleCoreK <= 0, "singleCoreM/N/K must be positive");
        bad(t_.singleCoreM > t_.M || t_.singleCoreN > t_.N || t_.singleCoreK > t_.Ka, "singleCore shape exceeds M/N/K");
        bad(t_.baseM <= 0 || t_.baseN <= 0 || t_.baseK <= 0 || t_.baseM % 16 || t_.baseN % 16 ||
                (t_.baseK * int32_t(sizeof(A))) % 32,
            "baseM and baseN must be positive multiples of 16, baseK * sizeof(A) a multiple of 32");
        const uint64_t l0a = uint64_t(t_.baseM) * t_.baseK * sizeof(A) * (t_.dbL0A > 1 ? 2 : 1);
        const uint64_t l0b = uint64_t(t_.baseK) * t_.baseN * sizeof(B) * (t_.dbL0B > 1 ? 2 : 1);
        const uint64_t l0c = uint64_t(t_.baseM) * t_.baseN * sizeof(float) * (t_.dbL0C > 1 ? 2 : 1);
        bad(l0a > soc.l0a_bytes, "baseM * baseK tile (" + std::to_string(l0a) + " bytes) exceeds L0A (" +
                                     std::to_string(soc.l0a_bytes) + ")");
        bad(l0b > soc.l0b_bytes, "baseK * baseN tile (" + std::to_string(l0b) + " bytes) exceeds L0B (" +
                                     std::to_string(soc.l0b_bytes) + ")");
        bad(l0c > soc.l0c_bytes, "baseM * baseN float accumulator (" + std::to_string(l0c) + " bytes) exceeds L0C (" +
                                     std::to_string(soc.l0c_bytes) + ")");
        orgM_ = t_.M;
        orgN_ = t_.N;
        orgKa_ = t_.Ka;
        orgKb_ = t_.Kb;
        SetTail();
        ready_ = true;
    }
    void SetOrgShape(int orgM, int orgN, int orgK) { SetOrgShape(orgM, orgN, orgK, orgK); }
    void SetOrgShape(int orgM, int orgN, int orgKa, int orgKb, int = 0) {
        orgM_ = orgM;
        orgN_ = orgN;
        orgKa_ = orgKa;
        orgKb_ = orgKb;
    }
    void SetSingleShape(int m, int n, int k) {
        m_ = m;
        n_ = n;
        k_ = k;
    }
    void SetTail(int tailM = -1, int tailN = -1, int tailK = -1) {
        m_ = tailM > 0 ? tailM : t_.singleCoreM;
        n_ = tailN > 0 ? tailN : t_.singleCoreN;
        k_ = tailK > 0 ? tailK : t_.singleCoreK;
    }
    void SetTensorA(const GlobalTensor<A>& gm, bool isTransposeA = false) {
        a_ = gm.GetPhyAddr();
        transA_ = isTransposeA || A_TYPE::isTrans;
    }
    void SetTensorB(const GlobalTensor<B>& gm, bool isTransposeB = false) {
        b_ = gm.GetPhyAddr();
        transB_ = isTransposeB || B_TYPE::isTrans;
    }
    void SetBias(const GlobalTensor<Bias>& gm) { bias_ = gm.GetPhyAddr(); }
    void ClearBias() { bias_ = nullptr; }
    template <class U>
    void SetLocalWorkspace(const LocalTensor<U>&) {}

    void IterateAll(const GlobalTensor<C>& gm, uint8_t enAtomic = 0, bool = false, bool = false, bool = false,
                    evk_twin::Src s = {}) {
        require(s, "Matmul::IterateAll");
        compute(0, 0, m_, n_, s, "Matmul::IterateAll");
        store(gm.GetPhyAddr(), 0, 0, m_, n_, orgN_, enAtomic, s, "Matmul::IterateAll");
        iter_ = -1;
    }

    template <bool sync = true>
    bool Iterate(bool enPartialSum = false, evk_twin::Src s = {}) {
        (void)enPartialSum;
        require(s, "Matmul::Iterate");
        const int mIter = (m_ + t_.baseM - 1) / t_.baseM, nIter = (n_ + t_.baseN - 1) / t_.baseN;
        if (++iter_ >= mIter * nIter) {
            iter_ = -1;
            return false;
        }
        if (t_.iterateOrder == 1) {  // ORDER_N: along N first
            mi_ = iter_ / nIter;
            ni_ = iter_ % nIter;
        } else {  // ORDER_M: along M first
            mi_ = iter_ % mIter;
            ni_ = iter_ / mIter;
        }
        rows_ = std::min(t_.baseM, m_ - mi_ * t_.baseM);
        cols_ = std::min(t_.baseN, n_ - ni_ * t_.baseN);
        compute(mi_ * t_.baseM, ni_ * t_.baseN, rows_, cols_, s, "Matmul::Iterate");
        return true;
    }

    template <bool sync = true>
    void GetTensorC(const GlobalTensor<C>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false, evk_twin::Src s = {}) {
        require_block(s);
        if (enSequentialWrite) store(gm.GetPhyAddr(), 0, 0, rows_, cols_, cols_, enAtomic, s, "Matmul::GetTensorC");
        else store(gm.GetPhyAddr(), mi_ * t_.baseM, ni_ * t_.baseN, rows_, cols_, orgN_, enAtomic, s, "Matmul::GetTensorC");
    }

    // Into the Unified Buffer: the block as baseM rows of baseN elements (row pitch baseN).
    template <bool sync = true>
    void GetTensorC(const LocalTensor<C>& ub, uint8_t enAtomic = 0, bool = false, evk_twin::Src s = {}) {
        require_block(s);
        ub.check_w(uint64_t(t_.baseM) * t_.baseN, "Matmul::GetTensorC", s);
        for (int i = 0; i < rows_; ++i)
            for (int j = 0; j < cols_; ++j) {
                C& out = ub.data()[i * t_.baseN + j];
                const float v = acc_[size_t(i) * cols_ + j];
                out = enAtomic ? static_cast<C>(static_cast<float>(out) + v) : static_cast<C>(v);
            }
        evk_twin::state().counters.ub_to_ub += uint64_t(rows_) * cols_ * sizeof(C);
    }

    void End() { iter_ = -1; }

private:
    void require(evk_twin::Src s, const char* api) const {
        if (!ready_) evk_twin::fault("matmul-tiling", api, s, "Matmul used before Init / REGIST_MATMUL_OBJ with a tiling");
        if (!a_ || !b_) evk_twin::fault("matmul-tiling", api, s, "SetTensorA and SetTensorB first");
        if (m_ > t_.singleCoreM || n_ > t_.singleCoreN || k_ > t_.singleCoreK) {
            evk_twin::fault("matmul-tiling", api, s, "tail/single shape larger than singleCoreM/N/K");
        }
    }
    void require_block(evk_twin::Src s) const {
        if (iter_ < 0) evk_twin::fault("matmul-tiling", "Matmul::GetTensorC", s, "GetTensorC without a successful Iterate");
    }
    // acc_ = A[r0:r0+rows, :k] @ B[:k, c0:c0+cols] (+ bias), in float.
    void compute(int r0, int c0, int rows, int cols, evk_twin::Src s, const char* api) {
        acc_.assign(size_t(rows) * cols, 0.0f);
        // the reads, checked row by row (or column run by column run when transposed)
        for (int i = 0; i < rows; ++i) {
            if (!transA_) evk_twin::check_gm(a_ + uint64_t(r0 + i) * orgKa_, uint64_t(k_) * sizeof(A), false, api, s);
        }
        for (int kk = 0; kk < k_; ++kk) {
            if (transA_) evk_twin::check_gm(a_ + uint64_t(kk) * orgM_ + r0, uint64_t(rows) * sizeof(A), false, api, s);
            if (!transB_) evk_twin::check_gm(b_ + uint64_t(kk) * orgN_ + c0, uint64_t(cols) * sizeof(B), false, api, s);
        }
        for (int j = 0; j < cols && transB_; ++j)
            evk_twin::check_gm(b_ + uint64_t(c0 + j) * orgKb_, uint64_t(k_) * sizeof(B), false, api, s);
        if (bias_) evk_twin::check_gm(bias_ + c0, uint64_t(cols) * sizeof(Bias), false, api, s);
        std::vector<float> brow(cols);
        evk_twin::TrustedGm checked;  // A, B and bias read as checked above (twin_raw_gm.h)
        for (int kk = 0; kk < k_; ++kk) {
            for (int j = 0; j < cols; ++j)
                brow[j] = static_cast<float>(transB_ ? b_[uint64_t(c0 + j) * orgKb_ + kk] : b_[uint64_t(kk) * orgN_ + c0 + j]);
            for (int i = 0; i < rows; ++i) {
                const float a = static_cast<float>(transA_ ? a_[uint64_t(kk) * orgM_ + r0 + i] : a_[uint64_t(r0 + i) * orgKa_ + kk]);
                float* out = &acc_[size_t(i) * cols];
                for (int j = 0; j < cols; ++j) out[j] += a * brow[j];
            }
        }
        if (bias_)
            for (int i = 0; i < rows; ++i)
                for (int j = 0; j < cols; ++j) acc_[size_t(i) * cols + j] += static_cast<float>(bias_[c0 + j]);
        // cost: multiply-accumulates on 16-aligned shapes; operands staged GM -> L1
        auto up16 = [](int v) { return uint64_t((v + 15) / 16 * 16); };
        const uint64_t macs = up16(rows) * up16(cols) * up16(k_);
        auto& c = evk_twin::state().counters;
        (sizeof(A) == 2 ? c.cube_macs_16 : c.cube_macs_32) += macs;
        const uint64_t a_loads = (cols + uint64_t(t_.baseN) * std::max(1, t_.stepN) - 1) / (uint64_t(t_.baseN) * std::max(1, t_.stepN));
        const uint64_t b_loads = (rows + uint64_t(t_.baseM) * std::max(1, t_.stepM) - 1) / (uint64_t(t_.baseM) * std::max(1, t_.stepM));
        c.gm_to_l1 += uint64_t(rows) * k_ * sizeof(A) * a_loads + uint64_t(k_) * cols * sizeof(B) * b_loads;
        c.copies_in += 2;
    }
    void store(C* dst, int r0, int c0, int rows, int cols, int pitch, uint8_t enAtomic, evk_twin::Src s, const char* api) {
        const bool atomic = enAtomic || evk_twin::state().atomic_add;
        evk_twin::TrustedGm checked;  // each row checked before it is written (twin_raw_gm.h)
        for (int i = 0; i < rows; ++i) {
            C* row = dst + uint64_t(r0 + i) * pitch + c0;
            evk_twin::check_gm(row, uint64_t(cols) * sizeof(C), true, api, s, evk_twin::kPipeFIX);
            for (int j = 0; j < cols; ++j) {
                const float v = acc_[size_t(i) * cols + j];
                row[j] = atomic ? static_cast<C>(static_cast<float>(row[j]) + v) : static_cast<C>(v);
            }
        }
        auto& c = evk_twin::state().counters;
        c.ub_to_gm += uint64_t(rows) * cols * sizeof(C);
        ++c.copies_out;
    }

    TCubeTiling t_{};
    bool ready_ = false;
    int orgM_ = 0, orgN_ = 0, orgKa_ = 0, orgKb_ = 0, m_ = 0, n_ = 0, k_ = 0;
    const A* a_ = nullptr;
    const B* b_ = nullptr;
    const Bias* bias_ = nullptr;
    bool transA_ = false, transB_ = false;
    int iter_ = -1, mi_ = 0, ni_ = 0, rows_ = 0, cols_ = 0;
    std::vector<float> acc_;
};

}  // namespace matmul

namespace AscendC {
using ::matmul::Matmul;
using ::matmul::MatmulType;
}  // namespace AscendC

namespace evk_twin {
inline void regist_matmul(Src, AscendC::TPipe*, GM_ADDR) {}
template <class MM>
inline void regist_matmul(Src, AscendC::TPipe*, GM_ADDR, MM&) {}
template <class MM, class... Rest>
inline void regist_matmul(Src s, AscendC::TPipe* pipe, GM_ADDR ws, MM& mm, const AscendC::TCubeTiling* tiling,
                          Rest&&... rest) {
    if (tiling) mm.Init(tiling, pipe, s);
    regist_matmul(s, pipe, ws, rest...);
}
inline void require_workspace(GM_ADDR ws, Src s) {
    if (!ws) {
        fault("matmul-workspace", "REGIST_MATMUL_OBJ", s,
              "no system workspace: call SetSysWorkspace(workspace) and pass GetSysWorkSpacePtr()");
    }
}
}  // namespace evk_twin

#define REGIST_MATMUL_OBJ(tpipe, workspace, ...)                            \
    do {                                                                    \
        const evk_twin::Src evk_regist_src_;                                \
        evk_twin::require_workspace((workspace), evk_regist_src_);          \
        evk_twin::regist_matmul(evk_regist_src_, (tpipe), (workspace), __VA_ARGS__); \
    } while (0)
