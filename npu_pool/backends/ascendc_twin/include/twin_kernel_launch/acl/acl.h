// EvoKernel Ascend C twin: the ACL runtime calls of a kernel launch project's host program.
//
// CANN's kernel launch samples (and `evokernel export --layout cann`) write a host `main` that
// opens a device and stream, copies its inputs into device memory, launches with
// ACLRT_LAUNCH_KERNEL and copies the outputs back. On the twin, device memory is host memory
// registered with the twin (so the kernel's accesses to it are checked as global memory), a
// stream runs each launch at once (twin_launch.h), and aclInit configures the twin as the
// project's build would: the SoC (EVK_TWIN_SOC) and the compiler's automatic synchronisation
// (EVK_TWIN_CCE_AUTO_SYNC: 0 for --cce-auto-sync=off), which the runner (project.py) reads from
// the project's CMakeLists. Written from the public ACL documentation; only what such a host
// program uses. Include it in the program's one host unit: it brings the twin's runtime. Only
// the project runner's include path reaches it (a candidate naming twin_kernel_launch/ is
// refused by the anti-hack gate's twin_ rule).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernel_operator.h"
#include "twin_launch.h"

#ifndef EVK_TWIN_SOC
#define EVK_TWIN_SOC "Ascend910B1"
#endif
#ifndef EVK_TWIN_CCE_AUTO_SYNC
#define EVK_TWIN_CCE_AUTO_SYNC 1
#endif

using aclError = int;
using aclrtStream = void*;
using aclrtContext = void*;
constexpr aclError ACL_SUCCESS = 0;
constexpr aclError ACL_ERROR_INVALID_PARAM = 100000;
constexpr aclError ACL_ERROR_BAD_ALLOC = 200000;

enum aclrtMemMallocPolicy { ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY };
enum aclrtMemcpyKind { ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST,
                       ACL_MEMCPY_DEVICE_TO_DEVICE };

namespace evk_twin {
inline int& acl_buffers() {  // device buffers handed out, for their names in fault lines
    static int count = 0;
    return count;
}
inline void acl_forget(void* p) {
    auto& regions = state().regions;
    for (auto it = regions.begin(); it != regions.end(); ++it) {
        if (it->begin == reinterpret_cast<uintptr_t>(p)) {
            regions.erase(it);
            return;
        }
    }
}
}  // namespace evk_twin

inline aclError aclInit(const char* /*config*/) {
    evk_twin_reset();
    evk_twin_configure(0, 0, EVK_TWIN_SOC);
    evk_twin_set_auto_sync(EVK_TWIN_CCE_AUTO_SYNC);
    return ACL_SUCCESS;
}
inline aclError aclFinalize() { return ACL_SUCCESS; }
inline aclError aclrtSetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtResetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtCreateContext(aclrtContext* context, int32_t) {
    *context = nullptr;
    return ACL_SUCCESS;
}
inline aclError aclrtDestroyContext(aclrtContext) { return ACL_SUCCESS; }
inline aclError aclrtCreateStream(aclrtStream* stream) {
    *stream = nullptr;  // the twin runs a launch at once
    return ACL_SUCCESS;
}
inline aclError aclrtDestroyStream(aclrtStream) { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeStream(aclrtStream) { return ACL_SUCCESS; }
inline const char* aclGetRecentErrMsg() { return evk_twin_fault(); }

// Device memory: 64-byte aligned host memory the kernel's global-memory checks know (writable,
// as a device's is), named "device buffer <n>" in fault lines.
inline aclError aclrtMalloc(void** p, size_t size, aclrtMemMallocPolicy) {
    const size_t bytes = (size + 63) / 64 * 64;
    *p = std::aligned_alloc(64, bytes ? bytes : 64);
    if (*p == nullptr) return ACL_ERROR_BAD_ALLOC;
    const std::string name = "device buffer " + std::to_string(evk_twin::acl_buffers()++);
    evk_twin_register(*p, size, name.c_str(), 1);
    return ACL_SUCCESS;
}
inline aclError aclrtFree(void* p) {
    evk_twin::acl_forget(p);
    std::free(p);
    return ACL_SUCCESS;
}
inline aclError aclrtMallocHost(void** p, size_t size) {
    *p = std::malloc(size ? size : 1);
    return *p ? ACL_SUCCESS : ACL_ERROR_BAD_ALLOC;
}
inline aclError aclrtFreeHost(void* p) {
    std::free(p);
    return ACL_SUCCESS;
}
inline aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind) {
    if (count > destMax) return ACL_ERROR_INVALID_PARAM;
    std::memcpy(dst, src, count);
    return ACL_SUCCESS;
}
inline aclError aclrtMemset(void* dst, size_t destMax, int32_t value, size_t count) {
    if (count > destMax) return ACL_ERROR_INVALID_PARAM;
    std::memset(dst, value, count);
    return ACL_SUCCESS;
}
