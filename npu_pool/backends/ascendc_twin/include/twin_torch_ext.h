// EvoKernel Ascend C twin: the host side of a direct-launch program written as a torch_npu C++
// extension (the form MultiKernelBench's direct-launch operators take): the few torch, c10,
// c10_npu and pybind11 names such host code uses to read its tensors' shapes, allocate an
// output, get the stream and register the operator. Written from the public PyTorch extension
// documentation; no torch or CANN header is used. Tensors live in host memory (the twin's
// global memory); an allocated tensor is registered with the twin as a writable region, filled
// with 0xFF bytes (NaN for floats), so a kernel that skips elements is caught.
//
// `PYBIND11_MODULE(name, m) { m.def("op", &fn, ...); }` (a function or a lambda) defines evk_twin_torch_module(m):
// the npu-twin backend runs the module's first operator (twin_direct.h) with the task's tensors.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "twin_half.h"

extern "C" void evk_twin_register(const void* ptr, uint64_t bytes, const char* name, int writable);

namespace c10 {
enum class ScalarType : int8_t { Byte, Char, Short, Int, Long, Half, Float, Double, Bool, BFloat16 };
enum class DeviceType : int8_t { CPU, PrivateUse1 };
struct Device {
    DeviceType type_ = DeviceType::PrivateUse1;  // "npu": torch_npu's device
    int index_ = 0;
    DeviceType type() const { return type_; }
    int index() const { return index_; }
};
struct OptionalDeviceGuard {  // one device in the twin: nothing to switch
    OptionalDeviceGuard() = default;
    explicit OptionalDeviceGuard(Device) {}
};
inline size_t elementSize(ScalarType t) {
    switch (t) {
        case ScalarType::Byte: case ScalarType::Char: case ScalarType::Bool: return 1;
        case ScalarType::Short: case ScalarType::Half: case ScalarType::BFloat16: return 2;
        case ScalarType::Int: case ScalarType::Float: return 4;
        default: return 8;
    }
}
}  // namespace c10

namespace torch {
using ScalarType = c10::ScalarType;
using Device = c10::Device;
constexpr ScalarType kUInt8 = ScalarType::Byte, kInt8 = ScalarType::Char, kInt16 = ScalarType::Short,
                     kInt32 = ScalarType::Int, kInt = ScalarType::Int, kInt64 = ScalarType::Long,
                     kLong = ScalarType::Long, kFloat16 = ScalarType::Half, kHalf = ScalarType::Half,
                     kFloat32 = ScalarType::Float, kFloat = ScalarType::Float, kFloat64 = ScalarType::Double,
                     kDouble = ScalarType::Double, kBool = ScalarType::Bool, kBFloat16 = ScalarType::BFloat16;

struct TensorOptions {
    ScalarType dtype_ = kFloat32;
    TensorOptions dtype(ScalarType t) const { return TensorOptions{t}; }
    TensorOptions device(Device) const { return *this; }
};

class Tensor {
public:
    Tensor() = default;
    // a tensor the harness gave (not owned) or one the program allocated (owned)
    static Tensor borrowed(void* data, std::vector<int64_t> sizes, ScalarType dtype) {
        Tensor t;
        t.data_ = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(data), [](uint8_t*) {});
        t.sizes_ = std::move(sizes);
        t.dtype_ = dtype;
        return t;
    }
    static Tensor allocated(std::vector<int64_t> sizes, ScalarType dtype) {
        Tensor t;
        t.sizes_ = std::move(sizes);
        t.dtype_ = dtype;
        const size_t bytes = t.nbytes() ? t.nbytes() : 1;
        t.data_ = std::shared_ptr<uint8_t>(new uint8_t[bytes], std::default_delete<uint8_t[]>());
        std::memset(t.data_.get(), 0xFF, bytes);
        evk_twin_register(t.data_.get(), bytes, "allocated by the host program", 1);
        return t;
    }
    int64_t numel() const {
        int64_t n = 1;
        for (int64_t s : sizes_) n *= s;
        return n;
    }
    int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
    int64_t size(int64_t d) const { return sizes_.at(static_cast<size_t>(d < 0 ? d + dim() : d)); }
    const std::vector<int64_t>& sizes() const { return sizes_; }
    ScalarType scalar_type() const { return dtype_; }
    ScalarType dtype() const { return dtype_; }
    TensorOptions options() const { return TensorOptions{dtype_}; }
    Device device() const { return Device{}; }
    size_t element_size() const { return c10::elementSize(dtype_); }
    size_t itemsize() const { return element_size(); }
    size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
    bool is_contiguous() const { return true; }
    bool defined() const { return data_ != nullptr; }
    Tensor contiguous() const { return *this; }
    void* data_ptr() const { return data_.get(); }
    template <class T>
    T* data_ptr() const { return reinterpret_cast<T*>(data_.get()); }

private:
    std::shared_ptr<uint8_t> data_;
    std::vector<int64_t> sizes_;
    ScalarType dtype_ = kFloat32;
};

