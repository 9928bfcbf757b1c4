"""Fit a KernelBench task to a memory and time budget by shrinking its size constants.

Public KernelBench sizes target 80 GB GPUs. A module-level integer constant is a *size*
when changing it changes the shape of an input tensor or a parameter; reduction axes and
hyperparameters (`dim = 1` passed to the constructor, `num_groups`) change neither and are
never touched. Everything is probed on the meta device, so even a 6 GB input costs nothing.
Constants are rewritten in the source text, so derived constants follow.
"""

from __future__ import annotations

import ast
import itertools
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

_module_counter = itertools.count()


class TaskProbeError(Exception):
    """The task file could not be executed or probed."""


def int_constants(source: str) -> dict[str, int]:
    """Top-level `NAME = <int literal>` (or `NAME: int = ...`) assignments, bools excluded."""
    found: dict[str, int] = {}
    for _node, name, value in _constant_nodes(source):
        found[name] = value
    return found


def _constant_nodes(source: str) -> list[tuple[ast.expr, str, int]]:
    out = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        else:
            continue
        if isinstance(value, ast.Constant) and type(value.value) is int:
            out.append((value, target, value.value))
    return out


def with_constants(source: str, values: dict[str, int]) -> str:
    """The source with the named top-level integer constants set to new values."""
    lines = source.splitlines(keepends=True)
    edits = [(n, values[name]) for n, name, _ in _constant_nodes(source) if name in values]
    for node, value in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        line = lines[node.lineno - 1]
        lines[node.lineno - 1] = line[: node.col_offset] + str(value) + line[node.end_col_offset:]
    return "".join(lines)


def exec_task(source: str, filename: str = "<task>") -> types.ModuleType:
    """Execute a task source as a fresh module (registered so pickling and dataclasses work)."""
    module = types.ModuleType(f"evokernel_task_{next(_module_counter)}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except Exception as exc:
        raise TaskProbeError(f"executing the task failed: {type(exc).__name__}: {exc}") from exc
    for needed in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, needed):
            raise TaskProbeError(f"the task defines no {needed}")
    return module


@dataclass
class Probe:
    """Shapes and costs of one task at one set of sizes, seen on the meta device."""

    inputs: list[Any]
    init_inputs: list[Any]
    params: dict[str, tuple[list[int], torch.dtype]]
    outputs: list[torch.Tensor] | None
    flops: int
    forward_error: str | None = None
    tensor_bytes: int = field(default=0)

    def shape_key(self) -> tuple:
        shapes = tuple(tuple(t.shape) if isinstance(t, torch.Tensor) else None for t in self.inputs)
        return shapes, tuple(sorted((k, tuple(v[0])) for k, v in self.params.items()))


def as_output_list(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def probe(module: types.ModuleType) -> Probe:
    """Build inputs, the model and (where meta kernels exist) the outputs, on meta."""
    torch.manual_seed(0)
    try:
        with torch.device("meta"):
            inputs = list(module.get_inputs())
            init_inputs = list(module.get_init_inputs())
            model = module.Model(*init_inputs)
    except Exception as exc:
        raise TaskProbeError(f"get_inputs/get_init_inputs/Model failed on the meta device: {type(exc).__name__}: {exc}") from exc
    params = {n: (list(p.shape), p.dtype) for n, p in itertools.chain(model.named_parameters(), model.named_buffers())}
    outputs, flops, error = None, 0, None
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            outputs = as_output_list(model(*inputs))
        flops = int(counter.get_total_flops())
    except Exception as exc:  # ops without meta kernels, data-dependent shapes
        error = f"{type(exc).__name__}: {exc}"
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    total = sum(_nbytes(t) for t in tensors)
    total += sum(int(torch.Size(s).numel()) * torch.empty((), dtype=d).element_size() for s, d in params.values())
    total += sum(_nbytes(t) for t in outputs) if outputs is not None else max((_nbytes(t) for t in tensors), default=0)
    return Probe(inputs, init_inputs, params, outputs, flops, error, total)


def size_constants(source: str, filename: str = "<task>") -> dict[str, int]:
    """The constants whose value feeds an input or parameter shape, with their values."""
    base = probe(exec_task(source, filename)).shape_key()
    sizes = {}
    for name, value in int_constants(source).items():
        if value <= 0:
            continue
        try:
            changed = probe(exec_task(with_constants(source, {name: value * 2}), filename)).shape_key()
        except TaskProbeError:
            continue  # doubling it broke the task: not a plain size
        if changed != base:
            sizes[name] = value
    return sizes


@dataclass
class Fit:
    source: str  # the task source with the sizes used
    sizes: dict[str, int]  # every size constant, as used
    original: dict[str, int]
    probe: Probe
    shrunk: bool


def within(p: Probe, max_bytes: int, max_gflop: float) -> bool:
    return p.tensor_bytes <= max_bytes and p.flops <= max_gflop * 1e9


def fit_sizes(source: str, max_bytes: int, max_gflop: float, min_dim: int = 8, filename: str = "<task>") -> Fit:
    """Halve the largest size constant until the task fits the budget (or nothing shrinks)."""
    original = size_constants(source, filename)
    sizes = dict(original)
    current = probe(exec_task(source, filename))
    frozen: set[str] = set()
    while not within(current, max_bytes, max_gflop):
        shrinkable = [n for n, v in sizes.items() if n not in frozen and v // 2 >= min_dim]
        if not shrinkable:
            break
        name = max(shrinkable, key=lambda n: sizes[n])
        trial = dict(sizes, **{name: sizes[name] // 2})
        try:
            trial_probe = probe(exec_task(with_constants(source, trial), filename))
        except TaskProbeError:
            frozen.add(name)
            continue
        if trial_probe.outputs is None and current.outputs is not None:
            frozen.add(name)  # the smaller size broke forward (a divisibility constraint)
            continue
        sizes, current = trial, trial_probe
    return Fit(with_constants(source, sizes), sizes, original, current, sizes != original)
