// EvoKernel Ascend C twin: the direct-launch form, a program that launches its own kernels.
//
// The launches themselves (`<<<>>>`, ACLRT_LAUNCH_KERNEL, rewritten by the backend) are
// twin_launch.h's DirectLaunch. The program's host entry is a torch_npu extension's operator
// (twin_torch_ext.h): the backend's glue runs the module's first operator with the task's
// tensors and scalars and copies the tensor it returns into the task's output. Included by the
// backend only.
#pragma once

#include "twin_launch.h"  // and the runtime
#include "twin_torch_ext.h"

namespace evk_twin {

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
