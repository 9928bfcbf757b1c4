// EvoKernel Ascend C twin: a launch written in host code, `<<<>>>` or ACLRT_LAUNCH_KERNEL.
//
// CANN's compiler accepts `kernel<<<blockDim, l2ctrl, stream>>>(args...)` in host code (and a
// kernel launch project's `ACLRT_LAUNCH_KERNEL(kernel)(blockDim, stream, args...)`); g++ does
// not, so the npu-twin backend (direct.py) rewrites each such launch, on its own line, into
// `::evk_twin::DirectLaunch(blockDim, [&]() { kernel(args...); });` before compiling. A launch
// runs its blocks as every launch does (twin_blocks.h); a fault throws DirectLaunchFailed, whose
// fault line evk_twin_fault() holds. A direct launch has no framework: no system workspace is
// set (a kernel that needs one calls SetSysWorkspace). Used by the direct-launch form
// (twin_direct.h) and by kernel launch projects (acl/acl.h, project.py); it brings the runtime
// (twin_runtime.h), so a program includes it in one unit only.
#pragma once

#include <type_traits>
#include <utility>

#include "twin_runtime.h"  // Launch; so included by a program's one host unit

namespace evk_twin {

struct DirectLaunchFailed {
    uint32_t status;
};

// Launches the running program made (a program whose operator launched nothing computed on
// the host, which a device's host code cannot: its tensors live in device memory).
inline uint32_t& direct_launches() {
    static uint32_t count = 0;
    return count;
}

template <class Fn>
void DirectLaunch(int64_t blockDim, Fn&& body) {
    ++direct_launches();
    const uint32_t blocks = blockDim < 0 || blockDim > 65535 ? 0u : static_cast<uint32_t>(blockDim);
    const uint32_t status = Launch(blocks, std::forward<Fn>(body), nullptr);
    if (status != 0) throw DirectLaunchFailed{status};
    // the next launch's profile costs this one too (twin_runtime.h, build_profile)
    State& s = state();
    s.earlier.count += 1;
    s.earlier.modelled_us += s.last_launch_us;
    s.earlier.total.gm_to_ub += s.last_total.gm_to_ub;
    s.earlier.total.ub_to_gm += s.last_total.ub_to_gm;
    s.earlier.total.ub_to_ub += s.last_total.ub_to_ub;
    s.earlier.total.gm_to_l1 += s.last_total.gm_to_l1;
    s.earlier.total.gm_scalar += s.last_total.gm_scalar;
    for (int k = 0; k < kScalarMathClasses; ++k) s.earlier.total.scalar_math[k] += s.last_total.scalar_math[k];
}

// An argument of ACLRT_LAUNCH_KERNEL(kernel)(blockDim, stream, args...): CANN's generated
// launcher takes void* where the kernel takes GM_ADDR, so a pointer converts to the kernel's.
struct VoidArg {
    void* p;
    template <class T>
    operator T*() const { return static_cast<T*>(p); }
};
template <class A>
decltype(auto) launch_arg(A&& a) {
    if constexpr (std::is_pointer_v<std::decay_t<A>>) {
        return VoidArg{const_cast<void*>(static_cast<const void*>(a))};
    } else {
        return std::forward<A>(a);
    }
}

}  // namespace evk_twin
