"""The trusted `ModelNew` of the kernel-source format: calls a C-ABI entry point via ctypes.

It reads the reference's parameters on every call, allocates fresh outputs filled with NaN
(or the dtype's minimum for integers) so an output the kernel forgets stays visible, and
passes data pointers, scalars and every dimension in the order of the KernelSignature.
Device-agnostic: the CPU backend calls the kernel itself; the CUDA backend reuses it for a
host entry point that launches its kernels on device pointers, appending the current stream
(`extra_args`) and checking the launch (`after_call`).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from npu_pool.tasks.signature import KernelSignature

_CTYPES = {"int64_t": ctypes.c_int64, "double": ctypes.c_double}


def poisoned(shape: list[int], dtype: torch.dtype, device: str) -> torch.Tensor:
    """A fresh tensor whose every element is an obviously wrong value."""
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.ones(shape, dtype=dtype, device=device)
    return torch.full(shape, torch.iinfo(dtype).min, dtype=dtype, device=device)


# Poisoned elements after each output while checked: a kernel that writes past its output's end
# (a size argument ignored, a tail loop one tile too long) changes them and is told so, where
# the write would otherwise land unseen in other memory.
GUARD_ELEMENTS = 256


def _guarded(shape: list[int], dtype: torch.dtype, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(a poisoned output of `shape`, the poisoned guard elements right after it in memory)."""
    numel = int(torch.Size(shape).numel())
    buffer = poisoned([numel + GUARD_ELEMENTS], dtype, device)
    return buffer[:numel].view(shape), buffer[numel:]


def still_poisoned(guard: torch.Tensor) -> bool:
    if guard.dtype.is_floating_point:
        return bool(torch.isnan(guard).all())
    return bool((guard == poisoned([1], guard.dtype, "cpu").to(guard.device)).all())


def load_entry(artifact: Path, signature: KernelSignature, extra_argtypes: Sequence[Any] = ()) -> Any:
    """The entry point of a shared library, with its argument types set (`extra_argtypes`:
    ctypes of parameters a backend appends after the signature's, e.g. a stream)."""
    lib = ctypes.CDLL(str(artifact))
    fn = getattr(lib, signature.function)
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p if "*" in a.ctype else _CTYPES[a.ctype] for a in signature.args] + list(extra_argtypes)
    fn._evokernel_lib = lib  # keep the library loaded as long as the function lives
    return fn


class KernelModule(torch.nn.Module):
    """Has the reference's forward signature; runs the compiled kernel."""

    def __init__(self, entry: Any, signature: KernelSignature, reference: torch.nn.Module, device: str,
                 extra_args: Callable[[], Sequence[Any]] | None = None, after_call: Callable[[], None] | None = None):
        super().__init__()
        self._entry = entry
        self._signature = signature
        self._device = device
        self._torch_device = torch.device(device)
        # Values appended after the signature's arguments on every call (CUDA: the current
        # stream), and a check run right after the call (CUDA: the launch status).
        self._extra_args = extra_args
        self._after_call = after_call
        # NaN-filled outputs for correctness; the profiler turns this off so the timed call
        # allocates the way the reference does (torch.empty).
        self.poison_outputs = True
        # A plain attribute, not a submodule: the reference owns the parameters.
        self.__dict__["_reference"] = reference
        self._output_specs = [(getattr(torch, a.dtype or "float32"), list(a.shape or [])) for a in signature.by_role("output")]

    def forward(self, *args: Any) -> Any:
        sig = self._signature
        call = dict(zip(sig.forward_args, args, strict=False))
        tensors = dict(self._reference.named_parameters())
        tensors.update(self._reference.named_buffers())
        keep: list[torch.Tensor] = []  # contiguous copies must outlive the call
        shapes: dict[str, tuple[int, ...]] = {}
        outputs: list[torch.Tensor] = []
        guards: list[tuple[str, torch.Tensor]] = []
        values: list[Any] = []
        for arg in sig.args:
            if arg.role in ("input", "parameter"):
                t = call[arg.source] if arg.role == "input" else tensors[arg.source]
                t = t.detach().contiguous()
                if t.device != self._torch_device:  # a host pointer on a device (or back) is never valid
                    raise RuntimeError(f"{arg.name} is on {t.device}, the kernel runs on {self._device}")
                keep.append(t)
                shapes[arg.name] = tuple(t.shape)
                values.append(t.data_ptr())
            elif arg.role == "output":
                dtype, shape = self._output_specs[len(outputs)]
                if self.poison_outputs:
                    t, guard = _guarded(shape, dtype, self._device)
                    guards.append((arg.name, guard))
                else:
                    t = torch.empty(shape, dtype=dtype, device=self._device)
                outputs.append(t)
                shapes[arg.name] = tuple(t.shape)
                values.append(t.data_ptr())
            elif arg.role == "scalar":
                value = call[arg.source] if arg.source in call else sig.init_args[arg.source]
                if arg.index is not None:
                    value = value[arg.index]
                values.append(float(value) if arg.ctype == "double" else int(value))
            else:  # size
                values.append(int(shapes[arg.source][arg.index]))
        extra = tuple(self._extra_args()) if self._extra_args is not None else ()
        self._entry(*values, *extra)
        if self._after_call is not None:
            self._after_call()
        for name, guard in guards:
            if not still_poisoned(guard):
                raise RuntimeError(f"the kernel wrote past the end of its output {name} ({list(shapes[name])}): "
                                   "take every size from the arguments, not from the sizes shown")
        # On a device the launch is asynchronous: the contiguous copies go back to torch's
        # caching allocator, which reuses their memory only for later work on the same
        # stream (the one the kernel was launched on), so no later write races the kernel.
        del keep
        return outputs[0] if len(outputs) == 1 else tuple(outputs)