inline Tensor empty_like(const Tensor& t) { return Tensor::allocated(t.sizes(), t.scalar_type()); }
inline Tensor empty_like(const Tensor& t, const TensorOptions& o) { return Tensor::allocated(t.sizes(), o.dtype_); }
inline Tensor empty(std::vector<int64_t> sizes, const TensorOptions& o = {}) { return Tensor::allocated(std::move(sizes), o.dtype_); }
}  // namespace torch

namespace at {
using torch::Tensor;
using torch::ScalarType;
}  // namespace at

namespace c10_npu {
struct NPUStream {
    void* stream(bool = true) const { return nullptr; }  // the twin runs launches itself
};
inline NPUStream getCurrentNPUStream(int = -1) { return {}; }
}  // namespace c10_npu

namespace evk_twin::torch_ext {
template <class... Parts>
std::string words(const Parts&... parts) {
    std::ostringstream out;
    ((out << parts), ...);
    return out.str();
}

// What the backend passes an operator: the task's tensors (inputs, then outputs) and scalars.
struct Call {
    std::vector<torch::Tensor> tensors;
    std::vector<double> scalars;
    size_t next_tensor = 0, next_scalar = 0;
    template <class P>
    std::decay_t<P> take() {
        using D = std::decay_t<P>;
        if constexpr (std::is_same_v<D, torch::Tensor>) {
            if (next_tensor >= tensors.size()) throw std::runtime_error("the operator takes more tensors than the task has");
            return tensors[next_tensor++];
        } else {
            static_assert(std::is_arithmetic_v<D>, "an operator's parameters are tensors and numbers");
            if (next_scalar >= scalars.size()) throw std::runtime_error("the operator takes more numbers than the task's scalars");
            return static_cast<D>(scalars[next_scalar++]);
        }
    }
};

struct Operator {
    std::string name;
    std::function<torch::Tensor(Call&)> run;  // an undefined Tensor: the operator returned nothing
};

// FN called as R(Args...) with the task's tensors and scalars, in the parameters' order.
template <class R, class... Args, class F>
Operator operator_of(const char* name, F fn) {
    return Operator{name, [fn](Call& call) mutable {
        std::tuple<std::decay_t<Args>...> args{call.take<Args>()...};  // braces: left to right
        if constexpr (std::is_void_v<R>) {
            std::apply(fn, args);
            return torch::Tensor();
        } else {
            static_assert(std::is_same_v<std::decay_t<R>, torch::Tensor>, "an operator returns a tensor or nothing");
            return std::apply(fn, args);
        }
    }};
}

template <class R, class... Args>
Operator make_operator(const char* name, R (*fn)(Args...)) {
    return operator_of<R, Args...>(name, fn);
}

// A lambda or another function object (pybind11 takes them as m.def's operator too): the
// signature of its call operator.
template <class F, class C, class R, class... Args>
Operator from_call_operator(const char* name, F fn, R (C::*)(Args...) const) {
    return operator_of<R, Args...>(name, fn);
}
template <class F, class C, class R, class... Args>
Operator from_call_operator(const char* name, F fn, R (C::*)(Args...)) {
    return operator_of<R, Args...>(name, fn);
}
template <class F, class = decltype(&F::operator())>
Operator make_operator(const char* name, F fn) {
    return from_call_operator(name, fn, &F::operator());
}
}  // namespace evk_twin::torch_ext

namespace pybind11 {
struct arg {  // py::arg("x") names a parameter; the twin passes them in order
    explicit arg(const char*) {}
};
class module_ {
public:
    template <class F, class... Extra>
    module_& def(const char* name, F fn, const Extra&...) {
        operators.push_back(evk_twin::torch_ext::make_operator(name, fn));
        return *this;
    }
    std::string& doc() { return doc_; }
    std::vector<evk_twin::torch_ext::Operator> operators;

private:
    std::string doc_;
};
}  // namespace pybind11
namespace py = pybind11;

#define TORCH_CHECK(cond, ...)                                                                       \
    do {                                                                                             \
        if (!(cond)) throw std::runtime_error(evk_twin::torch_ext::words("TORCH_CHECK(" #cond ") failed: ", ##__VA_ARGS__)); \
    } while (0)
#define TORCH_EXTENSION_NAME evokernel_twin_ops
// The module's body becomes a function the backend calls to collect its operators.
#define PYBIND11_MODULE(name, m) void evk_twin_torch_module(pybind11::module_& m)
void evk_twin_torch_module(pybind11::module_& m);
