"""The runtime complement of the static anti-hack gate: which torch operators a candidate's
forward really ran, recorded below autograd with a TorchDispatchMode.

The static analysis cannot type everything (C++ `a + b` on two `torch::Tensor`s inside a
load_inline extension, Python values whose kind it could not infer); every ATen operator
still passes through the dispatcher, where this records it. Allocation, views, fills and
metadata are what a kernel wrapper needs; any other built-in operator is torch compute.
Operators of the candidate's own namespace (a `TORCH_LIBRARY` extension) are its kernel.

Use it inside the sandbox, around one call of the candidate (not while timing: recording
costs a Python call per operator):

    output, findings = run_recorded(candidate, *inputs)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from npu_pool.antihack import Finding

# Operators (schema names, overload dropped) that allocate, view, fill or read metadata.
ALLOWED_OPS = {
    f"aten::{name}" for name in (
        "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
        "new_zeros", "new_ones", "new_full", "zeros", "zeros_like", "ones", "ones_like", "full",
        "full_like", "zero_", "fill_", "arange", "scalar_tensor", "lift_fresh", "lift_fresh_copy",
        "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "as_strided_", "t", "t_",
        "transpose", "transpose_", "permute", "expand", "squeeze", "squeeze_", "unsqueeze", "unsqueeze_",
        "slice", "select", "split", "split_with_sizes", "unbind", "chunk", "narrow", "alias", "detach",
        "detach_", "view_as_real", "view_as_complex", "unfold", "movedim", "resize_", "sym_size",
        "sym_stride", "sym_numel", "sym_storage_offset", "_local_scalar_dense", "is_contiguous",
        "_has_compatible_shallow_copy_type", "is_same_size", "size", "stride", "numel", "dim",
    )
}
# Data movement: legitimate for layout or device transfers, but torch doing the copying.
WARNED_OPS = {"aten::clone", "aten::copy_", "aten::_to_copy", "aten::_copy_from", "aten::_copy_from_and_resize"}
# Namespaces of torch's own operators; any other namespace is the candidate's extension.
BUILTIN_NAMESPACES = {
    "aten", "prims", "prim", "quantized", "_quantized", "quantized_decomposed", "mkldnn", "mkl",
    "onednn", "npu", "cuda", "c10d", "_c10d_functional", "_c10d_functional_autograd", "_dtensor",
    "torchvision", "inductor", "_inductor", "rngprims", "profiler", "higher_order", "debugprims",
}


def _op_name(func: Any) -> str:
    schema = getattr(func, "_schema", None)
    if schema is not None:
        return schema.name  # e.g. "aten::relu", overload dropped
    return str(func)


@contextmanager
def record_torch_ops() -> Iterator[Counter[str]]:
    """Count every operator dispatched while the block runs (by schema name)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    ops: Counter[str] = Counter()

    class _Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            ops[_op_name(func)] += 1
            return func(*args, **(kwargs or {}))

    with _Recorder():
        yield ops


def judge_ops(ops: Counter[str]) -> list[Finding]:
    """Reject built-in compute operators, warn on copies; one finding per operator name."""
    findings = []
    for name, count in sorted(ops.items()):
        namespace = name.split("::", 1)[0] if "::" in name else "aten"
        if name in ALLOWED_OPS or namespace not in BUILTIN_NAMESPACES:
            continue
        times = f" ({count} calls)" if count > 1 else ""
        if name in WARNED_OPS:
            findings.append(Finding(rule="runtime_copy", severity="warn",
                                    message=f"forward ran {name}{times}: torch copied data; let the kernel write it"))
        elif name == "aten::set_":
            findings.append(Finding(rule="alias", severity="reject",
                                    message="forward ran aten::set_ (one tensor aliasing another); write outputs with the kernel"))
        elif name == "aten::record_stream":
            findings.append(Finding(rule="stream", severity="reject",
                                    message="forward ran aten::record_stream: streams are not allowed"))
        else:
            findings.append(Finding(rule="runtime_torch_compute", severity="reject",
                                    message=f"forward ran the torch operator {name}{times}; compute it in your kernel"))
    return findings


def run_recorded(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, list[Finding]]:
    """Call `fn` once while recording its operators: (its result, the findings)."""
    with record_torch_ops() as ops:
        result = fn(*args, **kwargs)
    return result, judge_ops(ops)
