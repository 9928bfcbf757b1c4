// EvoKernel Ascend C twin: the direct-launch form, a program that launches its own kernels.
//
// CANN's compiler accepts `kernel<<<blockDim, l2ctrl, stream>>>(args...)` in host code (and a
// kernel launch project's `ACLRT_LAUNCH_KERNEL(kernel)(blockDim, stream, args...)`); g++ does
// not, so the npu-twin backend rewrites each such launch, on its own line, into
// `::evk_twin::DirectLaunch(blockDim, [&]() { kernel(args...); });` before compiling. The kernel
// may take any arguments (scalars, a template's type) since the program calls it. A launch
// runs its blocks as every launch does (twin_blocks.h); a fault stops the whole program,
// as an exception on a device stops the stream. A direct launch has no framework: no system
// workspace is set (a kernel that needs one calls SetSysWorkspace).
//
// The program's host entry is a torch_npu extension's operator (twin_torch_ext.h): the
// backend's glue runs the module's first operator with the task's tensors and scalars and
// copies the tensor it returns into the task's output. Included by the backend only.
#pragma once

#include "twin_runtime.h"
#include "twin_torch_ext.h"

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

// Runs the module's first operator on the task's tensors (inputs, then outputs) and scalars;
// a returned tensor is copied into the task's first output. 0, or 1 after a fault, 2 after an
// exception (its words in the fault line, as evk_twin_fault() reports it).
inline uint32_t run_direct_program(torch_ext::Call call, const torch::Tensor& output) {
    State& s = state();
    pybind11::module_ module;
    try {
        evk_twin_torch_module(module);
        if (module.operators.empty()) throw std::runtime_error("PYBIND11_MODULE defines no operator (m.def)");
        direct_launches() = 0;
        s.earlier = {};
        const torch::Tensor result = module.operators.front().run(call);
        if (direct_launches() == 0) {
            throw std::runtime_error(torch_ext::words("operator '", module.operators.front().name,
                                                      "' launched no kernel (<<<>>>): host code cannot compute on "
                                                      "device tensors"));
        }
        if (result.defined() && result.data_ptr() != output.data_ptr()) {
            if (result.nbytes() != output.nbytes() || result.scalar_type() != output.scalar_type()) {
                throw std::runtime_error(torch_ext::words(
                    "operator '", module.operators.front().name, "' returned ", result.numel(), " elements of ",
                    result.element_size(), " bytes; the task's output has ", output.numel(), " of ", output.element_size()));
            }
            std::memcpy(output.data_ptr(), result.data_ptr(), output.nbytes());
        }
        return 0;
    } catch (const DirectLaunchFailed& failed) {
        return failed.status;  // the launch left its fault line
    } catch (const Fault& f) {
        s.fault = f.line + " (in the host program)";
        return 1;
    } catch (const std::exception& e) {
        s.fault = std::string("the host program threw: ") + e.what();
        return 2;
    }
}

}  // namespace evk_twin
