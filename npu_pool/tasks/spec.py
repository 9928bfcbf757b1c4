"""Load a KernelBench task: fit its sizes, learn its shapes, derive its kernel signature."""

from __future__ import annotations

import hashlib
import inspect
import re
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict

from npu_pool.tasks.signature import KernelSignature, derive_signature
from npu_pool.tasks.sizing import Fit, TaskProbeError, exec_task, fit_sizes, probe, size_constants

_DEFINES_MODEL = re.compile(r"^class Model\b", re.MULTILINE)  # not ModelNew


class TaskLoadError(Exception):
    """The task file is missing, broken, or cannot be fitted."""


class TensorInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    shape: list[int]
    dtype: str


class ShapeProbe(BaseModel):
    """The task's shapes at one set of sizes: the kernel signature's input and parameter tensors
    by argument name, and its outputs (for the drop-in's output-shape rules)."""

    model_config = ConfigDict(extra="forbid")

    tensors: dict[str, list[int]]
    outputs: list[list[int]]


class TaskSpec(BaseModel):
    """A task as the harness uses it; `source` holds the sizes actually used."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    path: str
    original_source: str
    source: str
    source_hash: str
    sizes: dict[str, int]
    original_sizes: dict[str, int]
    sizes_mode: Literal["fit", "original"]
    forward_args: list[str]
    init_args: list[str]
    init_inputs: list[Any]
    inputs: list[TensorInfo]
    params: list[TensorInfo]
    outputs: list[TensorInfo]
    flops: int
    tensor_bytes: int
    kernel_signature: KernelSignature | None
    signature_error: str | None = None
    # The second, awkward sizes every correctness check also runs (npu_pool.tasks.tail_sizes): every
    # size constant, the source written with them, the kernel entry point at them (same ABI,
    # other shapes; None where the ABI would change) and, where there is none, why.
    second_sizes: dict[str, int] | None = None
    second_source: str | None = None
    second_signature: KernelSignature | None = None
    second_size_note: str = ""
    # Shapes at the original sizes and with each size constant doubled in turn, probed where
    # the task was loaded (its bounded child), so nothing else runs the task's code again.
    shape_probes: list[ShapeProbe] = []

    def render_kernel_signature(self) -> str:
        """The kernel-format entry point with one comment per argument (for prompts)."""
        if self.kernel_signature is None:
            raise ValueError(f"task {self.task_id} has no kernel signature: {self.signature_error}")
        return self.kernel_signature.render_c()


def _jsonable(value: Any) -> Any:
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return repr(value)


def _parameter_names(fn: Any) -> list[str]:
    params = list(inspect.signature(fn).parameters.values())
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def load_task(
    path: str | Path,
    sizes: Literal["fit", "original"] = "fit",
    max_bytes: int = 64 * 2**20,
    max_gflop: float = 2.0,
    min_dim: int = 8,
) -> TaskSpec:
    """Load a task file; with sizes="fit" shrink its size constants to the budget."""
    path = Path(path)
    try:
        original = path.read_text()
    except OSError as exc:
        raise TaskLoadError(f"cannot read task {path}: {exc}") from exc
    try:
        if sizes == "fit":
            fit = fit_sizes(original, max_bytes, max_gflop, min_dim, filename=str(path))
        else:
            found = size_constants(original, str(path))
            fit = Fit(original, found, found, probe(exec_task(original, str(path))), False)
        module = exec_task(fit.source, str(path))
    except TaskProbeError as exc:
        raise TaskLoadError(f"{path.name}: {exc}") from exc
    p = fit.probe
    outputs = p.outputs
    if outputs is None:  # no meta kernel somewhere: run the reference for real, at the fitted sizes
        if sizes == "original" and p.tensor_bytes > max_bytes:
            raise TaskLoadError(f"{path.name}: forward fails on the meta device ({p.forward_error}) "
                                "and the original sizes are too large to run here")
        outputs, p = _real_outputs(module)
    forward_args = _parameter_names(module.Model.forward)[1:]
    init_args = _parameter_names(module.Model.__init__)[1:]
    with torch.device("meta"):
        reference = module.Model(*p.init_inputs)
    signature, signature_error = None, None
    try:
        signature = derive_signature(reference, forward_args, p.inputs, outputs, init_args, p.init_inputs)
    except (ValueError, KeyError) as exc:
        signature_error = str(exc)
    names = forward_args + [f"input{i}" for i in range(len(forward_args), len(p.inputs))]
    second = _second(fit, p, signature, forward_args, init_args, str(path))
    return TaskSpec(
        task_id=path.stem,
        path=str(path.resolve()),
        original_source=original,
        source=fit.source,
        source_hash=hashlib.sha256(fit.source.encode()).hexdigest()[:16],
        sizes=fit.sizes,
        original_sizes=fit.original,
        sizes_mode=sizes,
        forward_args=forward_args,
        init_args=init_args,
        init_inputs=[_jsonable(v) for v in p.init_inputs],
        inputs=[TensorInfo(name=n, shape=list(t.shape), dtype=_dtype_name(t.dtype))
                for n, t in zip(names, p.inputs, strict=False) if isinstance(t, torch.Tensor)],
        params=[TensorInfo(name=n, shape=s, dtype=_dtype_name(d)) for n, (s, d) in p.params.items()],
        outputs=[TensorInfo(name="out" if len(outputs) == 1 else f"out{i}", shape=list(t.shape), dtype=_dtype_name(t.dtype))
                 for i, t in enumerate(outputs)],
        flops=p.flops,
        tensor_bytes=p.tensor_bytes,
        kernel_signature=signature,
        signature_error=signature_error,
        **second,
        shape_probes=_shape_probes(original, fit, signature, str(path)),
    )


def _shape_probes(original: str, fit: Fit, signature: KernelSignature | None, filename: str) -> list[ShapeProbe]:
    """ShapeProbes on the meta device at the original sizes and with each size doubled; a
    variant that breaks the task (a constraint) or has no meta kernel is left out."""
    if signature is None:
        return []
    from npu_pool.tasks.sizing import with_constants

    variants = [original] + [with_constants(fit.source, {name: 2 * value}) for name, value in fit.sizes.items()]
    found: list[ShapeProbe] = []
    for source in variants:
        try:
            p = probe(exec_task(source, filename))
        except TaskProbeError:
            continue
        if p.outputs is None:
            continue
        by_forward = dict(zip(signature.forward_args, p.inputs, strict=False))
        tensors = {a.name: list(by_forward[a.source].shape) for a in signature.args
                   if a.role == "input" and isinstance(by_forward.get(a.source), torch.Tensor)}
        tensors |= {a.name: list(p.params[a.source][0]) for a in signature.args if a.role == "parameter" and a.source in p.params}
        found.append(ShapeProbe(tensors=tensors, outputs=[list(t.shape) for t in p.outputs]))
    return found


def _second(fit: Fit, first: Any, signature: KernelSignature | None, forward_args: list[str], init_args: list[str],
            filename: str) -> dict[str, Any]:
    """TaskSpec's second-size fields (npu_pool.tasks.tail_sizes)."""
    from npu_pool.tasks.tail_sizes import second_sizes

    second = second_sizes(fit.source, fit.sizes, first, filename)
    if second.sizes is None:
        return {"second_size_note": second.note}
    fields: dict[str, Any] = {"second_sizes": second.sizes, "second_source": second.source}
    if signature is None:
        return fields
    p = second.probe
    outputs = p.outputs
    if outputs is None:  # no meta kernel: run the reference at the second sizes (they are small)
        outputs, p = _real_outputs(exec_task(second.source, filename))
    with torch.device("meta"):
        reference = exec_task(second.source, filename).Model(*p.init_inputs)
    try:
        found = derive_signature(reference, forward_args, p.inputs, outputs, init_args, p.init_inputs)
    except (ValueError, KeyError):
        found = None
    if found is not None and found.declaration() == signature.declaration():
        fields["second_signature"] = found
    else:  # the kernel format cannot take these sizes through the same entry point
        fields["second_size_note"] = "the kernel entry point changes with the sizes: kernels checked at the task size only"
    return fields


def _real_outputs(module: Any) -> tuple[list[torch.Tensor], Any]:
    from torch.utils.flop_counter import FlopCounterMode

    from npu_pool.tasks.sizing import Probe, as_output_list, tensor_bytes

    torch.manual_seed(0)
    inputs = list(module.get_inputs())
    init_inputs = list(module.get_init_inputs())
    model = module.Model(*init_inputs)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        outputs = as_output_list(model(*inputs))
    params = {n: (list(t.shape), t.dtype) for n, t in list(model.named_parameters()) + list(model.named_buffers())}
    # the same byte and FLOP counts the meta probe would have given, so reports and budgets agree
    return outputs, Probe(inputs, init_inputs, params, outputs, int(counter.get_total_flops()),
                          tensor_bytes=tensor_bytes(inputs, params, outputs))


def run_reference(spec: TaskSpec, device: str = "cpu") -> float:
    """Run the task's reference once at the sizes used (trusted suite code, in-process);
    return the seconds it took."""
    import time

    module = exec_task(spec.source, spec.path)
    torch.manual_seed(0)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    model = module.Model(*module.get_init_inputs()).to(device).eval()
    start = time.perf_counter()
    with torch.no_grad():
        model(*inputs)
    return time.perf_counter() - start


def discover_tasks(folders: list[str | Path]) -> list[Path]:
    """Every task file (`*.py` defining `class Model`) under the folders, sorted."""
    found: list[Path] = []
    for folder in folders:
        folder = Path(folder)
        files = [folder] if folder.is_file() else sorted(folder.rglob("*.py"))
        found += [f for f in files if not f.name.startswith("_") and _DEFINES_MODEL.search(f.read_text(errors="replace"))]
    return found
